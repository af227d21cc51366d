"""The live progress line: redrawn in place on a terminal, a few plain lines elsewhere,
off with --quiet, and never a change to the epoch tables or progress.txt."""
import io
import os
import pty
import re
import subprocess
import sys

from conftest import ROOT, run_cli
from logger import read_progress
from run.progress import ProgressLine

ARGS = ["--env", "Pendulum-v1", "--epochs", 3, "--steps_per_epoch", 400, "--start_steps", 300,
        "--update_after", 100, "--batch_size", 32, "--num_test_episodes", 1, "--hid", 32,
        "--replay_size", 10000]


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class TTY(io.StringIO):
    def isatty(self):
        return True


def test_terminal_line_is_redrawn_in_place():
    clock = Clock()
    out = TTY()
    line = ProgressLine(10_000, stream=out, clock=clock)
    line.update(50, "random warm-up", None, False)     # not due yet: nothing drawn
    assert out.getvalue() == ""
    clock.now += 0.6
    line.update(3000, "random warm-up", None, False)
    clock.now += 0.6
    line.update(3100, "learning", -97.5, True)
    text = out.getvalue()
    assert text.count("\r\x1b[K") == 2 and "\n" not in text
    first, second = text.split("\r\x1b[K")[1:]
    assert "env step 3,000/10,000 | random warm-up | 5,000 steps/s" in first
    assert "no episode ended yet" in first and "time left: once updates start" in first
    assert "learning" in second and "last episode -97.5" in second and "left" in second
    line.clear()
    assert out.getvalue().endswith("\r\x1b[K")


def test_log_file_gets_a_line_every_30_seconds():
    clock = Clock()
    out = io.StringIO()  # not a terminal: a notebook, a pipe, a log file
    line = ProgressLine(100_000, stream=out, clock=clock)
    for t in range(1, 20_001):               # 20,000 steps over 100 s
        clock.now += 0.005
        line.update(t, "learning", -50.0 if t > 5000 else None, t > 10_000)
    lines = out.getvalue().splitlines()
    assert 3 <= len(lines) <= 5, lines       # first after 3 s, then every 30 s
    assert all(ln.startswith("env step ") for ln in lines)
    silent = io.StringIO()
    quiet = ProgressLine(100, quiet=True, stream=silent, clock=clock)
    clock.now += 60
    quiet.update(100, "learning", 0.0, True)
    assert silent.getvalue() == ""


def simulated_run(stream, total=150_000, update_after=1000, update_every=50,
                  step_s=0.00015, update_s=0.010):
    """A run on a fake clock: env steps cost ``step_s``, and from ``update_after`` on every
    ``update_every`` steps come ``update_every`` updates of ``update_s`` each (td3()'s loop,
    BipedalWalker-v3's costs at one thread). Returns [(env step, shown seconds left, true
    seconds left)] for each line that gave a time left."""
    clock = Clock()
    line = ProgressLine(total, stream=stream, clock=clock)
    true_left = lambda t: (total - t) * step_s + (total - max(t, update_after)) * update_s
    shown = []
    for t in range(1, 30_001):
        clock.now += step_s
        if t >= update_after and t % update_every == 0:
            clock.now += update_every * update_s
        before = stream.getvalue()
        line.update(t, "learning", None, updating=t >= update_after)
        new = stream.getvalue()[len(before):]
        m = re.search(r"~(?:(\d+)h(\d+)m|(\d+)m(\d+)s) left", new)
        if m:
            h, mi, m2, s = (int(g) if g else 0 for g in m.groups())
            shown.append((t, h * 3600 + mi * 60 + m2 * 60 + s, true_left(t)))
    return shown


def test_time_left_counts_the_updates_still_to_come():
    """The first time left a user sees, and every later one, is within 10% of the truth:
    the rate is never taken from the fast steps before updates start, nor from a part of an
    update burst (the old estimate showed 22 min, then 2 h, then 3 h 35 min)."""
    for stream in (TTY(), io.StringIO()):
        shown = simulated_run(stream)
        assert len(shown) >= 5, stream.getvalue()[-500:]
        for t, left, truth in shown:
            assert abs(left - truth) <= 0.10 * truth, (t, left, truth)


def table_lines(out):
    """The epoch tables, but their title (it carries steps/s) and their Time row."""
    return [ln for ln in out.splitlines()
            if (ln.startswith("|") or ln.startswith("---")) and not re.match(r"\|\s+Time \|", ln)]


def test_short_run_without_a_terminal_keeps_its_output_short(tmp_path):
    code, out, err = run_cli(*ARGS, "--data_dir", tmp_path, "--exp_name", "a")
    assert code == 0, err
    code, quiet, err = run_cli(*ARGS, "--data_dir", tmp_path, "--exp_name", "b", "--quiet")
    assert code == 0, err
    progress = [ln for ln in out.splitlines() if ln.startswith("env step ")]
    # A line after 3 s, then one per 30 s: a run of a few seconds prints one or two. The bound
    # follows the run's own length (its last Time), so a slow or busy machine does not fail it.
    cols, table = read_progress(tmp_path / "a" / "a_s0" / "progress.txt")
    seconds = float(table[-1][cols.index("Time")])
    assert len(progress) <= 2 + int(seconds // 30), (seconds, progress)
    assert "\r" not in out and not any(ln.startswith("env step ") for ln in quiet.splitlines())
    assert table_lines(out) == table_lines(quiet) and len(re.findall(r"\|\s+Epoch \|", out)) == 3
    rows = lambda name: (tmp_path / name / f"{name}_s0" / "progress.txt").read_text()
    strip_time = lambda text: [ln.rsplit("\t", 1)[0] for ln in text.splitlines()]
    assert strip_time(rows("a")) == strip_time(rows("b"))


def test_progress_through_a_pseudo_terminal(tmp_path):
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "td3.py"),
                          *map(str, [*ARGS, "--epochs", 4, "--data_dir", tmp_path])], cwd=ROOT, stdout=slave,
                         stderr=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert p.wait(timeout=300) == 0, p.stderr.read()
    os.close(master)
    text = b"".join(chunks).decode()
    redraws = re.findall(r"\r\x1b\[Kenv step [\d,]+/1,600 \| (?:learning|random warm-up) \| "
                         r"[\d,]+ steps/s \| [^\r\n]*", text)
    assert redraws, text[-2000:]
    assert len(re.findall(r"\|\s+Epoch \|", text)) == 4  # every table still printed
