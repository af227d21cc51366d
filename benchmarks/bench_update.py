"""Updates per second: the project's TD3 update against a plain reference update.

    python benchmarks/bench_update.py [--repeats 7] [--updates 200] [--threads N]

The reference is tests/reference_td3.py, written the way the TD3 authors' code reads: one
Critic module with both heads, default Adam, a Python loop of ``target.data.copy_(tau * p +
(1 - tau) * target)``.
Both start from identical weights and draw the same batches; they are timed interleaved
(reference, ours, reference, ours, ...) in this one process, and the medians are compared.
The last line is ``speedup_vs_reference=X.XX``.
"""
import argparse
import os
import statistics
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
from reference_td3 import make_pair, random_batches  # noqa: E402


def parse_args(doc, updates=200):
    """The command line shared by the update benchmarks; sets torch's thread count."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--updates", type=int, default=updates, help="updates per timed block")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    return args


def time_interleaved(fns, repeats, updates):
    """Call each of ``fns`` (name -> function doing ``updates`` updates) once to warm up,
    then ``repeats`` rounds of each in turn; return name -> list of updates/s."""
    for fn in fns.values():
        fn()
    rates = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            rates[name].append(updates / (time.perf_counter() - t0))
    return rates


def main():
    args = parse_args(__doc__)
    _, _, update, ref = make_pair()
    batches = random_batches(args.updates)
    n_updates = [0]

    def ours():
        for b in batches:
            n_updates[0] += 1
            update(b, n_updates[0])

    def reference():
        for b in batches:
            ref.train_on(b)

    rates = time_interleaved({"reference": reference, "ours": ours}, args.repeats, args.updates)
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, obs 24, act 4, "
          f"hidden (256, 256), batch 256, policy_delay 2, {args.repeats} repeats x {args.updates} updates")
    for k in ("reference", "ours"):
        print(f"{k:>9}: median {med[k]:7.1f} updates/s  (min {min(rates[k]):.1f}, max {max(rates[k]):.1f})")
    print(f"speedup_vs_reference={med['ours'] / med['reference']:.2f}")

if __name__ == "__main__":
    main()
