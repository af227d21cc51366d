"""Re-check README's learning claims from the committed files in results/.

    python benchmarks/check_results.py

Reads every run's progress.txt and config.json under results/ and prints, per run: the env
steps and wall-clock minutes to the first epoch whose AverageTestEpRet reaches the threshold,
the best and the final test return, how many of the later epochs stayed at the threshold
(and the lowest return among them), and the critic's bias on the test states (TestQBias,
estimated minus true value) over the second half of the epochs: its median and in how many
epochs it was above 0. Then one summary line per group of seeds.

Thresholds: the env's reward_threshold (BipedalWalker-v3: 300) or, for Pendulum-v1, which has
none, -200. Comparison groups are cut to the length every seed of them was run to, so that
seeds run longer count only on the common part: results/ablations (each trick switched off)
at 200,000 env steps, results/porting (one porting mistake per run, plus the TD3 reference
from results/ablations and the authors' settings at seed 0 from results/defaults) at 150,000,
results/defaults (the TD3 authors' settings) at 200,000.
"""
import argparse
import json
import os
import statistics
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from plot import read_table  # noqa: E402

THRESHOLDS = {"BipedalWalker-v3": 300.0, "Pendulum-v1": -200.0}
COMPARISONS = [("ablations", 200_000), ("defaults", 200_000), ("porting", 150_000)]


def runs_under(top):
    return sorted(root for root, _, files in os.walk(top) if "progress.txt" in files)


def load(run, xmax=None):
    data = read_table(os.path.join(run, "progress.txt"))
    if xmax is not None:
        keep = data["TotalEnvInteracts"] <= xmax
        data = {k: v[keep] for k, v in data.items()}
    with open(os.path.join(run, "config.json")) as f:
        return data, json.load(f)


def measure(data, thr):
    """The numbers of one run, as a dict (see the module docstring)."""
    ret, x = data["AverageTestEpRet"], data["TotalEnvInteracts"]
    hit = [i for i, v in enumerate(ret) if v >= thr]
    after = ret[hit[0] + 1:] if hit else ret[:0]
    half = data["TestQBias"][len(ret) // 2:]
    return dict(steps_to=int(x[hit[0]]) if hit else None,
                minutes_to=data["Time"][hit[0]] / 60 if hit else None,
                best=float(ret.max()), final=float(ret[-1]), end=int(x[-1]),
                held=int((after >= thr).sum()), after=len(after),
                lowest_after=float(after.min()) if len(after) else None,
                bias_median=float(np.median(half)), bias_above=int((half > 0).sum()),
                bias_epochs=len(half))


def run_line(name, seed, m, thr):
    where = (f"{m['steps_to']:>8,} env steps, {m['minutes_to']:5.1f} min to {thr:g}"
             if m["steps_to"] is not None else f"{'not reached':>33}")
    held = (f"; after it {m['held']} of {m['after']} epochs >= {thr:g}, lowest "
            f"{m['lowest_after']:.1f}" if m["after"] else "")
    return (f"  {name} seed {seed}: {where}; best {m['best']:7.1f}; final {m['final']:7.1f} at "
            f"{m['end']:,}; TestQBias (2nd half) median {m['bias_median']:+.1f}, above 0 in "
            f"{m['bias_above']} of {m['bias_epochs']}{held}")


def summary_line(name, ms, thr):
    reached = [m["steps_to"] for m in ms if m["steps_to"] is not None]
    med = f"{statistics.median(reached):,.0f}" if reached else "n/a"
    mean_sd = lambda v: f"{np.mean(v):.1f} ± {np.std(v):.1f}"
    biases = ", ".join(f"{m['bias_median']:+.1f}" for m in ms)
    return (f"  => {name}: {len(ms)} seeds; {len(reached)} reached {thr:g} (median env steps "
            f"{med}); best {mean_sd([m['best'] for m in ms])}; final "
            f"{mean_sd([m['final'] for m in ms])}; later epochs >= {thr:g}: "
            f"{sum(m['held'] for m in ms)} of {sum(m['after'] for m in ms)}; TestQBias 2nd-half "
            f"medians {biases}")


def report(runs, thr, xmax=None):
    """One line per run, then one summary line per exp_name."""
    groups = {}
    for run in runs:
        data, cfg = load(run, xmax)
        m = measure(data, thr)
        name = cfg.get("exp_name", "?")
        print(run_line(name, cfg["seed"], m, thr))
        groups.setdefault(name, []).append(m)
    for name, ms in groups.items():
        print(summary_line(name, ms, thr))


def main(results=os.path.join(ROOT, "results")):
    for env_id in sorted(os.listdir(results)):
        top = os.path.join(results, env_id)
        if env_id in THRESHOLDS and os.path.isdir(top):
            print(f"{env_id} (threshold {THRESHOLDS[env_id]:g}):")
            report(runs_under(top), THRESHOLDS[env_id])
    for name, xmax in COMPARISONS:
        top = os.path.join(results, name)
        if not os.path.isdir(top):
            continue
        runs = runs_under(top)
        if name == "porting":  # TD3's ablation runs are the reference; the authors' settings
            # at seed 0 are results/defaults' run, of which the first 150,000 steps count here
            runs = (runs_under(os.path.join(results, "ablations", "td3-BipedalWalker-v3")) + runs
                    + runs_under(os.path.join(results, "defaults")))
        print(f"{name}, BipedalWalker-v3, first {xmax:,} env steps (threshold 300):")
        report(runs, 300.0, xmax)


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                            epilog="Prints a report; it takes no options.").parse_args()
    main()
