"""Learning curves from saved runs: ``progress.txt`` files in, a PNG (or a window) out.

    python plot.py data/td3-BipedalWalker-v3 --out curve.png
    python plot.py results/ablations --value TestEpRet TestQBias --smooth 3 --out ab.png

Every ``progress.txt`` below the given directories is one run. Runs are grouped by the
``exp_name`` in the ``config.json`` beside them (else by their directory's parent); each
group is drawn as the mean across its seeds with a +-1 std band, or one line per run with
``--count``. ``--value TestEpRet`` finds the column ``AverageTestEpRet``, as Spinning Up's
plotter does. Uses only numpy and matplotlib, and writes a file when there is no screen.
"""
import json
import os

import numpy as np

import logger  # progress.txt's one parser; neither it nor runs.py imports torch
from cli import ArgumentParser, UserError, run_main


def read_table(path):
    """A ``progress.txt`` as ``{column: float array}``; a broken file is one UserError line."""
    try:
        return logger.read_table(path)
    except ValueError as e:
        raise UserError(str(e)) from None


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
            try:
                with open(os.path.join(root, "config.json")) as f:
                    exp_name = json.load(f).get("exp_name") or exp_name
            except (OSError, ValueError):
                pass
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


def plot_value(ax, runs, value="TestEpRet", xaxis="TotalEnvInteracts", smooth_n=1,
               count=False, legend=None, hline=None, legend_out=False):
    """Draw one panel on a matplotlib ``ax``; returns the resolved column name."""
    value, xaxis = resolve_column(runs, value), resolve_column(runs, xaxis)
    curves = group_curves(runs, value, xaxis, smooth_n)
    names = list(curves)
    if legend and len(legend) != len(names):
        raise UserError(f"--legend got {len(legend)} names for {len(names)} groups: {names}")
    k = 0  # with --count every run gets its own colour
    for i, name in enumerate(names):
        c, label, color = curves[name], (legend[i] if legend else name), f"C{i}"
        if count:
            for r in c["runs"]:
                ax.plot(r["data"][xaxis], smooth(r["data"][value], smooth_n), color=f"C{k}",
                        alpha=0.85, label=f"{label}: {os.path.basename(r['path'])}")
                k += 1
        else:
            # Solid where every run has data; dotted where some had stopped (fewer seeds).
            full = c["have"] == c["n"]
            ax.plot(c["x"], np.where(full, c["mean"], np.nan), color=color,
                    label=f"{label} (n={c['n']})")
            if not full.all():
                last_full = np.flatnonzero(full)[-1] if full.any() else 0
                part = np.arange(len(full)) >= last_full
                ax.plot(c["x"][part], c["mean"][part], color=color, linestyle=":",
                        label=f"{label}: fewer runs (some stopped)")
            ax.fill_between(c["x"], c["mean"] - c["std"], c["mean"] + c["std"],
                            color=color, alpha=0.2)
    if hline is not None:
        ax.axhline(hline, color="k", linestyle="--", linewidth=1, label=f"{hline:g}")
    ax.set_xlabel(xaxis)
    ax.set_ylabel(value)
    ax.grid(alpha=0.3)
    if legend_out:  # beside the panel, never over the curves
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    else:
        ax.legend(fontsize=8)
    return value


def make_plots(dirs, values=("TestEpRet",), xaxis="TotalEnvInteracts", smooth_n=1,
               count=False, legend=None, select=None, exclude=None, hline=None, title=None,
               out=None, xmax=None, ylim=None, legend_out=False):
    """The whole CLI as a function: one panel per value; saves to ``out`` if given."""
    import matplotlib
    if out or not os.environ.get("DISPLAY"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = get_datasets(dirs, select, exclude)
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
                         legend_out)
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
    p.add_argument("--out", "-o", help="write the figure to this file instead of a window")
    args = p.parse_args(argv)
    if args.smooth < 1:
        raise UserError(f"--smooth must be a positive integer, got {args.smooth}")
    make_plots(args.dirs, args.value, args.xaxis, args.smooth, args.count, args.legend,
               args.select, args.exclude, args.hline, args.title, args.out, args.xmax,
               args.ylim, args.legend_out)
    if args.out:
        print(f"wrote {args.out}")


if __name__ == "__main__":
    run_main(main)
