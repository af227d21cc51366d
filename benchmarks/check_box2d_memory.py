"""Does a Box2D env remember its past episodes? The shipped walker plays the same reset seeds
twice: each episode in a fresh env, and all of them one after another in one env. An env that
were only its reset seed and its actions would give the same episodes both ways.

    python benchmarks/check_box2d_memory.py [--episodes 20]

Prints each episode's return and length both ways and how many differ. Why it matters
(a resumed run starts fresh envs; judging plays in fresh envs): docs/resume_and_determinism.md.
"""
import argparse
import os
import sys

import gymnasium as gym
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from watch import load_actor  # noqa: E402

WALKER = os.path.join(ROOT, "results", "ablations", "td3-BipedalWalker-v3", "td3-BipedalWalker-v3_s1")


def play(ac, env, seed):
    """One noise-free episode from reset seed ``seed``: its return and length."""
    o, _ = env.reset(seed=seed)
    ret, n = 0.0, 0
    while True:
        o, r, terminated, truncated, _ = env.step(ac.act(o))
        ret, n = ret + float(r), n + 1
        if terminated or truncated:
            return ret, n


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--episodes", type=int, default=20, help="reset seeds 10,000 on (default 20)")
    args = p.parse_args(argv)
    if args.episodes < 1:
        p.error("--episodes must be 1 or more")
    torch.set_num_threads(1)
    ac, config, _, _ = load_actor(WALKER)
    seeds = [10_000 + i for i in range(args.episodes)]
    fresh = [play(ac, gym.make(config["env_id"]), s) for s in seeds]
    one_env = gym.make(config["env_id"])
    shared = [play(ac, one_env, s) for s in seeds]
    differ = 0
    for i, (s, (r1, n1), (r2, n2)) in enumerate(zip(seeds, fresh, shared)):
        same = (r1, n1) == (r2, n2)
        differ += not same
        print(f"reset seed {s}: fresh env {r1:.2f} ({n1} steps); after {i} earlier episodes in "
              f"one env {r2:.2f} ({n2} steps)" + ("" if same else f"  differs by {r2 - r1:+.2f}"))
    print(f"{differ} of {len(seeds)} episodes differ between a fresh env and one that played the "
          f"earlier episodes")


if __name__ == "__main__":
    main()
