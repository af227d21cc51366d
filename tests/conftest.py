"""Shared helpers: the repo root on sys.path, a tiny env, small-run settings."""
import contextlib
import importlib
import io
import os
import signal
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
torch.set_num_threads(1)  # small nets: threads cost more than they give, and runs stay reproducible
# The same for every td3.py the tests run, here or in a process of its own (machine.default_threads
# honours it): the suite's workers fill the cores, and two torch threads each would overbook them.
os.environ["OMP_NUM_THREADS"] = "1"


class CountEnv(gym.Env):
    """obs = [t / 10]; reward 1 per step; terminates (a real end) at step ``end``."""

    def __init__(self, end=7):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.end, self.t = end, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, a):
        self.t += 1
        return np.array([self.t / 10], np.float32), 1.0, self.t >= self.end, False, {}


def pytest_collection_modifyitems(items):
    """Grouped tests first (pytest.ini): the longest piece of work starts at once, and the
    other worker takes the single tests meanwhile."""
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)


# Every device torch sees: the CPU always, cuda where torch sees a GPU, else a visible skip.
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA GPU visible to torch here"))]


# A Pendulum run small enough for a test: a few seconds.
SMALL = dict(steps_per_epoch=200, epochs=2, start_steps=100, update_after=100, update_every=50,
             batch_size=32, num_test_episodes=1, ac_kwargs=dict(hidden_sizes=(32, 32)),
             replay_size=10_000)


def run_cli(*args, script="td3.py"):
    """Run a script of the project as ``python SCRIPT ARGS`` does (its ``main`` through
    ``errors.run_main``: the same exit code, stdout and stderr) but in this process, which saves
    a new process's 3 s of importing torch for each of the suite's many short commands.
    Warnings go to stderr as a new process shows them (once each; not the ones Python hides
    by default). What this process's state would keep is put back: torch's thread count and
    random state (td3.py sets both), the SIGINT handler (run_main sets it), the working
    directory, matplotlib's figures. Tests that need a process of its own (signals, kills, a
    terminal, the imports a script makes) start one. Returns (exit code, stdout, stderr)."""
    import warnings
    from run import errors  # after sys.path has the repository (above)
    module = importlib.import_module(os.path.splitext(script)[0])
    out, err, code = io.StringIO(), io.StringIO(), 0
    threads, rng, cwd = torch.get_num_threads(), torch.get_rng_state(), os.getcwd()
    sigint = signal.getsignal(signal.SIGINT)
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                errors.run_main(lambda: module.main([str(a) for a in args]))
            finally:
                hidden = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)
                shown = {(str(w.message), w.category, w.filename, w.lineno): w for w in caught
                         if not issubclass(w.category, hidden)}
                for w in shown.values():
                    err.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        torch.set_num_threads(threads)
        torch.set_rng_state(rng)
        if sigint is not None:  # (None: a handler not installed from Python)
            signal.signal(signal.SIGINT, sigint)
        os.chdir(cwd)
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
    return code, out.getvalue(), err.getvalue()


def one_line_error(code, err):
    """The one line a user mistake gets: exit 2, ``error: ...`` on stderr, no traceback."""
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and \
        "Traceback" not in err, err
    return lines[0]


def rows_without_time(run):
    """A run's progress.txt rows, all columns but Time (the only one a rerun changes)."""
    from logger import read_progress  # after sys.path has the repository (above)
    header, rows = read_progress(os.path.join(run, "progress.txt"))
    i = header.index("Time")
    return [r[:i] + r[i + 1:] for r in rows]


def snapshot(run):
    """Every file of a run directory, by content."""
    return {n: open(os.path.join(run, n), "rb").read() for n in sorted(os.listdir(run))}


@pytest.fixture
def pendulum():
    return lambda: gym.make("Pendulum-v1")
