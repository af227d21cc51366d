"""Training speed beside a peer: td3.py's loop against Stable-Baselines3's TD3.learn.

    pip install -r requirements-ports.txt
    python benchmarks/bench_sb3.py [--steps 2000] [--repeats 3] [--threads 1 2]

Both train BipedalWalker-v3 with the same network (256, 256), batch 256, one update per env
step (ours: 50 updates every 50 steps; SB3: train_freq 1, gradient_steps 1), Gaussian
exploration noise 0.1 and td3.py's other defaults. Each repeat takes ``--steps`` uniform
random steps with no update, then times ``--steps`` steps of policy, noise and updates; ours
also plays its one noise-free test episode inside the timed part (td3.py tests at every epoch
end), which SB3 does not. Ours is timed from its progress.txt (epoch 2 minus epoch 1), SB3's by
a callback. The two run interleaved in one process, for each thread count; medians printed.
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
import td3  # noqa: E402
from logger import read_progress  # noqa: E402

ENV = "BipedalWalker-v3"


def ours(steps, seed):
    with tempfile.TemporaryDirectory() as d:
        td3.td3(lambda: gym.make(ENV), seed=seed, steps_per_epoch=steps, epochs=2,
                start_steps=steps, update_after=steps, num_test_episodes=1,
                logger_kwargs=dict(output_dir=d, quiet=True, progress=False))
        header, rows = read_progress(os.path.join(d, "progress.txt"))
        i = header.index("Time")
        return steps / (float(rows[1][i]) - float(rows[0][i]))


def sb3(steps, seed):
    from stable_baselines3 import TD3
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.noise import NormalActionNoise

    class Clock(BaseCallback):
        def _on_step(self):
            if self.num_timesteps == steps:
                self.t0 = time.perf_counter()
            return True

    env = gym.make(ENV)
    model = TD3("MlpPolicy", env, learning_rate=1e-3, buffer_size=1_000_000, learning_starts=steps,
                batch_size=256, tau=0.005, gamma=0.98, train_freq=1, gradient_steps=1,
                action_noise=NormalActionNoise(np.zeros(4), 0.1 * np.ones(4)), seed=seed,
                device="cpu", policy_kwargs=dict(net_arch=[256, 256]))
    clock = Clock()
    model.learn(total_timesteps=2 * steps, callback=clock)
    return steps / (time.perf_counter() - clock.t0)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = p.parse_args()
    try:
        import stable_baselines3
    except ImportError:
        sys.exit("needs stable-baselines3: pip install -r requirements-ports.txt")
    print(f"{ENV}: td3.py against stable-baselines3 {stable_baselines3.__version__}, torch "
          f"{torch.__version__}, {args.steps} timed steps after {args.steps} random ones")
    for threads in args.threads:
        torch.set_num_threads(threads)
        res = {"sb3": [], "ours": []}
        for r in range(args.repeats):
            res["sb3"].append(sb3(args.steps, r))
            res["ours"].append(ours(args.steps, r))
            print(f"  {threads} thread(s), repeat {r + 1}: SB3 {res['sb3'][-1]:.1f}, ours "
                  f"{res['ours'][-1]:.1f} env steps/s", flush=True)
        med = {k: statistics.median(v) for k, v in res.items()}
        print(f"{threads} thread(s), median of {args.repeats}: SB3 {med['sb3']:.1f}, ours "
              f"{med['ours']:.1f} env steps/s; ours_vs_sb3={med['ours'] / med['sb3']:.2f}", flush=True)


if __name__ == "__main__":
    main()
