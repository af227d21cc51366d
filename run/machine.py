"""The machine a run trains on: the torch device, the CPU threads, the memory, and what
config.json records of it (library versions, torch threads, CPU model, the code's git commit),
since determinism holds for one CPU model and one torch thread count only.
"""
import contextlib
import importlib.metadata
import os
import platform
import subprocess
import time

import numpy as np
import torch

from run.errors import UserError


def pick_device(name):
    """The torch device for a --device value; one that this torch lacks is a UserError."""
    available = ["cpu", *(f"cuda:{i}" for i in range(torch.cuda.device_count())),
                 *(["mps"] if torch.backends.mps.is_available() else [])]
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name not in available and not (name == "cuda" and torch.cuda.is_available()):
        raise UserError(f"device {name!r} is not available to this torch ({torch.__version__}); "
                        f"available: {', '.join(available)} (choose with --device)")
    return torch.device(name)


def default_threads(cores=None, free=None):
    """torch's CPU threads when none are given: at most 2, at most the cores this process may
    run on (``taskset``, a container's CPU set), at most OMP_NUM_THREADS where it is set (as
    for torch's own default), and at most the cores other processes leave free now
    (``free``; measured when not given). These networks are small: beyond two threads the
    work per thread no longer pays for the threads' synchronisation (on 16 cores torch's
    default of 16 ran the loop at 0.41x of one). And torch's threads spin while they wait
    for each other, so a second thread on a core another process keeps busy waits for that
    core at every step: on 2 cores with one busy, 2 threads ran the loop at a fraction of
    one thread's speed (docs/speed.md)."""
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    cap = min(2, int(omp) if omp.isdigit() and int(omp) >= 1 else 2, cores or usable_cores())
    if cap > 1 and free is None:
        free = free_cores()
    return cap if free is None or free >= cap else max(1, min(cap, round(free)))


def usable_cores():
    """The cores this process may run on (all of the machine's where the OS can't tell)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


def cpu_times():
    """(idle, total) jiffies of the cores this process may run on, from /proc/stat (Linux)."""
    with open("/proc/stat") as f:
        rows = [ln.split() for ln in f if ln.startswith("cpu") and ln[3].isdigit()]
    mine = {f"cpu{i}" for i in os.sched_getaffinity(0)}
    rows = [[int(x) for x in r[1:]] for r in rows if r[0] in mine]
    return sum(r[3] + r[4] for r in rows), sum(sum(r[:8]) for r in rows)  # idle + iowait


class OtherLoad:
    """How many cores other processes kept busy since the last call (``since_last``), from
    /proc/stat and this process's own CPU time: no waiting, so it can run every epoch. None
    where it cannot be read."""

    def __init__(self):
        self.since_last()

    def since_last(self):
        try:
            (idle, total), own, now = cpu_times(), time.process_time(), time.time()
        except (OSError, AttributeError, ValueError, IndexError):
            return None
        last, self.last = getattr(self, "last", None), (idle, total, own, now)
        if last is None or total <= last[1] or now <= last[3]:
            return None
        busy = (1 - (idle - last[0]) / (total - last[1])) * usable_cores()  # in cores
        return max(0.0, busy - (own - last[2]) / (now - last[3]))


def free_cores(seconds=0.25, windows=2):
    """How many of the cores this process may run on other processes leave idle: the most
    over ``windows`` windows of ``seconds`` each, from /proc/stat (Linux), so that a moment's
    work of another process (its start, its exit) does not count as a busy core; None where
    it cannot be read."""
    free = []
    try:
        for _ in range(windows):
            idle0, total0 = cpu_times()
            time.sleep(seconds)
            idle1, total1 = cpu_times()
            if total1 > total0:
                free.append((idle1 - idle0) / (total1 - total0) * usable_cores())
    except (OSError, AttributeError, ValueError, IndexError):
        return None
    return max(free, default=None)


def run_metadata():
    """Determinism holds for one CPU model and one torch thread count only, so both are
    written down beside the library versions and the code's git commit."""
    versions = dict(python=platform.python_version(), torch=torch.__version__,
                    **{name: importlib.metadata.version(name)  # without importing them
                       for name in ("gymnasium", "numpy", "matplotlib")})
    return dict(versions=versions, torch_threads=torch.get_num_threads(), cpu=cpu_model(),
                git=git_commit())


def cpu_model():
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def git_commit():
    """The commit of the code that trains, and whether its tracked files had changes that
    were not committed; None outside a git checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head, status = (subprocess.run(["git", *cmd], cwd=here, capture_output=True, text=True,
                                       timeout=30)
                        for cmd in (["rev-parse", "HEAD"], ["status", "--porcelain", "-uno"]))
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode or status.returncode:
        return None
    return dict(commit=head.stdout.strip(), uncommitted_changes=bool(status.stdout.strip()))


def check_fits(parts):
    """Refuse, in one line, a part (``parts``: name -> object) whose numpy arrays would not fit
    in the memory available now: numpy reserves a replay buffer's zeros without touching
    them, so it would otherwise fail only hours later, when it fills."""
    try:
        with open("/proc/meminfo") as f:
            avail = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("MemAvailable"))
    except (OSError, StopIteration):  # not Linux: not checked
        return
    for name, part in parts.items():
        need = sum(v.nbytes for v in vars(part).values() if isinstance(v, np.ndarray))
        if need > 0.8 * avail:
            raise UserError(f"the {name} needs {need / 1e9:.1f} GB but only {avail / 1e9:.1f} GB "
                            f"is available; make it smaller")
