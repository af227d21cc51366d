"""A run directory's lifecycle, so that td3.py can stay the algorithm.

td3() reaches everything here through a ``Run``, a facade over three parts that each do one
thing: ``RunDirectory`` (may the run start, resume or start again; no file it wrote is
deleted), ``TrainingState`` (everything an exact resume puts back) and judging.py's ``Judge``
(which decides what best.pt keeps and when the run stops; ``Run`` writes the files):

    run = Run(config, logger_kwargs, resume, Hyperparameters)
                                               # checks the run directory, opens the logger
    loop, (o, ep_ret, ep_len) = run.start(loop, rng, env, test_env, judged, losses, ac=ac, ...)
                                               # a new run, or everything put back exactly
    with run:                                  # Ctrl-C now asks for a clean stop
        ...
        returns, confirmed = run.judge.epoch(...)  # tests, confirmations (judging.py)
        run.end_epoch(loop, returns, confirmed)  # best.pt, early stop, the checkpoint
        run.stop_if_interrupted()              # after Ctrl-C: checkpoint, clean exit

What it keeps for a run in ``<data_dir>/<exp_name>/<exp_name>_s<seed>/``:
    config.json   every setting, library versions, torch threads, CPU, git commit
    progress.txt  the epoch table (logger.py writes both)
    ckpt.pt       networks, optimizers, buffer, RNGs (a GPU's too), counters, the episode
                  in progress, and a Box2D env's past episodes (reset seeds and actions)
    best.pt       the judged actor-critic: the best epoch's, or the confirmed one once solved

Every file is written atomically (a temp file, then ``os.replace``), and checkpoints load
with ``torch.load(..., weights_only=True)``, so a kill at any moment or a crafted file
loses nothing and runs nothing. A resumed run continues exactly: the same rows as a run
that was never stopped, on the same CPU model and torch thread count, Box2D envs included
(their train and test envs replay their past episodes first). A run stopped before its
first checkpoint starts again from step 0, keeping what it wrote under other names; one
whose table shows a checkpoint that is missing is refused. No file a run wrote is deleted
(a resume redoes the rows written after its checkpoint, which come out the same).

``pick_device`` checks a ``--device``.
What the command lines share (the one user-error type, the lock on a run directory, reading
config.json) is in cli.py, the settings' rules in settings.py, making and rebuilding envs in
envs.py; the epoch table and the live progress line between tables are logger.py's.
"""
import contextlib
import importlib.metadata
import inspect
import os
import pickle
import platform
import signal
import subprocess
import sys
import time
from dataclasses import asdict, fields

import numpy as np
import torch

import judging
from cli import (RESUME_MAY_CHANGE, Interrupted, UserError, hold_run_dir, name_of, read_config,
                 run_dir)
from envs import env_arguments
from logger import (DiskFull, EpochLogger, ProgressLine, atomic_write, format_seconds,
                    is_temp_file, read_progress)
from settings import made_with


# ------------------------------------------------------------------------------------------
# What config.json records beside the settings, swap points by name, the device
# ------------------------------------------------------------------------------------------
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


def run_config(env, hp, actor_critic, ac_kwargs, swaps):
    """What config.json records of a run: its resolved settings, the env, the network as
    built (defaults too), the swap points by name and the device (checked here)."""
    device = pick_device(hp.device)
    if hp.polyak < 0.5:  # targ <- polyak * targ + ..., so a small polyak nearly copies the nets
        print(f"warning: polyak={hp.polyak}: targets move {1 - hp.polyak:.1%} of the way at each "
              f"target update; polyak is 1 - tau (tau=0.005 is polyak=0.995)", file=sys.stderr)
    network = {k: p.default for k, p in inspect.signature(actor_critic).parameters.items()
               if isinstance(p.default, (int, float, str, tuple, list))}
    env_kwargs, env_wrappers = env_arguments(env)
    return dict(asdict(hp), env_id=env.spec.id if env.spec else type(env.unwrapped).__name__,
                env_kwargs=env_kwargs, env_wrappers=env_wrappers, env_entry_point=(
                    env.spec.entry_point if env.spec and isinstance(env.spec.entry_point, str) else None),
                obs_dim=env.observation_space.shape[0], act_dim=env.action_space.shape[0],
                device=str(device), ac_kwargs={**network, **ac_kwargs},
                actor_critic=name_of(actor_critic), **{k: name_of(fn) for k, fn in swaps.items()})


def same_device(a, b):
    a, b = torch.device(a), torch.device(b)
    return a.type == b.type and (a.index or 0) == (b.index or 0)


def device_rng_state(device):
    """The state of a GPU's own random generator (trick 3's noise on a cuda tensor draws from
    it, not from the CPU's), or None on the CPU. (torch.cuda and torch.mps get and set it alike.)"""
    device = torch.device(device)
    return None if device.type == "cpu" else getattr(torch, device.type).get_rng_state(device)


def default_threads(cores=None):
    """torch's CPU threads when --threads is not given: at most 2 (docs/speed.md), at most the
    cores this process may run on (``taskset``, a container's CPU set), not the machine's, and
    at most OMP_NUM_THREADS where it is set (as for torch's own default). These networks are
    small, so beyond two threads the work per thread no longer pays for the threads'
    synchronisation: on 16 cores torch's default of 16 ran the loop at 0.41x of one."""
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    cap = int(omp) if omp.isdigit() and int(omp) >= 1 else 2
    return max(1, min(2, cap, cores or usable_cores()))


def usable_cores():
    """The cores this process may run on (all of the machine's where the OS can't tell)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


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


# ------------------------------------------------------------------------------------------
# Files: run directories, config.json, checkpoints
# ------------------------------------------------------------------------------------------
def save_checkpoint(state, path):
    """``torch.save`` a dict of tensors and plain values, atomically."""
    atomic_write(path, lambda f: torch.save(state, f), mode="wb")


def load_checkpoint(path, map_location="cpu"):
    """Load a checkpoint without running any code from it.

    ``weights_only=True`` restricts unpickling to tensors and plain containers, so a file
    crafted to execute code on load is refused. Every way a load can fail becomes a
    ``ValueError`` with one readable line.
    """
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


def check_memory(nbytes, what, hint):
    """Refuse, in one line ending in ``hint``, an allocation that would not fit in the memory
    available now."""
    try:
        with open("/proc/meminfo") as f:
            avail = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("MemAvailable"))
    except (OSError, StopIteration):
        return
    if nbytes > 0.8 * avail:
        raise UserError(f"{what} needs {nbytes / 1e9:.1f} GB but only {avail / 1e9:.1f} GB is "
                        f"available; {hint}")


# ------------------------------------------------------------------------------------------
# The run directory: may it start, resume or start again; no file a run wrote is deleted
# ------------------------------------------------------------------------------------------
# Config keys a resumed run may change (everything else must match the directory's run): the
# options a resume may change (cli.RESUME_MAY_CHANGE; config.json keeps --threads as
# torch_threads and --quiet in logger_kwargs), and what describes the process, not the run.
AS_CONFIG_KEY = {"threads": "torch_threads", "quiet": "logger_kwargs"}
MAY_CHANGE_ON_RESUME = (*(AS_CONFIG_KEY.get(o, o) for o in RESUME_MAY_CHANGE),
                        "resume", "versions", "cpu", "git")
# The files a run writes (atomically: a kill mid-write leaves <name>.tmp<pid>, removed on resume).
RUN_FILES = ("config.json", "progress.txt", "ckpt.pt", "best.pt", "best_live.pt",
             "best_averaged.pt")
# What a checkpoint identifies its run by (checked against the config on resume).
IDENTITY = ("env_id", "obs_dim", "act_dim", "ac_kwargs")


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


def check_same_run(run_dir, config, advice, settings_class=None):
    """A one-line UserError, ending in ``advice``, when the run in ``run_dir`` was started
    with other settings than ``config`` (td3.py on resume, sweep.py before it starts). Given
    ``settings_class`` (td3.Hyperparameters), an old run is compared as it was made: its
    settings newer than it read as settings.made_with says."""
    saved = read_config(run_dir)
    saved = {**saved, **(made_with(saved, settings_class) if settings_class else {})}
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

    def __init__(self, output_dir, config, resume, settings_class=None):
        self.output_dir, self.config = output_dir, config
        self.restart = None  # a resumed run with no checkpoint yet: the files it sets aside
        self.ckpt = self._open(resume, settings_class)

    def _open(self, resume, settings_class):
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
                       settings_class)
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


# ------------------------------------------------------------------------------------------
# The training state: everything an exact resume puts back
# ------------------------------------------------------------------------------------------
class TrainingState:
    """What a checkpoint holds so that a resumed run equals one never stopped: every part's
    state_dict (``parts``: networks, optimizers, the replay buffer), the loop's counters (a
    dataclass), numpy's and torch's random streams and a GPU's, the values logged so far this
    epoch, the train env's episode in progress and, for a Box2D env, the past episodes of the
    train and test envs (both ReplayableEnv)."""

    def __init__(self, loop, rng, env, test_env, logger, device, parts):
        self.loop, self.rng, self.env, self.test_env = loop, rng, env, test_env
        self.logger, self.device, self.parts = logger, device, parts

    def capture(self):
        return {**{name: part.state_dict() for name, part in self.parts.items()},
                **{f.name: getattr(self.loop, f.name) for f in fields(self.loop)},
                "episode": self.env.state_dict(),
                **({"test_env": self.test_env.state_dict()} if self.test_env.keeps_past else {}),
                "rng": self.rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                "device": self.device, "device_rng": device_rng_state(self.device),
                "epoch_dict": self.logger.epoch_dict}

    def keys(self):
        """What a checkpoint must hold to restore this state."""
        return (*self.parts, "episode", "rng", "torch_rng", "epoch_dict",
                *(f.name for f in fields(self.loop)))

    def restore(self, ckpt, run_dir, envs=True):
        """Put everything back; returns (obs, episode return, episode length) of the episode
        in progress. Says in one line where the numbers part from an uninterrupted run's:
        another device, or a checkpoint without what it needs. ``envs`` False (a finished
        run, which trains no more) leaves the envs as they are: their replay takes time."""
        for name, part in self.parts.items():
            part.load_state_dict(ckpt[name])
        self.rng.bit_generator.state = ckpt["rng"]
        torch.set_rng_state(ckpt["torch_rng"])
        made_on = ckpt["device"] if "device" in ckpt else read_config(run_dir).get("device", "cpu")
        if not same_device(made_on, self.device) or (
                ckpt.get("device_rng") is None and device_rng_state(made_on) is not None):
            why = (f"ran on {made_on} and resumes on {self.device}" if not same_device(
                made_on, self.device) else "has a checkpoint without its GPU's random state")
            print(f"note: {run_dir} {why}: from here its numbers are no longer those of an "
                  f"uninterrupted run", flush=True)
        elif ckpt.get("device_rng") is not None and torch.device(self.device).type != "cpu":
            getattr(torch, torch.device(self.device).type).set_rng_state(ckpt["device_rng"],
                                                                         self.device)
        self.logger.epoch_dict.update(ckpt["epoch_dict"])
        for f in fields(self.loop):
            setattr(self.loop, f.name, ckpt[f.name])
        if not envs:
            return None, 0.0, 0
        if self.env.keeps_past and "past_seeds" not in ckpt["episode"]:
            print(f"note: {run_dir}'s checkpoint predates the record of its env's past "
                  f"episodes, which a Box2D world remembers: from here its numbers part from "
                  f"those of an uninterrupted run", flush=True)
        replay_time = time.time()
        first = self.env.replay(**ckpt["episode"])
        if "test_env" in ckpt:
            self.test_env.replay(**ckpt["test_env"])
        if self.env.keeps_past and "past_seeds" in ckpt["episode"]:
            print(f"replayed the train and test envs' {self.env.n_past + self.test_env.n_past:,} "
                  f"past env steps in {time.time() - replay_time:.1f} s (a Box2D world remembers "
                  f"its past episodes)", flush=True)
        return first


# ------------------------------------------------------------------------------------------
# The run, as td3() sees it
# ------------------------------------------------------------------------------------------
class Run:
    """One run: a facade over its directory (RunDirectory), its training state
    (TrainingState), its judging (judging.Judge), the logger, Ctrl-C and the progress line.
    ``config`` is what config.json records (the settings, env_id, obs_dim, act_dim,
    ac_kwargs, ...)."""

    def __init__(self, config, logger_kwargs, resume=False, settings_class=None):
        logger_kwargs = dict(logger_kwargs)
        self.progress_on = logger_kwargs.pop("progress", True) and not logger_kwargs.get("quiet")
        if not logger_kwargs.get("output_dir"):
            logger_kwargs["output_dir"] = run_dir("data", logger_kwargs["exp_name"], config["seed"])
        self.output_dir = logger_kwargs["output_dir"]
        self.config = c = dict(config, logger_kwargs=logger_kwargs, resume=resume, **run_metadata())
        self.lock = hold_run_dir(self.output_dir)  # before any check: one process per directory
        try:
            self.dir = RunDirectory(self.output_dir, self.config, resume, settings_class)
            self.ckpt = self.dir.ckpt
            try:
                self.logger = EpochLogger(**logger_kwargs,
                                          resume_epochs=self.ckpt["epoch"] if self.ckpt else None)
            except (ValueError, OSError, UnicodeDecodeError) as e:
                raise UserError(f"cannot resume: {e}") from None
            self.judge = judging.Judge(self.config)
            self.columns = self.judge.columns
            self.total_steps = c["steps_per_epoch"] * c["epochs"]
            self.elapsed, self.saved_epoch = 0.0, self.ckpt["epoch"] if self.ckpt else None
            self.lock.claim()
        except BaseException:
            self.lock.close(undo=True)  # a refused run leaves the directory as it was
            raise

    def start(self, loop, rng, env, test_env, judged, losses, **parts):
        """Begin the run: a new one writes config.json, takes ``loop`` (the training loop's
        counters, a dataclass) as it is and resets ``env`` with a seed from ``rng``; a resumed
        one gets its TrainingState and judging back. ``judged``: the actor-critic each judged
        actor acts with (its ``act``), as best.pt keeps it; ``losses``: the logged values that
        must stay finite; ``parts``: what a checkpoint holds (a part with ``describe()`` is
        named in the line a run starts with). Returns the counters and (obs, episode return,
        episode length)."""
        self.loop, self.parts, self.judged, self.losses = loop, parts, judged, losses
        self.state = TrainingState(loop, rng, env, test_env, self.logger, self.config["device"], parts)
        self.resumed = self.ckpt is not None
        if self.ckpt is None:
            kept = self.dir.prepare()
            if self.dir.restart is not None:
                print(f"note: {self.output_dir} has no checkpoint yet (it stopped before its "
                      f"first was written), so it starts again from env step 0"
                      + (f"; its earlier files are kept as {', '.join(kept)}" if kept else ""),
                      flush=True)
            self.logger.save_config(dict(self.config, resume=False))  # a start, also when again
            first = env.reset(seed=int(rng.integers(2**31)))[0], 0.0, 0
        else:
            check_complete(self.ckpt, self.state.keys())
            self.dir.prepare()
            self.judge.load_state_dict(self.ckpt)
            if self.judge.stopped:
                self.total_steps = self.ckpt["t"]  # it had stopped early: nothing left to train
            first = self.state.restore(self.ckpt, self.output_dir,
                                       envs=self.ckpt["t"] < self.total_steps)
            self.elapsed = self.ckpt["elapsed"]
            self.ckpt = self.dir.ckpt = None  # the replay buffer's copy can go
        self.start_time = self.epoch_time = time.time()
        self.epoch_t = loop.t
        self.progress = ProgressLine(self.total_steps, loop.t, quiet=not self.progress_on)
        self.logger.before_print = self.progress.clear
        if loop.t < self.total_steps:
            sizes = [p.describe() for p in parts.values() if hasattr(p, "describe")]
            print("; ".join(sizes + [f"{'resuming at' if self.resumed else 'starting'} env "
                                     f"step {loop.t:,} of {self.total_steps:,}; device "
                                     f"{self.config['device']}"]), flush=True)
        else:
            print(self.finished_message(loop), flush=True)
        return loop, first

    def finished_message(self, loop):
        """What a resume of a finished run says instead of training: what was done, where
        the best policy is, and how to train on (an early stop is final)."""
        c, best = self.config, os.path.join(self.output_dir, "best.pt")
        done = f"{self.output_dir} is finished: {loop.epoch} epochs, {loop.t:,} env steps"
        if self.judge.stopped:
            how = f"it stopped early ({self.judge.stop_reason()}), so it trains no further"
        else:
            how = f"to train on, resume with more epochs: --epochs N with N > {loop.epoch}"
        if self.judge.solved.get(c["test_actor"]):
            return f"{done}; solved, the confirmed actor-critic in {best}; {how}"
        return (f"{done}; best test return {self.judge.best_return:.1f}, its actor-critic in "
                f"{best}; {how}")

    def __enter__(self):
        self._ctrl_c = CtrlC()
        return self

    def __exit__(self, *exc):
        self._ctrl_c.close()
        self.lock.close()  # the directory is free for the next process (or a later td3() here)

    def show_progress(self, t, last_return, warm_up, updating):
        """The live progress line (redrawn at most twice a second; ~100 ns otherwise):
        ``warm_up`` while the actions are random, ``updating`` once the networks train."""
        self.progress.update(t, "random warm-up" if warm_up else "learning", last_return, updating)

    def time(self):
        """Training seconds so far, earlier processes of a resumed run included."""
        return self.elapsed + time.time() - self.start_time

    def epoch_title(self, loop, epochs):
        sps = (loop.t - self.epoch_t) / max(time.time() - self.epoch_time, 1e-9)
        return (f"Epoch {loop.epoch}/{epochs} | {loop.t:,}/{self.total_steps:,} env steps | "
                f"{sps:,.0f} steps/s | ~{format_seconds((self.total_steps - loop.t) / sps)} left")

    def check_finite(self, epoch):
        """Stop on NaN/inf in the losses or the networks before it reaches a checkpoint, so
        the last good one stays."""
        logged = self.logger.epoch_dict
        bad = next((k for k in self.losses if logged.get(k) and not bool(
            torch.isfinite(torch.stack(logged[k])).all())), None)
        bad = bad or next((f"parameter {name}" for module in self.judged.values()
                           for name, p in module.named_parameters()
                           if not bool(torch.isfinite(p).all())), None)
        if bad:
            kept = (f"its last good checkpoint (epoch {self.saved_epoch}) in {self.output_dir} "
                    f"is kept" if self.saved_epoch is not None else f"{self.output_dir} has no checkpoint "
                    f"yet, so a resume starts it again")
            raise UserError(f"epoch {epoch}: {bad} became NaN or inf; stopped, {kept}")

    def end_epoch(self, loop, test_returns, confirmed):
        """After an epoch's table: the files the judging keeps (judging.Judge.end_epoch), the
        stop once solved, ckpt.pt every save_freq epochs and at the end."""
        for name, actor, ret, confirmed_now in self.judge.end_epoch(loop.epoch, test_returns, confirmed):
            self.dir.write(name, dict(ac=self.judged[actor].state_dict(), epoch=loop.epoch,
                                      test_return=ret, actor=actor, confirmed=confirmed_now,
                                      **{k: self.config[k] for k in IDENTITY}), self.saved_epoch)
        if self.judge.stopped:
            self.total_steps = loop.t  # solved: this epoch is the last
            print(f"stopping early: {self.judge.stop_reason()}", flush=True)
        if loop.epoch % self.config["save_freq"] == 0 or loop.t >= self.total_steps:
            self.checkpoint()
        self.epoch_time, self.epoch_t = time.time(), loop.t

    def checkpoint(self):
        """Everything an exact resume needs, as tensors and plain values, written atomically."""
        self.dir.write("ckpt.pt", {**self.state.capture(), **self.judge.state_dict(),
                                   "elapsed": self.time(), **{k: self.config[k] for k in IDENTITY}},
                       self.saved_epoch)
        self.saved_epoch = self.loop.epoch

    def stop_if_interrupted(self):
        """After Ctrl-C (checked once per env step): write the checkpoint, raise Interrupted."""
        if self._ctrl_c.requested:  # (never a checkpoint of NaN weights)
            self.check_finite(self.loop.epoch + 1)
            self.checkpoint()
            raise Interrupted(f"interrupted at env step {self.loop.t:,}; checkpoint saved. "
                              f"Continue with: python td3.py --resume {self.output_dir}")


class CtrlC:
    """While training, Ctrl-C sets ``requested``, which the loop checks after each step; a
    second Ctrl-C stops at once. ``close`` puts the previous handler back."""

    def __init__(self):
        self.requested, self.previous = False, None
        try:
            self.previous = signal.signal(signal.SIGINT, self._handle)
        except ValueError:  # not the main thread: leave Ctrl-C as it is
            pass

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def close(self):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
            self.previous = None


class ReplayableEnv:
    """An env whose state a checkpoint can rebuild from the reset seeds and actions it saw: a
    Box2D env can't be saved, but it is deterministic given both. It records the episode in
    progress, and, for an env that remembers its past episodes (``remembers_past``), every
    episode since it was made, so that a resume replays them into a fresh env and its world
    is the uninterrupted run's. Everything else (spaces, spec, close) is the wrapped env's."""

    def __init__(self, env):
        self.env, self.seed, self.actions = env, None, []
        self.keeps_past = remembers_past(env)
        self.past_seeds, self.past_actions = [], []  # finished episodes, oldest first
        self.n_past = 0                              # their env steps

    def __getattr__(self, name):
        return getattr(self.env, name)

    def reset(self, seed):
        if self.keeps_past and self.seed is not None:
            self.past_seeds.append(self.seed)
            self.past_actions.append(self._array(self.actions))
            self.n_past += len(self.actions)
        self.seed, self.actions = seed, []
        return self.env.reset(seed=seed)

    def step(self, a):
        self.actions.append(a)
        return self.env.step(a)

    def _array(self, actions):  # (steps, act_dim) float32, also for no step
        return np.asarray(actions, np.float32).reshape(-1, self.env.action_space.shape[0])

    def state_dict(self):
        episode = dict(seed=self.seed, actions=torch.as_tensor(self._array(self.actions)))
        if not self.keeps_past:
            return episode
        return dict(episode, past_seeds=torch.tensor(self.past_seeds, dtype=torch.int64),
                    past_lengths=torch.tensor([len(a) for a in self.past_actions],
                                              dtype=torch.int64),
                    past_actions=torch.as_tensor(np.concatenate([self._array([]),
                                                                 *self.past_actions])))

    def replay(self, seed, actions, past_seeds=None, past_lengths=None, past_actions=None):
        """Play the past episodes again (when recorded), then reset with ``seed`` and take
        ``actions`` again; returns (obs, return, length) of that last episode."""
        if past_seeds is not None:
            ends = np.cumsum(past_lengths.numpy())
            for s, end, n in zip(past_seeds.tolist(), ends, past_lengths.tolist()):
                self.reset(s)
                for a in past_actions[end - n:end].numpy():
                    self.step(a)
        ep_ret, ep_len = 0.0, 0
        if seed is None:  # never reset (an env with no episode yet)
            return None, ep_ret, ep_len
        o, _ = self.reset(seed)
        for a in actions.numpy():
            o, r, _, _, _ = self.step(a)
            ep_ret, ep_len = ep_ret + r, ep_len + 1
        return o, ep_ret, ep_len


def remembers_past(env):
    """Whether an env's past episodes change its next ones: a Box2D world (BipedalWalker,
    LunarLander, CarRacing) lives as long as its env, and what it did before (the order of
    its bodies' contacts and its internal pools) changes the floating point of later
    episodes (benchmarks/check_box2d_memory.py). Other envs here reset completely."""
    world = getattr(env.unwrapped, "world", None)
    return type(world).__module__.split(".")[0] == "Box2D"
