"""A run directory, ``<data_dir>/<exp_name>/<exp_name>_s<seed>`` (Spinning Up's layout): held
by one process at a time, its config.json (the one reader of it), its checkpoints, and whether
a run may start, resume or start again there. No file a run wrote is deleted.

    config.json   every setting, library versions, torch threads, CPU, git commit
    progress.txt  the epoch table (logger.py writes both)
    ckpt.pt       everything an exact resume needs (run/resume.py)
    best.pt       the judged actor-critic: the best epoch's, or the confirmed one once solved

Every file is written atomically (a temp file, then ``os.replace``), and checkpoints load
with ``torch.load(..., weights_only=True)``, so a kill at any moment or a crafted file
loses nothing and runs nothing. torch is imported only to read or write a checkpoint, so
that plot.py and diagnose.py read config.json through this file without it.
"""
import contextlib
import errno
import fcntl
import json
import os
import pickle
import shlex
import shutil
import sys

from logger import atomic_write, is_temp_file, read_progress
from run.errors import UserError
from run.settings import made_with

DATA_DIR = "data"  # where runs go unless --data_dir (or logger_kwargs' output_dir) says
# The options a resumed run may change; every other option must equal the run's own value.
# config.json keeps --threads as torch_threads and --quiet in logger_kwargs.
RESUME_MAY_CHANGE = ("epochs", "device", "threads", "quiet")
AS_CONFIG_KEY = {"threads": "torch_threads", "quiet": "logger_kwargs"}
# Config keys a resumed run may change: those options', and what describes the process.
MAY_CHANGE_ON_RESUME = (*(AS_CONFIG_KEY.get(o, o) for o in RESUME_MAY_CHANGE), "threads",
                        "resume", "versions", "cpu", "git")
# The files a run writes (atomically: a kill mid-write leaves <name>.tmp<pid>, removed on resume).
RUN_FILES = ("config.json", "progress.txt", "ckpt.pt", "best.pt", "best_live.pt",
             "best_averaged.pt")
# What a checkpoint identifies its run by (checked against the config on resume).
IDENTITY = ("env_id", "obs_dim", "act_dim", "ac_kwargs")


# ------------------------------------------------------------------------------------------
# A run directory is held by one process at a time
# ------------------------------------------------------------------------------------------
LOCK = "lock"  # in a run directory: which process runs there; locked while it lives


class RunDirInUse(UserError):
    """A run directory another process holds; ``holder`` says which (as it wrote itself)."""
    holder = "another process"


class hold_run_dir:
    """Hold ``run_dir`` for this process until ``close()`` or the process ends (the OS releases
    the lock then, also after a SIGKILL, so a killed run can be resumed). Held by another
    process: RunDirInUse, one line naming it, and nothing changed. ``close(undo=True)``, for a
    run refused after all, removes the lock file and the directory if holding it made them."""

    def __init__(self, run_dir):
        self.run_dir, self.path = run_dir, os.path.join(run_dir, LOCK)
        self.made_dir, self.made_file = not os.path.isdir(run_dir), not os.path.exists(self.path)
        os.makedirs(run_dir, exist_ok=True)
        self.f = open(self.path, "a+")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.f.seek(0)
            holder = self.f.read().strip() or "another process"
            self.f.close()
            e = RunDirInUse(f"{run_dir} is in use by {holder}: wait for it to end, or pick "
                            f"another --exp_name, --seed or --data_dir")
            e.holder = holder
            raise e from None

    def claim(self):
        """Write who holds the directory (once the run is sure to go ahead), for the next one."""
        self.f.seek(0)
        self.f.truncate()
        self.f.write(f"process {os.getpid()} ({shlex.join(sys.argv)[:200]})\n")
        self.f.flush()

    def close(self, undo=False):
        self.f.close()
        if undo:
            with contextlib.suppress(OSError):
                if self.made_file:
                    os.remove(self.path)
                if self.made_dir:
                    os.rmdir(self.run_dir)


def run_dir(data_dir, exp_name, seed):
    """Where a run goes: ``<data_dir>/<exp_name>/<exp_name>_s<seed>`` (Spinning Up's layout)."""
    return os.path.join(data_dir, exp_name, f"{exp_name}_s{seed}")


def read_config(run_dir, required=True):
    """The ``config.json`` of a run directory (the one reader of it), or a UserError saying
    what is wrong. Not ``required`` (plot.py and diagnose.py, which also read Spinning Up's
    runs): whatever dict it holds, or {} when there is none to read."""
    path = os.path.join(run_dir, "config.json")
    try:
        if not os.path.isdir(run_dir):
            raise UserError(f"{run_dir} is not a directory")
        try:
            with open(path) as f:
                config = json.load(f)
        except FileNotFoundError:
            raise UserError(f"{run_dir} has no config.json; is it a run directory?") from None
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
            raise UserError(f"{path} does not parse ({e})") from None
    except UserError:
        if required:
            raise
        return {}
    if not required:
        return config if isinstance(config, dict) else {}
    if not isinstance(config, dict) or "env_id" not in config:
        raise UserError(f"{path} is not a td3.py config (no env_id)")
    return config


# ------------------------------------------------------------------------------------------
# Checkpoints
# ------------------------------------------------------------------------------------------
class DiskFull(OSError):
    """The disk filled while a checkpoint was written; the file as it was is kept."""


def save_checkpoint(state, path):
    """``torch.save`` a dict of tensors and plain values, atomically; a full disk is a
    DiskFull naming the file, about how much it needs and what is free."""
    import torch  # here, not at the top: plot.py and diagnose.py read config.json without it
    try:
        atomic_write(path, lambda f: torch.save(state, f), mode="wb")
    except Exception as e:
        chain = [e]  # torch's serializer raises its own error, with the OSError as context
        while chain[-1].__context__ is not None and len(chain) < 10:
            chain.append(chain[-1].__context__)
        if not any(getattr(x, "errno", None) == errno.ENOSPC or "No space left on device" in str(x)
                   for x in chain):
            raise
        need = max(nbytes(state), os.path.getsize(path) if os.path.exists(path) else 0)
        free = shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free
        raise DiskFull(errno.ENOSPC, f"no space left on the disk for {path}: it needs about "
                       f"{need / 1e6:.1f} MB, {free / 1e6:.1f} MB are free") from None


def nbytes(state):
    """The bytes of the tensors in a checkpoint's (nested) state: about its size on disk."""
    if isinstance(state, dict):
        return sum(nbytes(v) for v in state.values())
    if isinstance(state, (list, tuple)):
        return sum(nbytes(v) for v in state)
    return state.numel() * state.element_size() if hasattr(state, "element_size") else 0


def load_checkpoint(path, map_location="cpu"):
    """Load a checkpoint without running any code from it.

    ``weights_only=True`` restricts unpickling to tensors and plain containers, so a file
    crafted to execute code on load is refused. Every way a load can fail becomes a
    ``ValueError`` with one readable line.
    """
    import torch  # (as in save_checkpoint)
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except FileNotFoundError:
        raise ValueError(f"no checkpoint at {path}") from None
    except pickle.UnpicklingError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"refused to load {path}: it is not a plain weights file "
                         f"({first[:200]})") from None
    except Exception as e:  # truncated zip, garbage bytes, ...
        raise ValueError(f"cannot read checkpoint {path}: it is truncated or not a "
                         f"checkpoint ({type(e).__name__})") from None


# ------------------------------------------------------------------------------------------
# May the run start, resume or start again here
# ------------------------------------------------------------------------------------------
def first_difference(saved, config):
    """The first key in which a run directory's config.json (``saved``) and ``config`` differ,
    leaving out what a resumed run may change; None when they describe the same run."""
    return next((k for k, v in config.items() if k not in MAY_CHANGE_ON_RESUME and k in saved
                 and as_plain(saved[k]) != as_plain(v)), None)


def as_plain(v):
    """A value as config.json holds it, compared as a value: tuples and lists alike, -10 and
    -10.0 alike (numbers as numbers), anything else as its text."""
    if isinstance(v, (list, tuple)):
        return [as_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): as_plain(x) for k, x in v.items()}
    if isinstance(v, (bool, str)) or v is None:
        return v
    if isinstance(v, (int, float)):
        return float(v)
    return str(v)


def check_same_run(run_dir, config, advice, settings_classes=()):
    """A one-line UserError, ending in ``advice``, when the run in ``run_dir`` was started
    with other settings than ``config`` (td3.py on resume, sweep.py before it starts). Given
    ``settings_classes`` (td3.Hyperparameters and the run's RunSettings), an old run is
    compared as it was made: its settings newer than it read as settings.made_with says."""
    saved = read_config(run_dir)
    saved = {**saved, **made_with(saved, settings_classes)}
    if saved.get("stop_return") is None and config.get("stop_return") is None:
        saved.pop("early_stop", None)  # a run that is never judged stops at no return either way
    key = first_difference(saved, config)
    if key:
        raise UserError(f"{run_dir} was run with {key}={saved[key]!r}, not {config[key]!r}; "
                        f"{advice}")


def check_complete(ckpt, keys):
    """Refuse, in one line naming what it lacks, a checkpoint without every one of ``keys``."""
    missing = [k for k in keys if k not in ckpt] if isinstance(ckpt, dict) else ["all"]
    if missing:
        raise UserError(f"not a td3.py checkpoint (it lacks {', '.join(missing[:3])})")


def check_never_checkpointed(run_dir):
    """A run directory without ckpt.pt may start again only if it cannot have continued past
    a checkpoint: a checkpoint is written right after the row of every save_freq-th epoch (and
    of its last), so a row beyond that one proves a checkpoint existed and was lost, and a
    restart would replace a run: refuse. Up to that row (a kill between the row and its
    checkpoint included) the run starts again, keeping what it wrote (set_aside)."""
    config, path = read_config(run_dir), os.path.join(run_dir, "progress.txt")
    try:
        rows = len(read_progress(path)[1]) if os.path.exists(path) else 0
    except (ValueError, OSError, UnicodeDecodeError) as e:
        raise UserError(f"{run_dir} has no ckpt.pt and its progress.txt can't be read ({e}); "
                        f"nothing was changed") from None
    first = min(config.get("save_freq", 1), config.get("epochs", 1))  # epoch of the first ckpt.pt
    if rows > first:
        raise UserError(f"{run_dir} has no ckpt.pt, but its progress.txt has {rows} rows, so the "
                        f"checkpoint written after epoch {first} existed: put its ckpt.pt back to "
                        f"resume it; nothing was changed")


def set_aside(run_dir, names):
    """Rename files a restarted run will write again to ``<stem>.before-restart[-N]<ext>``,
    so that nothing a run wrote is lost; returns the new names, in the order of ``names``.
    config.json goes last: a kill in between leaves a directory --resume still recognises."""
    kept = {}
    for name in sorted(names, key=lambda n: n == "config.json"):
        stem, ext = os.path.splitext(name)
        new, n = f"{stem}.before-restart{ext}", 1
        while os.path.exists(os.path.join(run_dir, new)):
            n += 1
            new = f"{stem}.before-restart-{n}{ext}"
        os.replace(os.path.join(run_dir, name), os.path.join(run_dir, new))
        kept[name] = new
    return [kept[name] for name in names]


class RunDirectory:
    """A run's directory: refused if it holds another run (unless resuming); on a resume, its
    checkpoint loaded (every way it can be broken is one line) and checked to be this run, or,
    where no checkpoint can have been written yet, the run started again. Nothing is written
    until every check has passed, so a refused run leaves the directory as it was."""

    def __init__(self, output_dir, config, resume, settings_classes):
        self.output_dir, self.config = output_dir, config
        self.restart = None  # a resumed run with no checkpoint yet: the files it sets aside
        self.ckpt = self._open(resume, settings_classes)

    def _open(self, resume, settings_classes):
        """Refuse a directory that already holds a run (unless resuming); for a resume,
        load ckpt.pt (every way it can be broken is one line) and check it is this run."""
        if not resume:
            if any(os.path.exists(os.path.join(self.output_dir, f))
                   for f in ("progress.txt", "ckpt.pt")):
                raise UserError(f"{self.output_dir} already holds a run; continue it with "
                                f"--resume {self.output_dir}, or pick another --exp_name or --seed")
            return None
        ckpt_path, ckpt = os.path.join(self.output_dir, "ckpt.pt"), None
        if os.path.exists(ckpt_path):
            try:
                ckpt = load_checkpoint(ckpt_path)
            except ValueError as e:  # truncated, or not a plain weights file
                raise UserError(str(e)) from None
            check_complete(ckpt, ("t", "epoch", *IDENTITY))
            key = first_difference({k: ckpt[k] for k in IDENTITY}, self.config)
            if key:
                raise UserError(f"checkpoint networks {ckpt[key]} differ from {self.config[key]}"
                                if key == "ac_kwargs" else f"checkpoint is for {key}="
                                f"{ckpt[key]}, this run has {self.config[key]}")
        check_same_run(self.output_dir, self.config, "a resumed run keeps its settings",
                       settings_classes)
        if ckpt is None:
            check_never_checkpointed(self.output_dir)
            # Killed before its first checkpoint: nothing can be continued, so the run starts
            # again; what it wrote is kept beside it under other names (in start()).
            self.restart = [n for n in RUN_FILES if n != "ckpt.pt"
                            and os.path.exists(os.path.join(self.output_dir, n))]
        return ckpt

    def prepare(self):
        """Before the run writes: remove the temp files a killed write left, and set aside
        what a restarted run will write again; returns the names they are kept as."""
        for name in os.listdir(self.output_dir) if os.path.isdir(self.output_dir) else ():
            if is_temp_file(name, RUN_FILES):
                os.remove(os.path.join(self.output_dir, name))
        return set_aside(self.output_dir, self.restart) if self.restart else []

    def write(self, name, state, saved):
        """Write a checkpoint file; a full disk is one line saying whether the checkpoint of
        epoch ``saved`` (None: none yet) is there to resume from."""
        try:
            save_checkpoint(state, os.path.join(self.output_dir, name))
        except DiskFull as e:
            raise UserError(f"{e.strerror}; " + (f"the checkpoint of epoch {saved} is intact: "
                            f"free space, then python td3.py --resume {self.output_dir}"
                            if saved is not None else "no checkpoint was written yet: free "
                            "space and start the run again")) from None
