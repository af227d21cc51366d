"""Threads and devices: the TD3 update's updates/s and the training loop's env steps/s on the
CPU at several torch thread counts, and on cuda where torch sees a GPU, side by side.

    python benchmarks/bench_devices.py                        # 1, 2, 4, ... up to the cores
    python benchmarks/bench_devices.py --threads 1 2 16 --device cpu cuda --repeats 5

Everything is measured in this one process, the configurations interleaved (cpu at 1 thread,
cpu at 2 threads, ..., cuda, then again), and each line prints the median of ``--repeats``
and its ratio to one CPU thread measured beside it. The update is ``td3.build_update`` on
random batches (obs 24, act 4, 256x256, batch 256), as in bench_update.py; the loop is
``td3.td3()`` on BipedalWalker-v3 with the default settings, timed from its progress.txt
(epoch 2 minus epoch 1: ``--steps`` env steps of policy, noise and updates, 50 every 50 steps,
and one test episode), as in bench_train.py. On cuda the CPU side (env, buffer, Python) runs with the thread count
td3.py's default rule gives (``machine.default_threads``).
"""
import argparse
import copy
import os
import statistics
import sys
import tempfile
import time

import gymnasium as gym
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
import core  # noqa: E402
import td3  # noqa: E402
from logger import read_progress  # noqa: E402
from reference_td3 import random_batches  # noqa: E402
from run import machine


def thread_counts(cores):
    """1, 2, 4, ... and the core count itself."""
    counts, n = [], 1
    while n < cores:
        counts.append(n)
        n *= 2
    return counts + [cores]


def update_rate(device, updates, batches):
    """Updates/s of the project's update on ``device`` (batches already there)."""
    torch.manual_seed(0)
    space = gym.spaces.Box(-1.0, 1.0, (4,))
    ac = core.MLPActorCritic(gym.spaces.Box(-float("inf"), float("inf"), (24,)), space).to(device)
    ac_targ = copy.deepcopy(ac).requires_grad_(False)
    update, _, _ = td3.build_update(ac, ac_targ, td3.Hyperparameters(gamma=0.98))
    for i, b in enumerate(batches[:20]):  # warm-up: allocator, kernels, fused Adam's state
        update(b, i + 1)
    sync(device)
    t0 = time.perf_counter()
    for i in range(updates):
        update(batches[i % len(batches)], i + 1)
    sync(device)
    return updates / (time.perf_counter() - t0)


def loop_rate(device, steps, seed=0):
    """Env steps/s of td3.td3() on BipedalWalker-v3 while it updates (one update per step)."""
    with tempfile.TemporaryDirectory() as d:
        td3.td3(lambda: gym.make("BipedalWalker-v3"), seed=seed, steps_per_epoch=steps, epochs=2,
                start_steps=steps, update_after=steps, num_test_episodes=1,
                device=str(device), logger_kwargs=dict(output_dir=d, quiet=True))
        header, rows = read_progress(os.path.join(d, "progress.txt"))
        i = header.index("Time")
        return steps / (float(rows[1][i]) - float(rows[0][i]))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main():
    cores = os.cpu_count() or 1
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, nargs="+", default=thread_counts(cores),
                   help=f"CPU thread counts to measure (default: 1, 2, 4, ... {cores})")
    p.add_argument("--device", nargs="+", default=["cpu", "cuda"], choices=["cpu", "cuda"],
                   help="cuda is skipped, with a line saying so, where torch sees no GPU")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--updates", type=int, default=300, help="updates per timed block")
    p.add_argument("--steps", type=int, default=1500, help="timed env steps of the loop")
    p.add_argument("--what", nargs="+", default=["update", "loop"], choices=["update", "loop"])
    args = p.parse_args()
    if min(args.threads) < 1 or args.repeats < 1 or args.updates < 1 or args.steps < 1:
        p.error("--threads, --repeats, --updates and --steps take positive integers")
    configs = [("cpu", n) for n in dict.fromkeys(args.threads)] if "cpu" in args.device else []
    if 1 not in args.threads or "cpu" not in args.device:
        configs.insert(0, ("cpu", 1))  # the reference every ratio is taken against
    if "cuda" in args.device:
        if torch.cuda.is_available():
            configs.append(("cuda", machine.default_threads(cores)))
        else:
            print("cuda: skipped, torch sees no GPU here")
    batches = {dev: [{k: v.to(dev) for k, v in b.items()} for b in random_batches(50)]
               for dev in {c[0] for c in configs}}
    print(f"torch {torch.__version__}, {cores} cores ({machine.cpu_model()}), "
          f"{torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU'}; "
          f"default rule: {machine.default_threads(cores)} threads; median of {args.repeats}, "
          f"interleaved", flush=True)
    for what in args.what:
        rates = {c: [] for c in configs}
        for r in range(args.repeats):
            for dev, n in configs:
                torch.set_num_threads(n)
                device = torch.device(dev)
                rate = (update_rate(device, args.updates, batches[dev]) if what == "update"
                        else loop_rate(device, args.steps, seed=r))
                rates[(dev, n)].append(rate)
                print(f"  repeat {r + 1}, {what}, {dev} {n} threads: {rate:.1f}", flush=True)
        unit = "updates/s" if what == "update" else "BipedalWalker-v3 env steps/s"
        ref = statistics.median(rates[("cpu", 1)])
        print(f"{what}: {unit} (ratio to cpu, 1 thread)")
        for (dev, n), v in rates.items():
            med = statistics.median(v)
            label = f"cpu, {n} thread{'s' if n > 1 else ''}" if dev == "cpu" else \
                f"cuda (CPU side {n} thread{'s' if n > 1 else ''})"
            print(f"  {label:>28}: {med:8.1f}  x{med / ref:.2f}  (min {min(v):.1f}, max {max(v):.1f})")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
