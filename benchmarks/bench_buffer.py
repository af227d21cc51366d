"""Replay buffer throughput: our preallocated ring arrays against the blog's list buffer.

    python benchmarks/bench_buffer.py

The list buffer is a list-based replay buffer as in a Spinning Up-style blog implementation,
rewritten here in its style: Python lists of transitions, ``pop(0)`` once full (O(n)), and
the sampled rows turned into tensors at every ``sample``. Both are filled to capacity first;
then stores (with eviction) and samples of 256 are timed, interleaved, several repeats, and
the medians are printed with their ratio.
"""
import os
import random
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from buffer import ReplayBuffer  # noqa: E402

OBS, ACT, BATCH = 24, 4, 256


class ListBuffer:
    """The blog's buffer: a list per field, pop(0) when full, tensors built per sample."""

    def __init__(self, size):
        self.size = size
        self.obs, self.act, self.rew, self.obs2, self.done = [], [], [], [], []

    def store(self, o, a, r, o2, d):
        if len(self.obs) >= self.size:
            for lst in (self.obs, self.act, self.rew, self.obs2, self.done):
                lst.pop(0)
        self.obs.append(o)
        self.act.append(a)
        self.rew.append(r)
        self.obs2.append(o2)
        self.done.append(d)

    def sample(self, batch_size):
        idx = random.sample(range(len(self.obs)), batch_size)
        return (torch.tensor(np.array([self.obs[i] for i in idx]), dtype=torch.float32),
                torch.tensor(np.array([self.act[i] for i in idx]), dtype=torch.float32),
                torch.tensor([self.rew[i] for i in idx], dtype=torch.float32),
                torch.tensor(np.array([self.obs2[i] for i in idx]), dtype=torch.float32),
                torch.tensor([self.done[i] for i in idx], dtype=torch.float32))


def rate(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - t0)


def main(repeats=5, n_store=2000, n_sample=300):
    o, a = np.random.randn(OBS).astype(np.float32), np.random.randn(ACT).astype(np.float32)
    print(f"obs {OBS}, act {ACT}, batch {BATCH}; buffers full; median of {repeats} interleaved repeats")
    for cap in (100_000, 1_000_000):
        ours, blog = ReplayBuffer(OBS, ACT, cap, seed=0), ListBuffer(cap)
        for _ in range(cap):
            ours.store(o, a, 0.0, o, 0.0)
            blog.store(o, a, 0.0, o, 0.0)
        res = {k: [] for k in ("list store", "ours store", "list sample", "ours sample")}
        for _ in range(repeats):
            res["list store"].append(rate(lambda: blog.store(o, a, 0.0, o, 0.0), n_store))
            res["ours store"].append(rate(lambda: ours.store(o, a, 0.0, o, 0.0), n_store))
            res["list sample"].append(rate(lambda: blog.sample(BATCH), n_sample))
            res["ours sample"].append(rate(lambda: ours.sample_batch(BATCH), n_sample))
        med = {k: statistics.median(v) for k, v in res.items()}
        print(f"capacity {cap:>9,}: store  list {med['list store']:>10,.0f}/s  ours "
              f"{med['ours store']:>10,.0f}/s  ratio {med['ours store'] / med['list store']:7.1f}x")
        print(f"{'':>20} sample list {med['list sample']:>10,.0f}/s  ours "
              f"{med['ours sample']:>10,.0f}/s  ratio {med['ours sample'] / med['list sample']:7.1f}x")
        del ours, blog


if __name__ == "__main__":
    main()
