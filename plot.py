"""Learning curves from saved runs: ``progress.txt`` files in, a PNG (or a window) out.

    python plot.py data/td3-BipedalWalker-v3 --out curve.png
    python plot.py results/ablations --value TestEpRet TestQBias --smooth 3 --out ab.png

Every ``progress.txt`` below the given directories is one run. Runs are grouped by the
``exp_name`` in the ``config.json`` beside them (else by their directory's parent); each
group is drawn as the mean across its seeds with a +-1 std band, or one line per run with
``--count``. ``--value TestEpRet`` finds the column ``AverageTestEpRet``, as Spinning Up's
plotter does. Uses only numpy and matplotlib, and writes a file when there is no screen.

Colours: a group whose name says which of the project's variants it is (``td3-<env>`` for the
default command, ``td3-<env>-<variant>`` for sweep.py's ablations and port mistakes) gets that
variant's colour from ``VARIANT_COLORS`` in every figure, whatever else is drawn beside it;
``--color GROUP=COLOR`` (a group name, a ``--legend`` name or a variant) overrides it.
"""
import os
import re

import numpy as np
from matplotlib.colors import is_color_like, to_hex, to_rgb

import logger  # progress.txt's one parser; neither it nor run.directory imports torch
import variants
from run.directory import read_config
from run.errors import ArgumentParser, UserError, run_main


# One colour per variant, in every figure of the project (variants.py's table).
VARIANT_COLORS = variants.colors()


def variant_of(name):
    """The variant a group's name says it is, or None: ``td3-BipedalWalker-v3`` -> ``td3``,
    ``td3-BipedalWalker-v3-no_twin-no_delay-no_smoothing`` -> ``ddpg``, ``no_twin`` -> itself."""
    if name in VARIANT_COLORS:
        return name
    m = re.fullmatch(r"td3-.+?-v\d+(?:-(.+))?", name)
    if not m:
        return None
    rest = m.group(1)
    if rest is None:
        return "td3"
    rest = variants.from_suffix(rest)
    return rest if rest in VARIANT_COLORS else None


def group_colors(names, legend=None, colors=None):
    """``{group name: colour}``. ``colors`` maps a group name, its legend name or its variant
    to a colour and wins; then the variant's colour of VARIANT_COLORS; any other group gets
    the first colour of matplotlib's cycle that no group of this figure has."""
    colors, out = colors or {}, {}
    labels = dict(zip(names, legend)) if legend else {}
    for name in names:
        variant = variant_of(name)
        for key in (name, labels.get(name), variant):
            if key is not None and key in colors:
                out[name] = colors[key]
                break
        else:
            if variant is not None:
                out[name] = VARIANT_COLORS[variant]
    taken = {to_hex(c) for c in out.values()}
    free = [c for c in (f"C{k}" for k in range(10)) if to_hex(c) not in taken] or ["C0"]
    rest = [name for name in names if name not in out]
    out.update({name: free[i % len(free)] for i, name in enumerate(rest)})
    return {name: out[name] for name in names}


def parse_colors(items):
    """``["GROUP=COLOR", ...]`` (``--color``) to a dict; a bad item is one UserError line."""
    out = {}
    for item in items or ():
        group, eq, color = item.partition("=")
        if not eq or not group.strip() or not color.strip():
            raise UserError(f"--color wants GROUP=COLOR (e.g. no_twin=orange), got {item!r}")
        if not is_color_like(color.strip()):
            raise UserError(f"--color {item}: {color.strip()!r} is not a matplotlib colour")
        out[group.strip()] = color.strip()
    return out


def _shade(color, f):
    """``color`` mixed towards black (f < 0) or white (f > 0) by |f|."""
    rgb = np.array(to_rgb(color))
    return tuple(rgb * (1 + f) if f < 0 else rgb + (1 - rgb) * f)


def read_table(path):
    """A ``progress.txt`` (read by logger.py, its one parser) as ``{column: float array}``; a
    broken file is one UserError line."""
    try:
        header, rows = logger.read_progress(path)
    except ValueError as e:  # empty, or a row with another number of columns
        raise UserError(str(e)) from None
    try:
        data = np.array(rows, dtype=float).reshape(len(rows), len(header))
    except ValueError:
        raise UserError(f"{path} holds values that are not numbers") from None
    return {k: data[:, i] for i, k in enumerate(header)}


def get_datasets(dirs, select=None, exclude=None):
    """Find runs below ``dirs``. Returns a list of dicts: ``path``, ``exp_name``, ``data``.

    ``select``/``exclude`` keep or drop runs whose path contains any of the given strings.
    """
    runs = []
    for top in dirs:
        if not os.path.exists(top):
            raise UserError(f"{top} does not exist")
        found = sorted(root for root, _, files in os.walk(top) if "progress.txt" in files)
        if not found:
            raise UserError(f"no progress.txt found under {top}")
        for root in found:
            if select and not any(s in root for s in select):
                continue
            if exclude and any(s in root for s in exclude):
                continue
            exp_name = os.path.basename(os.path.dirname(os.path.abspath(root)))
            exp_name = read_config(root, required=False).get("exp_name") or exp_name
            data = read_table(os.path.join(root, "progress.txt"))
            if len(next(iter(data.values()))):
                runs.append(dict(path=root, exp_name=exp_name, data=data))
    if not runs:
        raise UserError("no run with data is left after --select/--exclude")
    return runs


def resolve_column(runs, name):
    """``TestEpRet`` -> ``AverageTestEpRet`` when only the latter exists (Spinning Up's rule)."""
    cols = set(runs[0]["data"])
    for run in runs[1:]:
        cols &= set(run["data"])
    for cand in (name, "Average" + name):
        if cand in cols:
            return cand
    raise UserError(f"no column {name!r}; the columns are: {', '.join(sorted(cols))}")


def smooth(y, n):
    """Moving average over ``n`` rows, fair at the edges (a window never reads past them)."""
    if n <= 1 or len(y) == 0:
        return y
    k = np.ones(n)
    return np.convolve(y, k, "same") / np.convolve(np.ones_like(y), k, "same")


def group_curves(runs, value, xaxis, smooth_n=1):
    """Mean and std across the runs of each exp_name, on the union of their x values
    (a run that stopped early counts only where it has data)."""
    groups = {}
    for run in runs:
        groups.setdefault(run["exp_name"], []).append(run)
    out = {}
    for name, members in groups.items():
        xs = np.unique(np.concatenate([r["data"][xaxis] for r in members]))
        ys = np.full((len(members), len(xs)), np.nan)
        for i, r in enumerate(members):
            x, y = r["data"][xaxis], smooth(r["data"][value], smooth_n)
            inside = (xs >= x.min()) & (xs <= x.max())
            ys[i, inside] = np.interp(xs[inside], x, y)
        out[name] = dict(x=xs, mean=np.nanmean(ys, axis=0), std=np.nanstd(ys, axis=0),
                         runs=members, n=len(members), have=(~np.isnan(ys)).sum(axis=0))
    return out


# Distinct colours for many seeds of one group (matplotlib's tab20, dark shades first).
_SEED_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
                "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"]


def _natural(text):
    """A sort key that puts s2 before s10."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", os.path.basename(text))]


def plot_value(ax, runs, value="TestEpRet", xaxis="TotalEnvInteracts", smooth_n=1,
               count=False, legend=None, hline=None, legend_out=False, colors=None):
    """Draw one panel on a matplotlib ``ax``; returns the resolved column name.

    ``colors`` maps a group name, a legend name or a variant to a colour (see
    ``group_colors``); a group of the project's variants gets its own colour without it."""
    value, xaxis = resolve_column(runs, value), resolve_column(runs, xaxis)
    curves = group_curves(runs, value, xaxis, smooth_n)
    names = list(curves)
    if legend and len(legend) != len(names):
        raise UserError(f"--legend got {len(legend)} names for {len(names)} groups: {names}")
    palette = group_colors(names, legend, colors)
    for i, name in enumerate(names):
        c, label, color = curves[name], (legend[i] if legend else name), palette[name]
        if count:  # each run on its own line, in seed order (s2 before s10)
            shades = np.linspace(-0.1, 0.3, c["n"]) if c["n"] > 1 else [0.0]
            many = len(names) == 1 and c["n"] > 4  # one group of many seeds: a colour each
            for j, r in enumerate(sorted(c["runs"], key=lambda r: _natural(r["path"]))):
                ax.plot(r["data"][xaxis], smooth(r["data"][value], smooth_n),
                        color=_SEED_COLORS[j % len(_SEED_COLORS)] if many else
                        _shade(color, shades[j]),
                        linestyle="-" if many else ("-", "--", ":", "-.")[j % 4],
                        label=f"{label}: {os.path.basename(r['path'])}")
        else:
            # Solid where every run has data; dotted where some had stopped (fewer seeds).
            full = c["have"] == c["n"]
            ax.plot(c["x"], np.where(full, c["mean"], np.nan), color=color,
                    label=f"{label} (n={c['n']})")
            if not full.all():
                last_full = np.flatnonzero(full)[-1] if full.any() else 0
                part = np.arange(len(full)) >= last_full
                ax.plot(c["x"][part], c["mean"][part], color=color, linestyle=":",
                        label=f"{label}: fewer runs (the others have ended)")
            ax.fill_between(c["x"], c["mean"] - c["std"], c["mean"] + c["std"],
                            color=color, alpha=0.2)
    if hline is not None:
        ax.axhline(hline, color="k", linestyle="--", linewidth=1, label=f"{hline:g}")
    ax.set_xlabel(AXIS_WORDS.get(xaxis, xaxis))
    ax.set_ylabel(AXIS_WORDS.get(value, value))
    ax.grid(alpha=0.3)
    if legend_out:  # beside the panel, never over the curves
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    else:
        ax.legend(fontsize=8)
    return value


# The axes in words, for the columns a reader meets first; any other column keeps its name.
AXIS_WORDS = {"TotalEnvInteracts": "env steps", "AverageTestEpRet": "test return (noise-free episodes)",
              "AverageEpRet": "training return", "Epoch": "epoch", "Time": "seconds"}


def make_plots(dirs, values=("TestEpRet",), xaxis="TotalEnvInteracts", smooth_n=1,
               count=False, legend=None, select=None, exclude=None, hline=None, title=None,
               out=None, xmax=None, ylim=None, legend_out=False, colors=None):
    """The whole CLI as a function: one panel per value; saves to ``out`` if given."""
    import matplotlib  # here: the backend is chosen before pyplot is imported
    if out or not os.environ.get("DISPLAY"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = get_datasets(dirs, select, exclude)
    names = list(dict.fromkeys(r["exp_name"] for r in runs))
    known = {*names, *(legend or ()), *filter(None, map(variant_of, names))}
    unknown = [k for k in (colors or {}) if k not in known]
    if unknown:
        raise UserError(f"--color {unknown[0]}: no such group, legend name or variant here; "
                        f"the groups are: {', '.join(names)}")
    if xmax is not None:  # e.g. compare runs of different lengths on their common part
        x = resolve_column(runs, xaxis)
        for r in runs:
            keep = r["data"][x] <= xmax
            r["data"] = {k: v[keep] for k, v in r["data"].items()}
    width = 6.5 + (2.5 if legend_out else 0)
    fig, axes = plt.subplots(1, len(values), figsize=(width * len(values), 4.5), squeeze=False)
    for ax, value in zip(axes[0], values):
        col = plot_value(ax, runs, value, xaxis, smooth_n, count, legend,
                         hline if value in ("TestEpRet", "EpRet", "AverageTestEpRet") else None,
                         legend_out, colors)
        if ylim:
            ax.set_ylim(*ylim)
        ax.set_title(title or col)
    fig.tight_layout()
    if out:
        fig.savefig(out, dpi=110)
        plt.close(fig)
    elif matplotlib.get_backend().lower() != "agg":
        plt.show()
    else:
        raise UserError("no display to show the plot on; give --out FILE.png")
    return fig


def main(argv=None):
    p = ArgumentParser(description="Plot learning curves from progress.txt files.")
    p.add_argument("dirs", nargs="+", help="run directories, or directories above them")
    p.add_argument("--value", "-y", nargs="+", default=["TestEpRet"],
                   help="column(s) to plot, e.g. TestEpRet LossQ (one panel each)")
    p.add_argument("--xaxis", "-x", default="TotalEnvInteracts")
    p.add_argument("--smooth", "-s", type=int, default=1, help="moving-average window in rows")
    p.add_argument("--legend", "-l", nargs="+", help="one name per group, in order")
    p.add_argument("--select", nargs="+", help="keep runs whose path contains one of these")
    p.add_argument("--exclude", nargs="+", help="drop runs whose path contains one of these")
    p.add_argument("--count", action="store_true", help="one line per run, not mean +- std")
    p.add_argument("--hline", type=float, help="a dashed line at this return (e.g. 300)")
    p.add_argument("--title", help="panel title (default: the column)")
    p.add_argument("--xmax", type=float, help="only rows with x at most this")
    p.add_argument("--ylim", type=float, nargs=2, metavar=("LOW", "HIGH"), help="y range")
    p.add_argument("--legend_out", action="store_true", help="legend beside the panel")
    p.add_argument("--color", action="append", metavar="GROUP=COLOR",
                   help="a group's colour (GROUP: its exp_name, --legend name or variant, e.g. "
                        "no_twin=orange); repeat for more. The project's variants have their own")
    p.add_argument("--out", "-o", help="write the figure to this file instead of a window")
    args = p.parse_args(argv)
    if args.smooth < 1:
        raise UserError(f"--smooth must be a positive integer, got {args.smooth}")
    make_plots(args.dirs, args.value, args.xaxis, args.smooth, args.count, args.legend,
               args.select, args.exclude, args.hline, args.title, args.out, args.xmax,
               args.ylim, args.legend_out, parse_colors(args.color))
    if args.out:
        print(f"wrote {args.out}")


if __name__ == "__main__":
    run_main(main)
