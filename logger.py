"""Epoch logging in Spinning Up's format, and files written so that a crash loses nothing.

``EpochLogger`` collects values during an epoch (``store``), reduces them to one row
(``log_tabular``), prints that row as a table and appends it to ``progress.txt``
(``dump_tabular``). ``progress.txt`` is tab-separated with one header line, the format
Spinning Up's ``plot.py`` and ``pandas.read_table`` read.

Every file is written atomically: to a temporary file in the same directory, flushed,
fsynced, then moved over the old one with ``os.replace``. A process killed at any moment
leaves either the old file or the new one, never half of one.

It also owns the rest of a run's housekeeping, so that td3.py can stay the algorithm:
the rules a setting's value must follow and their command-line parsing, reading
``config.json`` and what else it records (versions, threads, CPU), checking that a directory
may be started or resumed, saving and restoring a training loop's state, Ctrl-C, removing
temp files a kill left behind, and the live progress line shown between epoch tables.

This file knows nothing about TD3.
"""
import contextlib
import json
import math
import numbers
import os
import pickle
import platform
import signal
import subprocess
import sys
import time
import types
from dataclasses import asdict, field, fields
from typing import Callable, NamedTuple

import numpy as np
import torch


class UserError(Exception):
    """A mistake in what the user asked for; scripts print it as one line and exit 2."""


# ------------------------------------------------------------------------------------------
# Settings: a dataclass field per setting, with the rule its value must follow
# ------------------------------------------------------------------------------------------
class Rule(NamedTuple):
    says: str                      # what a valid value is, for the one-line error
    ok: Callable                   # value -> bool
    parse: Callable = str          # command-line text -> value


def _int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _num(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


# Command-line parsers; argparse names them in its error ("invalid boolean value: 'x'").
def boolean(s):
    if s.lower() not in ("true", "false"):
        raise ValueError(s)
    return s.lower() == "true"


def number_none_or_auto(s):
    return None if s.lower() == "none" else "auto" if s.lower() == "auto" else float(s)


def integer_or_none(s):
    return None if s.lower() == "none" else int(s)


POSITIVE = Rule("a positive integer", lambda v: _int(v) and v >= 1, int)
COUNT = Rule("an integer >= 0", lambda v: _int(v) and v >= 0, int)
RATE = Rule("a number > 0", lambda v: _num(v) and v > 0, float)
SCALE = Rule("a number >= 0", lambda v: _num(v) and v >= 0, float)
DISCOUNT = Rule("in (0, 1]", lambda v: _num(v) and 0 < v <= 1, float)
POLYAK = Rule("in [0, 1)", lambda v: _num(v) and 0 <= v < 1, float)
SWITCH = Rule("True or False", lambda v: isinstance(v, bool), boolean)
ENV_NUMBER = Rule("a number, None (off) or 'auto' (the env's default)",
                  lambda v: v is None or v == "auto" or _num(v), number_none_or_auto)
EP_LIMIT = Rule("a positive integer or None (the env's own limit)",
                lambda v: v is None or (_int(v) and v >= 1), integer_or_none)
DEVICE = Rule("cpu, cuda, cuda:N, mps or auto",
              lambda v: isinstance(v, str) and (v in ("cpu", "cuda", "mps", "auto") or
                                                (v.startswith("cuda:") and v[5:].isdigit())))


def setting(default, rule, doc):
    """A dataclass field with its rule and a one-line description (the CLI's help)."""
    return field(default=default, metadata=dict(rule=rule, doc=doc))


def check_settings(settings, prefix=""):
    """Raise a one-line UserError for the first field whose value breaks its rule."""
    for f in fields(settings):
        v, rule = getattr(settings, f.name), f.metadata["rule"]
        if not rule.ok(v):
            raise UserError(f"{prefix}{f.name} must be {rule.says}, got {v!r}")


def add_setting_options(parser, settings_class):
    """One --option per field, parsed by its rule; unset options stay None (the default)."""
    for f in fields(settings_class):
        parser.add_argument(f"--{f.name}", metavar="X", type=f.metadata["rule"].parse,
                            help=f"{f.metadata['doc']} ({f.default})")



def run_metadata():
    """What else config.json records. Determinism holds for one CPU model and one torch
    thread count only, so both are written down beside the library versions."""
    import gymnasium
    import matplotlib
    versions = dict(python=platform.python_version(), torch=torch.__version__,
                    gymnasium=gymnasium.__version__, numpy=np.__version__,
                    matplotlib=matplotlib.__version__)
    return dict(versions=versions, torch_threads=torch.get_num_threads(), cpu=cpu_model(),
                git=git_commit())


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


def cpu_model():
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def name_of(fn):
    """``module:function``, the form ``load_function`` reads back (config.json records it)."""
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', fn)}"


def load_function(name):
    """The function a ``module:function`` name (e.g. ``notebooks.port_mistakes:shared_noise``) names."""
    import importlib
    module, _, qualname = name.partition(":")
    try:
        fn = importlib.import_module(module)
        for part in qualname.split("."):
            fn = getattr(fn, part)
    except (ImportError, AttributeError, ValueError) as e:
        raise UserError(f"cannot load {name!r} (expected module:function): {e}") from None
    if not callable(fn):
        raise UserError(f"{name!r} is not a function")
    return fn


# ------------------------------------------------------------------------------------------
# Files written atomically, checkpoints, and the checks before a run starts or resumes
# ------------------------------------------------------------------------------------------
def atomic_write(path, write_fn, mode="w"):
    """Write ``path`` by calling ``write_fn(f)`` on a temp file, then ``os.replace``."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, mode) as f:
        write_fn(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


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


def read_config(run_dir):
    """The ``config.json`` of a run directory, or a UserError saying what is wrong."""
    path = os.path.join(run_dir, "config.json")
    if not os.path.isdir(run_dir):
        raise UserError(f"{run_dir} is not a directory")
    try:
        with open(path) as f:
            config = json.load(f)
    except FileNotFoundError:
        raise UserError(f"{run_dir} has no config.json; is it a run directory?") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{path} does not parse ({e})") from None
    if not isinstance(config, dict) or "env_id" not in config:
        raise UserError(f"{path} is not a td3.py config (no env_id)")
    return config


def open_run(output_dir, resume, config, ckpt_keys, may_change=()):
    """Check a run directory before anything in it changes; return its checkpoint or None.

    A new run refuses a directory that already holds one. A resumed run loads ``ckpt.pt``
    (every way it can be broken is one line), checks it has ``ckpt_keys``, and checks that
    ``config`` describes the same run as the checkpoint and the directory's config.json:
    only the keys in ``may_change`` (e.g. how many epochs to go) may differ.
    """
    ckpt_path = os.path.join(output_dir, "ckpt.pt")
    if not resume:
        if os.path.exists(os.path.join(output_dir, "progress.txt")) or os.path.exists(ckpt_path):
            raise UserError(f"{output_dir} already holds a run; continue it with --resume "
                            f"{output_dir}, or pick another --exp_name or --seed")
        return None
    try:
        ckpt = load_checkpoint(ckpt_path)
    except ValueError as e:  # missing, truncated, or not a plain weights file
        raise UserError(str(e)) from None
    missing = [k for k in ckpt_keys if k not in ckpt] if isinstance(ckpt, dict) else ["all"]
    if missing:
        raise UserError(f"not a td3.py checkpoint (it lacks {', '.join(missing[:3])})")
    as_json = lambda v: json.dumps(v, sort_keys=True, default=str)  # tuples and lists alike
    for key in ("env_id", "obs_dim", "act_dim"):
        if key in ckpt and ckpt[key] != config[key]:
            raise UserError(f"checkpoint is for {key}={ckpt[key]}, this run has {config[key]}")
    if "ac_kwargs" in ckpt and as_json(ckpt["ac_kwargs"]) != as_json(config["ac_kwargs"]):
        raise UserError(f"checkpoint networks {ckpt['ac_kwargs']} differ from {config['ac_kwargs']}")
    saved = read_config(output_dir)
    for key, value in config.items():
        if key not in may_change and key in saved and as_json(saved[key]) != as_json(value):
            raise UserError(f"{output_dir} was run with {key}={saved[key]!r}, not {value!r}; "
                            f"a resumed run keeps its settings")
    return ckpt


def remove_stale_temp_files(output_dir):
    """A kill during an atomic write leaves its temp file; the real file is intact."""
    for name in os.listdir(output_dir):
        if ".tmp" in name:
            os.remove(os.path.join(output_dir, name))


def training_state(parts, loop, rng, epoch_dict, **extra):
    """Everything an exact resume needs, as tensors and plain values (weights_only loads
    it): each part's state_dict (networks, optimizers, buffer), the loop's counters (a
    dataclass), the numpy and torch RNGs, and the values stored so far this epoch."""
    return {**{name: part.state_dict() for name, part in parts.items()}, **asdict(loop),
            "rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
            "epoch_dict": epoch_dict, **extra}


def restore_training_state(ckpt, parts, loop_class, rng, epoch_dict):
    """Put every part, both RNGs and the epoch's values back; return the loop's counters."""
    for name, part in parts.items():
        part.load_state_dict(ckpt[name])
    rng.bit_generator.state = ckpt["rng"]
    torch.set_rng_state(ckpt["torch_rng"])
    epoch_dict.update(ckpt["epoch_dict"])
    return loop_class(**{f.name: ckpt[f.name] for f in fields(loop_class)})


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, after the checkpoint was written; a script prints it and exits 130."""


@contextlib.contextmanager
def ctrl_c_requests_a_stop():
    """While training, Ctrl-C sets a flag that the loop checks after each step (it then
    writes a checkpoint and raises Interrupted); a second Ctrl-C stops at once. The
    caller's handler is put back on every way out, exceptions included."""
    flag = types.SimpleNamespace(requested=False)

    def handle(signum, frame):
        if flag.requested:
            raise KeyboardInterrupt
        flag.requested = True

    try:
        previous = signal.signal(signal.SIGINT, handle)
    except ValueError:  # not the main thread: leave Ctrl-C as it is
        previous = None
    try:
        yield flag
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


# ------------------------------------------------------------------------------------------
# The epoch table
# ------------------------------------------------------------------------------------------
def statistics(x):
    """Mean, std, min, max of a flat array (NaNs when it is empty)."""
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.size == 0:
        return (np.nan,) * 4
    return x.mean(), x.std(), x.min(), x.max()


def read_progress(path):
    """Header and rows (as lists of strings) of a ``progress.txt``."""
    with open(path) as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip()]
    if not lines:
        raise ValueError(f"{path} is empty")
    header = lines[0].split("\t")
    rows = [ln.split("\t") for ln in lines[1:]]
    bad = [i + 2 for i, r in enumerate(rows) if len(r) != len(header)]
    if bad:
        raise ValueError(f"{path} line {bad[0]} has a different number of columns than its header")
    return header, rows


class EpochLogger:
    """Spinning Up's EpochLogger, single-process.

    Args:
        output_dir: directory for ``progress.txt``, ``config.json`` and checkpoints.
        output_fname: name of the table file.
        exp_name: recorded in ``config.json``; ``plot.py`` groups runs by it.
        quiet: print nothing (the file is still written).
        progress: show the live progress line between tables (``start_progress``).
        resume_epochs: when resuming, keep the first this-many data rows of an existing
            ``progress.txt`` and continue after them; rows past them (written after the last
            checkpoint, before a crash) are dropped so no epoch is duplicated.
    """

    def __init__(self, output_dir, output_fname="progress.txt", exp_name=None,
                 resume_epochs=None, quiet=False, progress=True):
        self.output_dir = output_dir
        self.exp_name = exp_name
        self.quiet = quiet
        self.progress_line = ProgressLine(0, quiet=True)  # start_progress() makes a live one
        self.show_progress = progress and not quiet
        os.makedirs(output_dir, exist_ok=True)
        self.output_file = os.path.join(output_dir, output_fname)
        self.header, self.rows = None, []
        if resume_epochs:
            if not os.path.exists(self.output_file):
                raise ValueError(f"{self.output_file} is missing, but the checkpoint is at "
                                 f"epoch {resume_epochs}")
            self.header, rows = read_progress(self.output_file)
            if len(rows) < resume_epochs:
                raise ValueError(f"{self.output_file} has {len(rows)} rows, but the checkpoint "
                                 f"is at epoch {resume_epochs}")
            self.rows = rows[:resume_epochs]
        self.current_row, self.epoch_dict = {}, {}

    def check_finite(self, keys, module, epoch):
        """Stop on NaN/inf before it reaches a checkpoint, so the last good one stays."""
        for key in keys:
            vals = self.epoch_dict.get(key, [])
            if vals and not bool(torch.isfinite(torch.stack(vals)).all()):
                raise UserError(f"epoch {epoch}: {key} became NaN or inf; stopped, the last "
                                f"good checkpoint in {self.output_dir} is kept")
        for name, p in module.named_parameters():
            if not bool(torch.isfinite(p).all()):
                raise UserError(f"epoch {epoch}: parameter {name} became NaN or inf; stopped, "
                                f"the last good checkpoint in {self.output_dir} is kept")

    def start_progress(self, total_steps, start_step=0):
        """The live progress line (see ProgressLine), cleared before each table prints."""
        self.progress_line = ProgressLine(total_steps, start_step, quiet=not self.show_progress)
        return self.progress_line

    def save_config(self, config):
        """Write ``config`` (a dict) to ``config.json``; values json can't hold become str."""
        config = dict(config)
        if self.exp_name is not None:
            config["exp_name"] = self.exp_name
        text = json.dumps(config, indent=2, sort_keys=True, default=str)
        atomic_write(os.path.join(self.output_dir, "config.json"), lambda f: f.write(text))

    def store(self, **kwargs):
        """Save values to be reduced at the end of the epoch. Tensors are kept as they are
        and converted once, in ``log_tabular``, so storing costs no device sync."""
        for k, v in kwargs.items():
            self.epoch_dict.setdefault(k, []).append(v)

    def log_tabular(self, key, val=None, with_min_and_max=False, average_only=False):
        """Put ``key`` in this epoch's row: ``val`` if given, else statistics of what was
        stored under ``key`` (``Average``/``Std`` and, optionally, ``Max``/``Min``)."""
        if val is not None:
            self.current_row[key] = val
            return
        vals = self.epoch_dict.pop(key, [])
        if vals and isinstance(vals[0], torch.Tensor):
            flat = torch.cat([v.detach().reshape(-1).float() for v in vals]).cpu().numpy()
        else:
            flat = np.concatenate([np.ravel(v) for v in vals]) if vals else np.array([])
        mean, std, mn, mx = statistics(flat)
        self.current_row[("" if average_only else "Average") + key] = mean
        if not average_only:
            self.current_row["Std" + key] = std
        if with_min_and_max:
            self.current_row["Max" + key] = mx
            self.current_row["Min" + key] = mn

    def dump_tabular(self, title=None):
        """Print the row as a table and append it to ``progress.txt`` (atomically)."""
        keys = list(self.current_row)
        if self.header is None:
            self.header = keys
        elif keys != self.header:
            raise ValueError(f"columns changed between epochs: {self.header} -> {keys}")
        vals = [self.current_row[k] for k in keys]
        self.rows.append([_fmt(v) for v in vals])
        text = "\t".join(self.header) + "\n" + "".join("\t".join(r) + "\n" for r in self.rows)
        atomic_write(self.output_file, lambda f: f.write(text))
        if not self.quiet:
            self.progress_line.clear()
            self._print_table(keys, vals, title)
        self.current_row.clear()
        self.epoch_dict.clear()

    def _print_table(self, keys, vals, title):
        width = max(15, max(len(k) for k in keys))
        line = "-" * (width + 18)
        out = [line] + ([title, line] if title else [])
        for k, v in zip(keys, vals):
            shown = f"{v:8.3g}" if isinstance(v, (float, np.floating)) else str(v)
            out.append(f"| {k:>{width}} | {shown:>12} |")
        out.append(line)
        print("\n".join(out), flush=True)


def format_seconds(s):
    s = int(max(0, s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class ProgressLine:
    """Where a run is between two epoch tables: env steps, phase, steps/s, last return, time left.

    On a terminal it is one line redrawn in place twice a second. Elsewhere (a notebook, a
    log file) it prints a plain line after ``first`` seconds and then every ``every``
    seconds, so the output stays short; ``quiet`` turns it off. Our own few lines rather than
    tqdm: no extra dependency, and the time left is estimated only from steps taken while the
    networks train (the steps before run ~70x faster and would make any average rate useless).
    """

    def __init__(self, total_steps, start_step=0, quiet=False, stream=None, first=3.0, every=30.0):
        self.total, self.quiet = total_steps, quiet
        self.stream = stream or sys.stdout
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.every = 0.5 if self.tty else every
        self.last_time, self.last_step = time.monotonic(), start_step
        self.next_time = self.last_time + (0.5 if self.tty else first)
        self.rate = None  # env steps/s while learning, smoothed
        self.drawn = False

    def update(self, t, phase, last_return, updating):
        """Called every env step; does nothing until the next line is due (~100 ns).

        ``phase`` names what the run is doing; ``updating`` says the networks are being
        trained, so the rate now is the rate of the rest of the run (before that, steps are
        ~70x faster and a time-left estimate would mean nothing)."""
        now = time.monotonic()
        if self.quiet or now < self.next_time:
            return
        dt = max(now - self.last_time, 1e-9)
        rate = (t - self.last_step) / dt
        if updating:  # smoothed over ~10 s: updates come in bursts of update_every
            w = min(1.0, dt / 10.0) if self.rate else 1.0
            self.rate = rate = (1 - w) * (self.rate or 0.0) + w * rate
        left = f"~{format_seconds((self.total - t) / rate)} left" if updating and rate > 0 \
            else "time left: once updates start"
        ret = "no episode ended yet" if last_return is None else f"last episode {last_return:.1f}"
        line = f"env step {t:,}/{self.total:,} | {phase} | {rate:,.0f} steps/s | {ret} | {left}"
        if self.tty:
            self.stream.write("\r\x1b[K" + line)
            self.drawn = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.last_time, self.last_step, self.next_time = now, t, now + self.every

    def clear(self):
        """Erase the redrawn line before other output (an epoch table) is printed."""
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False


def _fmt(v):
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, torch.Tensor):
        return repr(v.item())
    return str(v)
