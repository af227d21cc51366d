"""Speed ideas that were measured and not kept, against the plain reference and our update.

    python benchmarks/bench_candidates.py [--repeats 7] [--updates 100] [--threads N]

Every variant starts from identical weights and draws the same batches; all are timed
interleaved in this one process and the medians printed as ratios to the reference:

- ours:        td3.build_update as shipped;
- bf16:        ours with fp32 matmuls done in bfloat16 (changes the numbers, so never kept);
- compiled:    ours with the three networks wrapped in torch.compile;
- relu_inplace: ours with nn.ReLU(inplace=True) in every hidden layer;
- dot_head:    ours with each critic's 1-output Linear computed as a dot product.
"""
import copy
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
import td3  # noqa: E402
from bench_update import parse_args, time_interleaved  # noqa: E402
from reference_td3 import make_pair, random_batches  # noqa: E402


class DotHead(nn.Module):
    """The same weight and bias as a Linear(h, 1), applied as (h * w).sum(-1) + b."""

    def __init__(self, linear):
        super().__init__()
        self.weight, self.bias = linear.weight, linear.bias

    def forward(self, h):
        return (h * self.weight).sum(-1, keepdim=True) + self.bias


def variant(ac, ac_targ, change):
    """A copy of (ac, ac_targ) with ``change`` applied to each, and its update()."""
    ac, ac_targ = copy.deepcopy(ac), copy.deepcopy(ac_targ)
    for m in (ac, ac_targ):
        change(m)
    return td3.build_update(ac, ac_targ, td3.Hyperparameters(gamma=0.98))[0]


def compile_nets(m):
    m.pi.net, m.q1.net, m.q2.net = torch.compile(m.pi.net), torch.compile(m.q1.net), torch.compile(m.q2.net)


def relu_inplace(m):
    for mod in m.modules():
        if isinstance(mod, nn.ReLU):
            mod.inplace = True


def dot_head(m):
    for q in (m.q1.net, m.q2.net):
        q[4] = DotHead(q[4])


def main():
    args = parse_args(__doc__, updates=100)
    ac, ac_targ, ours, ref = make_pair()
    updates = {"ours": ours, "compiled": variant(ac, ac_targ, compile_nets),
               "relu_inplace": variant(ac, ac_targ, relu_inplace),
               "dot_head": variant(ac, ac_targ, dot_head)}
    batches = random_batches(args.updates)
    n_updates = [0]

    def run(update):
        for b in batches:
            n_updates[0] += 1
            update(b, n_updates[0])

    def bf16():
        torch.backends.mkldnn.matmul.fp32_precision = "bf16"
        try:
            run(ours)
        finally:
            torch.backends.mkldnn.matmul.fp32_precision = "ieee"

    fns = {"reference": lambda: [ref.train_on(b) for b in batches], "bf16": bf16}
    fns.update({k: (lambda u=u: run(u)) for k, u in updates.items()})
    t0 = time.perf_counter()
    rates = time_interleaved(fns, args.repeats, args.updates)  # warm-up compiles
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, obs 24, act 4, hidden "
          f"(256, 256), batch 256, {args.repeats} repeats x {args.updates} updates, interleaved "
          f"({time.perf_counter() - t0:.0f} s in all, torch.compile's compile included)")
    base = statistics.median(rates["reference"])
    for k, v in rates.items():
        print(f"{k:>12}: median {statistics.median(v):7.1f} updates/s  "
              f"ratio to reference {statistics.median(v) / base:.2f}")

if __name__ == "__main__":
    main()
