"""What a resume of a Box2D run costs for being exact: the checkpoint's bytes for its envs'
past episodes, and the seconds their replay takes.

    python benchmarks/bench_resume.py RUN_DIR [RUN_DIR ...]

A Box2D world remembers its past episodes, so a checkpoint of a BipedalWalker-v3 or lander
run records the reset seed and actions of every episode its train and test envs played, and
a resume plays them again before it trains (resume.ReplayableEnv). For each run directory (a
ckpt.pt written by this code) this prints the checkpoint's size, the part of it that is that
record, and the time of the replay, made as td3.py --resume makes it (a fresh env of the run's
config.json, each past episode reset and stepped again), median of --repeats.
"""
import argparse
import io
import os
import statistics
import sys
import time

import torch
from run import directory, envs, errors, resume

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def nbytes(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.tell()


def measure(run_dir, repeats):
    try:
        ckpt = directory.load_checkpoint(os.path.join(run_dir, "ckpt.pt"))
    except ValueError as e:  # missing, truncated, not a weights file
        raise errors.UserError(str(e)) from None
    if not isinstance(ckpt, dict) or "episode" not in ckpt:
        raise errors.UserError(f"{run_dir}/ckpt.pt is not a td3.py checkpoint")
    if "past_seeds" not in ckpt["episode"]:
        raise errors.UserError(f"{run_dir}'s checkpoint has no record of its env's past (not a Box2D "
                            f"env, or made before the record existed)")
    env_fn = envs.rebuild_env(run_dir)
    past = {k: v for k, v in ckpt["episode"].items() if k.startswith("past_")}
    past_test = {k: v for k, v in ckpt.get("test_env", {}).items() if k.startswith("past_")}
    steps = int(past["past_lengths"].sum()) + len(ckpt["episode"]["actions"])
    test_steps = (int(past_test["past_lengths"].sum()) + len(ckpt["test_env"]["actions"])
                  if past_test else 0)
    seconds = []
    for _ in range(repeats):
        env, test_env = resume.ReplayableEnv(env_fn()), resume.ReplayableEnv(env_fn())
        t = time.perf_counter()
        env.replay(**ckpt["episode"])
        if "test_env" in ckpt:
            test_env.replay(**ckpt["test_env"])
        seconds.append(time.perf_counter() - t)
    size = os.path.getsize(os.path.join(run_dir, "ckpt.pt"))
    record = nbytes(past) + nbytes(past_test)
    print(f"{run_dir}: epoch {ckpt['epoch']}, {ckpt['t']:,} env steps; ckpt.pt {size / 1e6:.1f} MB, "
          f"of which the envs' past {record / 1e6:.1f} MB ({record / size:.0%}); replay of "
          f"{steps:,} train and {test_steps:,} test env steps ({len(past['past_seeds']) + 1:,} and "
          f"{len(past_test.get('past_seeds', [])) + (1 if past_test else 0):,} episodes): "
          f"{statistics.median(seconds):.1f} s (median of {repeats}; "
          f"{(steps + test_steps) / statistics.median(seconds):,.0f} env steps/s)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    for run_dir in args.runs:
        measure(run_dir, args.repeats)


if __name__ == "__main__":
    errors.run_main(main)
