"""Does the discount 0.99 keep Pendulum-v1's short learning run learning? (defaults screen)

    python benchmarks/check_gamma_pendulum.py [--seeds 0 1 2] [--gammas 0.98 0.99]

The screen of new defaults (docs/defaults.md#screening-new-defaults) has 0.99 as a candidate
discount. Before it could become the general default, the short Pendulum-v1 run of the test
suite (tests/test_td3.py, test_short_pendulum_run_learns: 9,000 env steps, hidden (64, 64),
batch 128, then 5 evaluation episodes from reset seeds 1000-1004, passing at an average of
-300 or above) has to keep learning. This trains that run for each seed and discount, one
torch thread, and prints the evaluation returns; the test itself uses seed 0 and the default
discount. About 35 s per run on one core.
"""
import argparse
import os
import sys
import tempfile

import gymnasium as gym
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import td3  # noqa: E402

PASS = -300.0  # the learning test's threshold


def short_run(seed, gamma):
    """The learning test's run at this seed and discount; its 5 evaluation returns."""
    with tempfile.TemporaryDirectory() as out:
        ac = td3.td3(lambda: gym.make("Pendulum-v1"), seed=seed, gamma=gamma, steps_per_epoch=1500,
                     epochs=6, start_steps=1000, update_after=500, batch_size=128,
                     num_test_episodes=5, ac_kwargs=dict(hidden_sizes=(64, 64)),
                     logger_kwargs=dict(output_dir=out, quiet=True))
    env, rets = gym.make("Pendulum-v1"), []
    for ep in range(5):
        o, _ = env.reset(seed=1000 + ep)
        done, ret = False, 0.0
        while not done:
            o, r, term, trunc, _ = env.step(ac.act(o))
            ret, done = ret + r, term or trunc
        rets.append(ret)
    return rets


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--gammas", type=float, nargs="+", default=[0.98, 0.99])
    args = p.parse_args()
    torch.set_num_threads(1)
    for gamma in args.gammas:
        passed = 0
        for seed in args.seeds:
            rets = short_run(seed, gamma)
            ok = np.mean(rets) >= PASS
            passed += ok
            print(f"gamma {gamma:g}, seed {seed}: average {np.mean(rets):7.1f} "
                  f"({', '.join(f'{r:.0f}' for r in rets)}) -> {'passes' if ok else 'fails'}",
                  flush=True)
        print(f"gamma {gamma:g}: {passed} of {len(args.seeds)} seeds at {PASS:g} or above")


if __name__ == "__main__":
    main()
