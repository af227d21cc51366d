"""Runs survive faults: SIGKILL at random moments, Ctrl-C, corrupt or foreign files."""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import torch

from conftest import DEVICES, ROOT, rows_without_time, run_cli, snapshot
from logger import read_progress

ARGS = ["--env", "Pendulum-v1", "--epochs", 6, "--steps_per_epoch", 150, "--start_steps", 100,
        "--update_after", 100, "--batch_size", 32, "--num_test_episodes", 1, "--hid", 32,
        "--replay_size", 10000]


@pytest.fixture(scope="module", params=DEVICES)
def reference(tmp_path_factory, request):
    """An uninterrupted run on each device torch sees; the tests using it run there too."""
    d = tmp_path_factory.mktemp("ref")
    code, _, err = run_cli(*ARGS, "--device", request.param, "--data_dir", d, "--exp_name", "r")
    assert code == 0, err
    return SimpleNamespace(run=d / "r" / "r_s0", device=request.param)


def popen(*args):
    return subprocess.Popen([sys.executable, os.path.join(ROOT, "td3.py"), *map(str, args)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})


def rows_written(run):
    try:
        with open(os.path.join(run, "progress.txt")) as f:
            return max(0, sum(1 for line in f if line.endswith("\n")) - 1)
    except FileNotFoundError:
        return 0


def test_sigkill_at_random_moments_then_resume(tmp_path, reference):
    # The first kill lands while the run starts (before its first checkpoint); each later
    # one a random fraction of an epoch after the resumed run has written a new row, so the
    # kills fall mid-run however busy the machine is. Epoch time: the reference's Time column;
    # where that overestimates this run's epochs (the reference ran on a busier machine), the
    # kill lands at the latest when the next row appears, so the run cannot finish unkilled.
    run = tmp_path / "k" / "k_s0"
    header, rows = read_progress(os.path.join(reference.run, "progress.txt"))
    epoch_s = float(rows[-1][header.index("Time")]) / len(rows)
    rnd = random.Random(1234)
    kills = 0
    for attempt in range(5):
        started = (run / "ckpt.pt").exists()
        target = min(rows_written(run) + 1, 5) if attempt else 0
        p = popen("--resume", run) if started else popen(*ARGS, "--device", reference.device,
                                                         "--data_dir", tmp_path, "--exp_name", "k")
        deadline = time.time() + 120
        while p.poll() is None and rows_written(run) < target and time.time() < deadline:
            time.sleep(0.02)
        until = time.time() + rnd.uniform(0.05, 0.9) * epoch_s
        while p.poll() is None and time.time() < until and rows_written(run) <= target:
            time.sleep(0.005)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            kills += 1
        p.communicate()
        if not (run / "ckpt.pt").exists() and run.exists():
            # killed before its first checkpoint: nothing to resume, so start it again
            shutil.rmtree(run)
    assert kills >= 3, "the run finished before it could be killed a few times"
    if (run / "ckpt.pt").exists():
        code, _, err = run_cli("--resume", run)
    else:
        code, _, err = run_cli(*ARGS, "--device", reference.device, "--data_dir", tmp_path,
                               "--exp_name", "k")
    assert code == 0, err
    assert [r[0] for r in rows_without_time(run)] == [str(e) for e in range(1, 7)]
    assert rows_without_time(run) == rows_without_time(reference.run)  # nothing lost or changed
    torch.load(run / "ckpt.pt", weights_only=True)
    assert not [n for n in os.listdir(run) if ".tmp" in n]


# A run whose checkpoint takes a while to write (big networks, no updates: the epochs are
# quick and almost all of the time is torch.save and fsync), so kills land inside writes.
WRITER = ["--env", "Pendulum-v1", "--epochs", 8, "--steps_per_epoch", 50, "--start_steps", 50,
          "--update_after", 10_000, "--num_test_episodes", 1, "--max_ep_len", 25, "--hid", 512,
          "--replay_size", 1000]


def test_sigkill_while_a_checkpoint_is_written_always_leaves_a_complete_one(tmp_path):
    """Kill the process (SIGKILL) while it writes ckpt.pt, again and again, at different
    moments of the write; after every kill the run directory resumes from a complete
    checkpoint, and the finished run equals one that was never killed."""
    code, _, err = run_cli(*WRITER, "--data_dir", tmp_path, "--exp_name", "ref")
    assert code == 0, err
    run = tmp_path / "k" / "k_s0"
    rnd = random.Random(7)
    in_write, epochs_seen = 0, []
    for attempt in range(5):
        p = popen("--resume", run) if (run / "ckpt.pt").exists() else \
            popen(*WRITER, "--data_dir", tmp_path, "--exp_name", "k")
        seen = ckpt_mtime(run)
        deadline = time.time() + 120
        # Wait for a write that starts after this process has written a checkpoint of its own.
        while p.poll() is None and time.time() < deadline and \
                not (ckpt_mtime(run) != seen and temp_files(run)):
            time.sleep(0.0005)
        if p.poll() is not None:
            break  # the run finished first
        time.sleep(rnd.uniform(0, 0.01))  # a different moment of the write each time
        p.send_signal(signal.SIGKILL)
        p.communicate()
        in_write += bool(temp_files(run))  # the kill left a write unfinished
        ckpt = torch.load(run / "ckpt.pt", weights_only=True)  # complete: it loads
        epochs_seen.append(ckpt["epoch"])
    assert in_write >= 3, f"only {in_write} kills landed inside a checkpoint write"
    assert epochs_seen == sorted(epochs_seen) and epochs_seen[-1] < 8
    code, out, err = run_cli("--resume", run)
    assert code == 0, err
    assert not temp_files(run)
    assert rows_without_time(run) == rows_without_time(tmp_path / "ref" / "ref_s0")


def ckpt_mtime(run):
    try:
        return os.stat(run / "ckpt.pt").st_mtime_ns
    except FileNotFoundError:
        return None


def temp_files(run):
    try:
        return [n for n in os.listdir(run) if n.startswith("ckpt.pt.tmp")]  # this file's writes only
    except FileNotFoundError:
        return []


def test_ctrl_c_saves_and_says_how_to_resume(tmp_path, reference):
    p = popen(*ARGS, "--device", reference.device, "--data_dir", tmp_path, "--exp_name", "c")
    run = tmp_path / "c" / "c_s0"
    deadline = time.time() + 120
    while not (run / "progress.txt").exists() and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1].endswith(f"python td3.py --resume {run}")
    assert "Traceback" not in err
    code, _, err = run_cli("--resume", run)
    assert code == 0, err
    assert rows_without_time(run) == rows_without_time(reference.run)  # mid-epoch resume is exact


def corrupt_cases():
    def trunc_ckpt(run):
        data = (run / "ckpt.pt").read_bytes()
        (run / "ckpt.pt").write_bytes(data[: len(data) // 2])

    def empty_progress(run):
        (run / "progress.txt").write_text("")

    def short_progress(run):
        lines = (run / "progress.txt").read_text().splitlines(keepends=True)
        (run / "progress.txt").write_text("".join(lines[:3]))

    def half_row(run):
        text = (run / "progress.txt").read_text()
        (run / "progress.txt").write_text(text[: len(text) - 40])

    def bad_config(run):
        (run / "config.json").write_text('{"env_id": "Pendulum-v1", ')

    def other_env(run):
        cfg = json.loads((run / "config.json").read_text())
        cfg["env_id"] = "MountainCarContinuous-v0"
        (run / "config.json").write_text(json.dumps(cfg))

    def other_size(run):
        cfg = json.loads((run / "config.json").read_text())
        cfg["ac_kwargs"] = {"hidden_sizes": [64, 64]}
        (run / "config.json").write_text(json.dumps(cfg))

    def evil_ckpt(run):
        # Its payload, were it ever run, writes next to the run (in tmp_path), not in the repo.
        pwned = str(run.parent / "PWNED")
        class Evil:
            def __reduce__(self):
                return (exec, (f"open({pwned!r}, 'w').write('x')",))
        torch.save({"ac": Evil()}, run / "ckpt.pt")

    return [(trunc_ckpt, "truncated"), (empty_progress, "empty"), (short_progress, "rows"),
            (half_row, "different number of columns"), (bad_config, "does not parse"),
            (other_env, "env_id"), (other_size, "networks"), (evil_ckpt, "refused")]


@pytest.mark.parametrize("damage, words", corrupt_cases(), ids=lambda c: getattr(c, "__name__", ""))
def test_corrupt_or_foreign_files_get_one_line_and_change_nothing(tmp_path, reference, damage, words):
    run = tmp_path / "run"
    shutil.copytree(reference.run, run)
    damage(run)
    before = snapshot(run)
    code, out, err = run_cli("--resume", run, "--epochs", 8)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert words in lines[0]
    assert snapshot(run) == before
    assert not (tmp_path / "PWNED").exists() and not os.path.exists(os.path.join(ROOT, "PWNED"))


def test_replay_buffer_size_is_stated_and_checked(tmp_path):
    code, out, err = run_cli(*ARGS, "--epochs", 1, "--data_dir", tmp_path, "--exp_name", "m")
    assert code == 0 and "replay buffer: 10,000 x 9 floats = 0 MB" in out
    # Larger than the machine: numpy refuses at once, one line, nothing written.
    code, out, err = run_cli(*ARGS, "--replay_size", 10**12, "--data_dir", tmp_path, "--exp_name", "m2")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Unable to allocate" in err, err
    assert not (tmp_path / "m2").exists()
    # Reserved by numpy but larger than the memory available: refused before the run starts.
    avail = next(int(ln.split()[1]) * 1024 for ln in open("/proc/meminfo") if ln.startswith("MemAvailable"))
    code, out, err = run_cli(*ARGS, "--replay_size", int(avail / 36 * 0.9), "--data_dir", tmp_path,
                             "--exp_name", "m3")
    assert code == 2 and re.match(r"error: the buffer needs [\d.]+ GB but only [\d.]+ GB is "
                                  r"available; make it smaller$", err.strip()), err
    assert not (tmp_path / "m3").exists()


# BipedalWalker-v3, small and quick: a Box2D world remembers its past episodes, so its
# resume is exact only because the checkpoint lets the train and test envs replay them.
WALKER = ["--env", "BipedalWalker-v3", "--epochs", 3, "--steps_per_epoch", 600,
          "--start_steps", 300, "--update_after", 300, "--batch_size", 32, "--hid", 32,
          "--num_test_episodes", 3, "--max_ep_len", 300, "--replay_size", 10000, "--threads", 1]


def test_a_walker_killed_mid_epoch_resumes_to_the_uninterrupted_rows(tmp_path):
    code, _, err = run_cli(*WALKER, "--data_dir", tmp_path, "--exp_name", "ref")
    assert code == 0, err
    run = tmp_path / "k" / "k_s0"
    p = popen(*WALKER, "--data_dir", tmp_path, "--exp_name", "k")
    while p.poll() is None and not (run / "ckpt.pt").exists():  # then a kill in epoch 2,
        time.sleep(0.01)                                         # after the first checkpoint
    time.sleep(0.3)
    assert p.poll() is None, "the run finished before it could be killed"
    p.send_signal(signal.SIGKILL)
    p.communicate()
    assert rows_written(run) < 3
    code, out, err = run_cli("--resume", run)
    assert code == 0, err
    assert "part from" not in out  # no note that the numbers part from the uninterrupted run
    assert rows_without_time(run) == rows_without_time(tmp_path / "ref" / "ref_s0")


# ------------------------------------------------------------------------------------------
# One process per run directory; a full disk is one line
# ------------------------------------------------------------------------------------------
def test_a_second_process_in_a_run_directory_is_refused_and_changes_nothing(tmp_path):
    """Two terminals into one run directory: the second gets one line naming the process that
    holds it, exit 2, and the first's files stay its own; killed, the first can be resumed."""
    long = [*ARGS[:3], 500, *ARGS[4:], "--data_dir", tmp_path, "--exp_name", "x"]
    first = popen(*long, "--gamma", 0.9)
    run = tmp_path / "x" / "x_s0"
    deadline = time.time() + 120
    while rows_written(run) < 1 and first.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert first.poll() is None, first.communicate()
    config = (run / "config.json").read_text()
    second = subprocess.run([sys.executable, "td3.py", *map(str, long[:3]), "2", *map(str, long[4:]),
                             "--gamma", "0.95"], cwd=ROOT, capture_output=True, text=True)
    assert second.returncode == 2 and second.stdout == ""
    said = second.stderr.strip()
    assert len(said.splitlines()) == 1 and said.startswith(
        f"error: {run} is in use by process {first.pid} ({os.path.join(ROOT, 'td3.py')} --env ")
    assert said.endswith("): wait for it to end, or pick another --exp_name, --seed or --data_dir")
    assert (run / "config.json").read_text() == config
    first.send_signal(signal.SIGKILL)
    first.wait()
    code, _, err = run_cli("--resume", run, "--epochs", 2)  # the OS let go of the lock
    assert code == 0, err


def test_resume_and_a_second_resume_at_once(tmp_path):
    code, _, err = run_cli(*ARGS[:3], 1, *ARGS[4:], "--data_dir", tmp_path, "--exp_name", "x")
    assert code == 0, err
    run = tmp_path / "x" / "x_s0"
    first = popen("--resume", run, "--epochs", 400)
    deadline = time.time() + 120
    while rows_written(run) < 2 and first.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    code, out, err = run_cli("--resume", run, "--epochs", 3)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert code == 2 and f"is in use by process {first.pid}" in err and len(err.splitlines()) == 1


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB tmpfs: room for one checkpoint and its temp copy, not for two of them."""
    d = tmp_path / "disk"
    d.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(d)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"needs root to mount a small tmpfs: {p.stderr.strip()}")
    yield d
    subprocess.run(["umount", "-l", str(d)], capture_output=True)


def test_a_full_disk_is_one_line_and_the_run_resumes_to_the_same_rows(tmp_path, small_disk):
    # the paper's networks, so that a checkpoint fills most of the small disk; small batches
    args = ["--env", "Pendulum-v1", "--epochs", 3, "--steps_per_epoch", 400, "--start_steps", 300,
            "--update_after", 300, "--num_test_episodes", 1, "--replay_size", 10000,
            "--batch_size", 16]
    code, _, err = run_cli(*args, "--data_dir", tmp_path / "ref", "--exp_name", "x")
    assert code == 0, err
    code, out, err = run_cli(*args, "--data_dir", small_disk, "--exp_name", "x")
    run = small_disk / "x" / "x_s0"
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert re.match(rf"error: no space left on the disk for {re.escape(str(run))}/(ckpt|best)\.pt: "
                    r"it needs about \d+\.\d MB, \d+\.\d MB are free; the checkpoint of epoch \d is "
                    rf"intact: free space, then python td3.py --resume {re.escape(str(run))}$", err.strip()), err
    assert not [n for n in os.listdir(run) if ".tmp" in n]  # the temp file is gone
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    code, _, err = run_cli("--resume", run)
    assert code == 0, err
    assert rows_without_time(run) == rows_without_time(tmp_path / "ref" / "x" / "x_s0")


def test_a_sweep_skips_a_run_another_process_holds_and_says_so(tmp_path):
    import sweep
    run = tmp_path / "td3-Pendulum-v1" / "td3-Pendulum-v1_s0"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from run import directory; "
                               f"f = directory.hold_run_dir({str(run)!r}); f.claim(); print('held', flush=True); time.sleep(60)"],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        said = sweep.run_one(str(run), ["--env", "Pendulum-v1"], 1, None, ROOT, None)
        assert said.startswith(f"skipped: in use by process {holder.pid} (")
        assert not (run / "config.json").exists()  # nothing was started there
    finally:
        holder.kill()
        holder.wait()
