"""Training speed: env steps/s of td3.py's loop against a plain reference loop.

    python benchmarks/bench_train.py [--steps 2000] [--repeats 3]

Both run BipedalWalker-v3 with the default settings (hidden (256, 256), batch 256, one
update per env step, one test episode per timed segment). Each repeat does a random warm-up
of ``--steps`` env steps with no updates, then times ``--steps`` steps of policy + noise +
updates. The reference is the TD3 authors' main loop and update (``PlainTD3`` from
tests/reference_td3.py: an update after every env step, numpy-to-tensor conversion per sample,
``select_action`` without ``no_grad``). Ours is ``td3.td3()`` itself, timed from the Time
column of its progress.txt (epoch 2 minus epoch 1). Repeats are interleaved; medians printed.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import gymnasium as gym
import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
import td3  # noqa: E402
from reference_td3 import PlainTD3  # noqa: E402
from logger import read_progress  # noqa: E402

ENV = "BipedalWalker-v3"


class PlainBuffer:
    """The authors' buffer: numpy arrays, (B, 1) rewards, tensors made at each sample."""

    def __init__(self, state_dim, action_dim, max_size=int(1e6)):
        self.max_size, self.ptr, self.size = max_size, 0, 0
        self.state = np.zeros((max_size, state_dim))
        self.action = np.zeros((max_size, action_dim))
        self.next_state = np.zeros((max_size, state_dim))
        self.reward = np.zeros((max_size, 1))
        self.not_done = np.zeros((max_size, 1))

    def add(self, state, action, next_state, reward, done):
        self.state[self.ptr], self.action[self.ptr] = state, action
        self.next_state[self.ptr], self.reward[self.ptr] = next_state, reward
        self.not_done[self.ptr] = 1.0 - done
        self.ptr = (self.ptr + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def sample(self, batch_size):
        ind = np.random.randint(0, self.size, size=batch_size)
        return (torch.FloatTensor(self.state[ind]), torch.FloatTensor(self.action[ind]),
                torch.FloatTensor(self.next_state[ind]), torch.FloatTensor(self.reward[ind]),
                torch.FloatTensor(self.not_done[ind]))


def reference_steps_per_s(steps, seed):
    """The authors' main.py loop: warm-up, then `steps` timed steps and one eval episode."""
    env, eval_env = gym.make(ENV), gym.make(ENV)
    torch.manual_seed(seed)
    np.random.seed(seed)
    policy = PlainTD3(24, 4, discount=0.98)
    buf = PlainBuffer(24, 4)
    state, _ = env.reset(seed=seed)
    ep_t = 0
    for t in range(2 * steps):
        if t == steps:
            t0 = time.perf_counter()
        ep_t += 1
        if t < steps:
            action = env.action_space.sample()
        else:
            s = torch.FloatTensor(state.reshape(1, -1))
            action = (policy.actor(s).cpu().data.numpy().flatten()
                      + np.random.normal(0, 0.1, size=4)).clip(-1, 1)
        next_state, reward, terminated, truncated, _ = env.step(action)
        buf.add(state, action, next_state, max(reward, -10.0), float(terminated))
        state = next_state
        if t >= steps:
            policy.train(*buf.sample(256))
        if terminated or truncated:
            state, _ = env.reset()
            ep_t = 0
    state, _, done = eval_env.reset(seed=seed + 100)[0], None, False
    while not done:
        a = policy.actor(torch.FloatTensor(state.reshape(1, -1))).cpu().data.numpy().flatten()
        state, _, term, trunc, _ = eval_env.step(a)
        done = term or trunc
    return steps / (time.perf_counter() - t0)


def ours_steps_per_s(steps, seed):
    with tempfile.TemporaryDirectory() as d:
        td3.td3(lambda: gym.make(ENV), seed=seed, steps_per_epoch=steps, epochs=2,
                start_steps=steps, update_after=steps, num_test_episodes=1, reward_floor=-10.0,
                logger_kwargs=dict(output_dir=d, quiet=True))
        header, rows = read_progress(os.path.join(d, "progress.txt"))
        i = header.index("Time")
        return steps / (float(rows[1][i]) - float(rows[0][i]))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    res = {"reference": [], "ours": []}
    for r in range(args.repeats):
        res["reference"].append(reference_steps_per_s(args.steps, r))
        res["ours"].append(ours_steps_per_s(args.steps, r))
        print(f"repeat {r + 1}: reference {res['reference'][-1]:.1f}, ours {res['ours'][-1]:.1f} env steps/s", flush=True)
    med = {k: statistics.median(v) for k, v in res.items()}
    print(f"{ENV}, {torch.get_num_threads()} threads, {args.steps} timed steps after "
          f"{args.steps} random ones, median of {args.repeats}")
    print(f"reference: {med['reference']:.1f} env steps/s")
    print(f"     ours: {med['ours']:.1f} env steps/s")
    print(f"train_speedup_vs_reference={med['ours'] / med['reference']:.2f}")


if __name__ == "__main__":
    main()
