"""Re-check README's learning claims from the committed files in results/.

    python benchmarks/check_results.py

For each env directory under results/ (ablations aside), reads every run's progress.txt and
config.json and prints, per seed, the env steps and wall-clock minutes to the first epoch
whose AverageTestEpRet reaches the threshold, and the best test return; then the number of
seeds solved and the median steps to the threshold. Thresholds: the env's reward_threshold
(BipedalWalker-v3: 300) or, for Pendulum-v1, which has none, -200.
"""
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from plot import read_table  # noqa: E402

THRESHOLDS = {"BipedalWalker-v3": 300.0, "Pendulum-v1": -200.0}


def main(results=os.path.join(ROOT, "results")):
    for env_id in sorted(os.listdir(results)):
        top = os.path.join(results, env_id)
        if env_id not in THRESHOLDS or not os.path.isdir(top):
            continue
        thr, steps_to = THRESHOLDS[env_id], []
        runs = sorted(root for root, _, files in os.walk(top) if "progress.txt" in files)
        print(f"{env_id} (threshold {thr:g}):")
        for run in runs:
            data = read_table(os.path.join(run, "progress.txt"))
            with open(os.path.join(run, "config.json")) as f:
                seed = json.load(f)["seed"]
            ret = data["AverageTestEpRet"]
            hit = [i for i, v in enumerate(ret) if v >= thr]
            best = max(ret)
            if hit:
                i = hit[0]
                steps_to.append(data["TotalEnvInteracts"][i])
                print(f"  seed {seed}: {int(data['TotalEnvInteracts'][i]):>8,} env steps, "
                      f"{data['Time'][i] / 60:5.1f} min to {thr:g}; best {best:7.1f}; "
                      f"ran {int(data['TotalEnvInteracts'][-1]):,} steps")
            else:
                print(f"  seed {seed}: not reached in {int(data['TotalEnvInteracts'][-1]):,} "
                      f"steps; best {best:7.1f}")
        med = f"{statistics.median(steps_to):,.0f}" if steps_to else "n/a"
        print(f"  solved {len(steps_to)} of {len(runs)} seeds; median env steps to {thr:g}: {med}")


if __name__ == "__main__":
    main()
