"""How good diagnose.py is, measured by leave-one-run-out on every committed run of an env.

    python benchmarks/check_diagnose.py [--env BipedalWalker-v3]

Each committed run is taken out of the references (a healthy TD3 run) or out of the
committed runs it is matched against (a mistake or an ablation), diagnosed with diagnose.py's
rule, and the variant diagnose names first is checked against the run's own: a TD3 run is a
match when it comes out healthy (no column left the spread), any other run when the variant
whose seeds share most of its signs is its own. Each is diagnosed a second time without its
TestQBias column, as a file in Spinning Up's format would come. Then the totals, the rule's
false-alarm rate per column (each healthy run against the others), and the largest widening
at which a healthy run still fires (how much room the rule's WIDEN leaves). Run by hand;
pytest does not collect benchmarks/ (pytest.ini).
"""
import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import diagnose  # noqa: E402


def named_first(run, refs, others, env):
    """What diagnose names first: 'healthy', the closest variant, or 'no committed run'."""
    me, groups, best, _ = diagnose.compare(run, refs, others, env)
    return ("healthy" if not me["findings"] else best or "no committed run"), me, groups


def leave_one_out(env):
    refs, others = diagnose.committed(env)
    rows = []
    for run in refs + others:
        own = diagnose.variant(run, env)
        use = [r for r in refs if r is not run]
        named, me, groups = named_first(run, use, others, env)
        su = dict(run, data={k: v for k, v in run["data"].items() if k != "TestQBias"},
                  missing=run["missing"] + ["TestQBias"])
        su_named = named_first(su, use, others, env)[0]
        first = me["findings"][0] if me["findings"] else None
        same = sum(s == me["signature"] for s in groups.get(own, [])) if own != "TD3" else None
        match = (named == "healthy") if own == "TD3" else (named == own)
        rows.append(dict(run=os.path.basename(run["path"]), own=own, named=named, match=match,
                         su_named=su_named,
                         first=f"{first['col']} {first['side']} (known at {first['known']:,})"
                         if first else "-", same=same, n_own=len(groups.get(own, []))))
    return rows, refs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="BipedalWalker-v3")
    env = p.parse_args().env
    rows, refs = leave_one_out(env)
    print(f"{env}: leave-one-run-out over {len(rows)} committed runs ({len(refs)} healthy TD3); "
          f"rule: POOL {diagnose.POOL}, WIDEN {diagnose.WIDEN:g}, IN_A_ROW {diagnose.IN_A_ROW}")
    print("| run | true variant | first column to leave (known at) | diagnose named first | "
          "own variant's other seeds with exactly its signs | match | named first without "
          "TestQBias (Spinning Up's columns) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        same = "-" if r["same"] is None else f"{r['same']} of {r['n_own']}"
        print(f"| {r['run']} | {r['own']} | {r['first']} | {r['named']} | {same} | "
              f"{'yes' if r['match'] else 'no'} | {r['su_named']} |")
    groups = {}
    for r in rows:
        groups.setdefault(r["own"], []).append(r["match"])
    print("totals, named its own variant (TD3: healthy): " + "; ".join(
        f"{v} {sum(m)} of {len(m)}" for v, m in groups.items())
        + f"; all {sum(r['match'] for r in rows)} of {len(rows)}")
    per_col, any_col, n = diagnose.false_alarms(refs)
    print(f"without TestQBias, the same variant named first: "
          f"{sum(r['su_named'] == r['named'] for r in rows)} of {len(rows)}")
    print(f"false alarms (each healthy run against the other {n - 1}): any column {any_col} "
          f"of {n}; " + ", ".join(f"{c} {k} of {n}" for c, k in per_col.items()))
    widen, room = diagnose.WIDEN, 0.0
    for w in np.arange(0.25, widen + 1e-9, 0.25):
        diagnose.WIDEN = w
        if diagnose.false_alarms(refs)[1]:
            room = w
    diagnose.WIDEN = widen
    print(f"largest widening (in steps of 0.25) at which a healthy run still fires: "
          f"{room:g} (the rule widens by {widen:g})")


if __name__ == "__main__":
    main()
