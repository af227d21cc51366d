"""Re-check README's learning claims from the committed files in results/.

    python benchmarks/check_results.py

For each env directory under results/ (comparisons aside), reads every run's progress.txt and
config.json and prints, per seed, the env steps and wall-clock minutes to the first epoch
whose AverageTestEpRet reaches the threshold, the best test return, and how many of the
later epochs stayed at the threshold (with the lowest return among them); then the number of
seeds solved and the median steps to the threshold. Thresholds: the env's reward_threshold
(BipedalWalker-v3: 300) or, for Pendulum-v1, which has none, -200. Then the same lines for
the BipedalWalker-v3 comparison runs: results/ablations (each trick switched off) and
results/defaults (the TD3 authors' discount and learning rates against ours), each line with
the critic's bias (estimated minus true value) over the second half of the run's epochs.
"""
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from plot import read_table  # noqa: E402

THRESHOLDS = {"BipedalWalker-v3": 300.0, "Pendulum-v1": -200.0}


def runs_under(top):
    return sorted(root for root, _, files in os.walk(top) if "progress.txt" in files)


def report(top, thr):
    """Print one line per run below ``top``; return the env steps to ``thr`` of those that got there."""
    steps_to = []
    for run in runs_under(top):
        data = read_table(os.path.join(run, "progress.txt"))
        with open(os.path.join(run, "config.json")) as f:
            cfg = json.load(f)
        ret, x = data["AverageTestEpRet"], data["TotalEnvInteracts"]
        hit = [i for i, v in enumerate(ret) if v >= thr]
        # The critic's bias on the test states, over the second half of the run's epochs
        # (after the early learning): its median, and in how many epochs it was above 0.
        half = data["TestQBias"][len(ret) // 2:] if "TestQBias" in data else ret[:0]
        bias = (f"TestQBias (2nd half) median {statistics.median(half):+.1f}, above 0 in "
                f"{int((half > 0).sum())} of {len(half)} epochs" if len(half) else "no TestQBias")
        where = (f"{int(x[hit[0]]):>8,} env steps, {data['Time'][hit[0]] / 60:5.1f} min to {thr:g}"
                 if hit else "not reached")
        if hit:
            steps_to.append(x[hit[0]])
        # Staying solved: of the epochs after the first one at thr, how many are at thr too,
        # and the lowest test return among them.
        after = ret[hit[0] + 1:] if hit else ret[:0]
        held = (f"; after it {int((after >= thr).sum())} of {len(after)} epochs >= {thr:g}, "
                f"lowest {after.min():.1f}" if len(after) else "")
        print(f"  {cfg.get('exp_name', '?')} seed {cfg['seed']}: {where}; best {max(ret):7.1f}; "
              f"last {ret[-1]:7.1f} at {int(x[-1]):,} steps; {bias}{held}")
    return steps_to


def main(results=os.path.join(ROOT, "results")):
    for env_id in sorted(os.listdir(results)):
        top = os.path.join(results, env_id)
        if env_id not in THRESHOLDS or not os.path.isdir(top):
            continue
        thr = THRESHOLDS[env_id]
        print(f"{env_id} (threshold {thr:g}):")
        steps_to = report(top, thr)
        med = f"{statistics.median(steps_to):,.0f}" if steps_to else "n/a"
        print(f"  solved {len(steps_to)} of {len(runs_under(top))} seeds; median env steps to {thr:g}: {med}")
    for name in ("ablations", "defaults"):
        top = os.path.join(results, name)
        if os.path.isdir(top):
            print(f"{name}, BipedalWalker-v3 (threshold 300):")
            report(top, 300.0)


if __name__ == "__main__":
    main()
