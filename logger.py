"""Epoch logging in Spinning Up's format, and files written so that a crash loses nothing.

``EpochLogger`` collects values during an epoch (``store``), reduces them to one row
(``log_tabular``), prints that row as a table and appends it to ``progress.txt``
(``dump_tabular``). ``progress.txt`` is tab-separated with one header line, the format
Spinning Up's ``plot.py`` and ``pandas.read_table`` read.

Every file is written atomically: to a temporary file in the same directory, flushed,
fsynced, then moved over the old one with ``os.replace``. A process killed at any moment
leaves either the old file or the new one, never half of one.

This file knows nothing about TD3, checkpoints, settings or the command line (the run
package keeps a run's housekeeping). It does not need torch either: tensors stored during an
epoch are converted with torch only when the row is made, so plot.py can read
``progress.txt`` through ``read_progress`` without loading torch.
"""
import contextlib
import json
import os

import numpy as np


# ------------------------------------------------------------------------------------------
# Files written atomically
# ------------------------------------------------------------------------------------------
TEMP_SUFFIX = ".tmp"  # then the writer's pid: ckpt.pt.tmp1234


def is_temp_file(name, of):
    """Whether ``name`` is a temp file that atomic_write leaves when killed mid-write while
    writing one of the files named in ``of``."""
    stem, sep, pid = name.rpartition(TEMP_SUFFIX)
    return bool(sep and stem in of and pid.isdigit())


def atomic_write(path, write_fn, mode="w"):
    """Write ``path`` by calling ``write_fn(f)`` on a temp file, then ``os.replace``: a kill at
    any moment leaves the old file or the new one. A write that fails removes its temp file."""
    tmp = f"{path}{TEMP_SUFFIX}{os.getpid()}"
    try:
        with open(tmp, mode) as f:
            write_fn(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


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
    """Header and rows (as lists of strings) of a ``progress.txt``; a row with another
    number of columns than the header is a ValueError naming its line."""
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
        output_dir: directory for ``progress.txt`` and ``config.json`` (made when first
            written to).
        output_fname: name of the table file.
        exp_name: recorded in ``config.json``; ``plot.py`` groups runs by it.
        quiet: print nothing (the file is still written).
    """

    def __init__(self, output_dir, output_fname="progress.txt", exp_name=None, quiet=False):
        self.output_dir = output_dir
        self.exp_name = exp_name
        self.quiet = quiet
        self.output_file = os.path.join(output_dir, output_fname)
        self.header, self.rows = None, []
        self.current_row, self.epoch_dict = {}, {}

    def resume(self, epochs):
        """Go on after the first ``epochs`` rows of the existing ``progress.txt``: rows past
        them (written after the last checkpoint, before a crash) are dropped, so that no
        epoch is written twice."""
        if not os.path.exists(self.output_file):
            if epochs == 0:  # stopped within its first epoch (Ctrl-C): no row to keep
                return
            raise ValueError(f"{self.output_file} is missing; the checkpoint is at epoch {epochs}")
        self.header, rows = read_progress(self.output_file)
        if len(rows) < epochs:
            raise ValueError(f"{self.output_file} has {len(rows)} rows, but the checkpoint is at "
                             f"epoch {epochs}")
        self.rows = rows[:epochs]

    def _write(self, name, text):
        os.makedirs(self.output_dir, exist_ok=True)
        atomic_write(os.path.join(self.output_dir, name), lambda f: f.write(text))

    def save_config(self, config):
        """Write ``config`` (a dict) to ``config.json``; values json can't hold become str."""
        config = dict(config)
        if self.exp_name is not None:
            config["exp_name"] = self.exp_name
        self._write("config.json", json.dumps(config, indent=2, sort_keys=True, default=str))

    def store(self, **kwargs):
        """Save values to be reduced at the end of the epoch. Tensors are kept, detached from
        their graph (a stored loss would otherwise hold its whole graph until the epoch ends),
        and converted once, in ``log_tabular``, so storing costs no device sync."""
        for k, v in kwargs.items():
            self.epoch_dict.setdefault(k, []).append(v.detach() if hasattr(v, "detach") else v)

    def log_tabular(self, key, val=None, with_min_and_max=False, average_only=False):
        """Put ``key`` in this epoch's row: ``val`` if given, else statistics of what was
        stored under ``key`` (``Average``/``Std`` and, optionally, ``Max``/``Min``)."""
        if val is not None:
            self.current_row[key] = val
            return
        vals = self.epoch_dict.pop(key, [])
        if vals and hasattr(vals[0], "detach"):  # torch tensors: one conversion per epoch
            import torch  # only here: plot.py reads progress.txt through this file without torch
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
        elif keys != self.header:  # e.g. a run resumed by code that logs another column
            new = [k for k in keys if k not in self.header]
            gone = [k for k in self.header if k not in keys]
            raise ValueError(f"this epoch's columns differ from {self.output_file}'s (new: "
                             f"{', '.join(new) or 'none'}; missing: {', '.join(gone) or 'none'}, "
                             f"or in another order)")
        vals = [self.current_row[k] for k in keys]
        self.rows.append([_fmt(v) for v in vals])
        self._write(os.path.basename(self.output_file),
                    "\t".join(self.header) + "\n" + "".join("\t".join(r) + "\n" for r in self.rows))
        if not self.quiet:
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


def _fmt(v):
    if hasattr(v, "detach"):  # a torch scalar
        v = v.item()
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    return str(v)
