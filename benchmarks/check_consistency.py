"""The choosing data behind the registered "is this run consistent with correct TD3?" rule
(docs/diagnose.md, "The consistency rule, written down before its test").

    python benchmarks/check_consistency.py

For BipedalWalker-v3's committed healthy runs (seeds 0-2 and 10-19) and its committed mistakes
and ablations, each run's score is its distance to the nearest healthy run: per column (on
diagnose.py's scales), the mean over the common env steps of |a - b| / s, s the median over the
steps of the healthy runs' standard deviation across runs, each step's term capped; then the
mean over the columns. The limit is the largest healthy score, each healthy run against the
others; a run above it is not consistent with correct TD3. It prints the candidates the rule
was chosen among (nearest or the mean of the 2 or 3 nearest, the cap, with or without
TestQBias) and the chosen rule's scores. It reads only the choosing data: results/heldout/,
the test runs, are left out. Run by hand; pytest does not collect benchmarks/.
"""
import os
import re
import sys
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import diagnose  # noqa: E402
from variants import STOPPING  # noqa: E402  the mistakes that stop learning
CHOSEN = dict(nearest=1, cap=10.0, columns=tuple(diagnose.COLUMNS))


def seed(run):
    return int(re.search(r"_s(\d+)$", run["path"].rstrip("/")).group(1))


def scores(refs, others, nearest, cap, columns):
    """(limit, the healthy run at it, {healthy seed: score}, {other run's name: score}), with
    diagnose.py's distance (its spreads and steps), the cap and columns given, and a score the
    mean distance to the ``nearest`` healthy runs of other seeds."""
    check = diagnose.Consistency(refs, cap=cap)
    tables = {id(r): {c: v for c, v in diagnose.curves(r, check.steps).items() if c in columns}
              for r in refs + others}

    def score(run):  # another seed's healthy runs only (a variant shares its seed's warm-up)
        ds = sorted(check.distance(tables[id(run)], tables[id(h)]) for h in refs
                    if h is not run and seed(h) != seed(run))
        return float(np.mean(ds[:nearest]))

    healthy = {seed(h): score(h) for h in refs}
    other = {name(o): score(o) for o in others}
    at = max(healthy, key=healthy.get)
    return healthy[at], at, healthy, other


def name(run):
    return os.path.basename(run["path"]).replace("td3-BipedalWalker-v3-", "")


def main():
    warnings.filterwarnings("ignore", "Mean of empty slice")  # a column all NaN over some steps
    refs, others = diagnose.committed("BipedalWalker-v3")
    print(f"BipedalWalker-v3: {len(refs)} healthy runs (seeds {sorted(seed(r) for r in refs)}), "
          f"{len(others)} mistakes and ablations")
    print("| nearest | cap | TestQBias | limit (healthy seed) | lowest stopping-mistake score / limit "
          "| runs above the limit |")
    print("|---|---|---|---|---|---|")
    for with_bias in (True, False):
        columns = tuple(c for c in diagnose.COLUMNS if with_bias or c != "TestQBias")
        for nearest in (1, 2, 3):
            for cap in (np.inf, 10.0, 5.0, 3.0):
                limit, at, _, other = scores(refs, others, nearest, cap, columns)
                stop = [v for n, v in other.items() if re.sub(r"_s\d+$", "", n) in STOPPING]
                print(f"| {nearest} | {cap:g} | {'with' if with_bias else 'without'} | {limit:.2f} "
                      f"(seed {at}) | {min(stop) / limit:.2f} | {sum(v > limit for v in other.values())} "
                      f"of {len(other)} |")
    limit, at, healthy, other = scores(refs, others, **CHOSEN)
    print(f"chosen: nearest {CHOSEN['nearest']}, cap {CHOSEN['cap']:g}, all columns: limit "
          f"{limit:.2f} (seed {at}); healthy scores {min(healthy.values()):.2f}-{limit:.2f}")
    for name, v in sorted(other.items()):
        print(f"  {name}: {v:.2f}{'  not consistent' if v > limit else ''}")


if __name__ == "__main__":
    main()
