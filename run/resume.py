"""Exact resume: what a checkpoint holds so that a resumed run equals one never stopped, and
how it is put back. Every network, optimizer and the replay buffer (their state_dicts), the
loop's counters, numpy's and torch's random streams (a GPU's too), the values logged so far
this epoch, the train env's episode in progress and, for a Box2D env, the past episodes of
the train and test envs, replayed into fresh ones (``ReplayableEnv``).
"""
from dataclasses import fields

import numpy as np
import torch


def same_device(a, b):
    a, b = torch.device(a), torch.device(b)
    return a.type == b.type and (a.index or 0) == (b.index or 0)


def device_rng_state(device):
    """The state of a GPU's own random generator (trick 3's noise on a cuda tensor draws from
    it, not from the CPU's), or None on the CPU. (torch.cuda and torch.mps get and set it alike.)"""
    device = torch.device(device)
    return None if device.type == "cpu" else getattr(torch, device.type).get_rng_state(device)


class TrainingState:
    """What a checkpoint holds so that a resumed run equals one never stopped: every part's
    state_dict (``parts``: networks, optimizers, the replay buffer), the loop's counters (a
    dataclass), numpy's and torch's random streams and a GPU's, the values logged so far this
    epoch, the train env's episode in progress and, for a Box2D env, the past episodes of the
    train and test envs (both ReplayableEnv)."""

    def __init__(self, loop, rng, env, test_env, logger, device, parts):
        self.loop, self.rng, self.env, self.test_env = loop, rng, env, test_env
        self.logger, self.device, self.parts = logger, device, parts

    def capture(self):
        return {**{name: part.state_dict() for name, part in self.parts.items()},
                **{f.name: getattr(self.loop, f.name) for f in fields(self.loop)},
                "episode": self.env.state_dict(),
                **({"test_env": self.test_env.state_dict()} if self.test_env.keeps_past else {}),
                "rng": self.rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                "device": self.device, "device_rng": device_rng_state(self.device),
                "epoch_dict": self.logger.epoch_dict}

    def keys(self):
        """What a checkpoint must hold to restore this state."""
        return (*self.parts, "episode", "rng", "torch_rng", "epoch_dict",
                *(f.name for f in fields(self.loop)))

    def restore(self, ckpt, envs=True):
        """Put everything back; returns (obs, episode return, episode length) of the episode
        in progress. ``envs`` False (a finished run, which trains no more) leaves the envs
        as they are, since their replay takes time, and returns None."""
        for name, part in self.parts.items():
            part.load_state_dict(ckpt[name])
        self.rng.bit_generator.state = ckpt["rng"]
        torch.set_rng_state(ckpt["torch_rng"])
        made_on = ckpt.get("device", "cpu")
        if ckpt.get("device_rng") is not None and same_device(made_on, self.device) \
                and torch.device(self.device).type != "cpu":
            getattr(torch, torch.device(self.device).type).set_rng_state(ckpt["device_rng"],
                                                                         self.device)
        self.logger.epoch_dict.update(ckpt["epoch_dict"])
        for f in fields(self.loop):
            setattr(self.loop, f.name, ckpt[f.name])
        if not envs:
            return None
        first = self.env.replay(**ckpt["episode"])
        if "test_env" in ckpt:
            self.test_env.replay(**ckpt["test_env"])
        return first

    def parts_from(self, ckpt, made_on):
        """Why a run resumed from ``ckpt`` (made on device ``made_on``) no longer gives the
        numbers of an uninterrupted run, or None: another device, a checkpoint without its
        GPU's random state, or one older than the record of a Box2D env's past episodes."""
        if not same_device(made_on, self.device):
            return f"ran on {made_on} and resumes on {self.device}"
        if ckpt.get("device_rng") is None and device_rng_state(made_on) is not None:
            return "has a checkpoint without its GPU's random state"
        if self.env.keeps_past and "past_seeds" not in ckpt["episode"]:
            return ("has a checkpoint older than the record of its env's past episodes, which "
                    "a Box2D world remembers")
        return None


class ReplayableEnv:
    """An env whose state a checkpoint can rebuild from the reset seeds and actions it saw: a
    Box2D env can't be saved, but it is deterministic given both. It records the episode in
    progress, and, for an env that remembers its past episodes (``remembers_past``), every
    episode since it was made, so that a resume replays them into a fresh env and its world
    is the uninterrupted run's. Everything else (spaces, spec, close) is the wrapped env's."""

    def __init__(self, env):
        self.env, self.seed, self.actions = env, None, []
        self.ep_ret, self.last_return = 0.0, None  # for the progress line: the last episode's
        self.keeps_past = remembers_past(env)
        self.past_seeds, self.past_actions = [], []  # finished episodes, oldest first
        self.n_past = 0                              # their env steps

    def __getattr__(self, name):
        return getattr(self.env, name)

    def reset(self, seed):
        if self.keeps_past and self.seed is not None:
            self.past_seeds.append(self.seed)
            self.past_actions.append(self._array(self.actions))
            self.n_past += len(self.actions)
        if self.actions:
            self.last_return = self.ep_ret
        self.seed, self.actions, self.ep_ret = seed, [], 0.0
        return self.env.reset(seed=seed)

    def step(self, a):
        self.actions.append(a)
        out = self.env.step(a)
        self.ep_ret += out[1]
        return out

    def _array(self, actions):  # (steps, act_dim) float32, also for no step
        return np.asarray(actions, np.float32).reshape(-1, self.env.action_space.shape[0])

    def state_dict(self):
        episode = dict(seed=self.seed, actions=torch.as_tensor(self._array(self.actions)))
        if not self.keeps_past:
            return episode
        return dict(episode, past_seeds=torch.tensor(self.past_seeds, dtype=torch.int64),
                    past_lengths=torch.tensor([len(a) for a in self.past_actions],
                                              dtype=torch.int64),
                    past_actions=torch.as_tensor(np.concatenate([self._array([]),
                                                                 *self.past_actions])))

    def replay(self, seed, actions, past_seeds=None, past_lengths=None, past_actions=None):
        """Play the past episodes again (when recorded), then reset with ``seed`` and take
        ``actions`` again; returns (obs, return, length) of that last episode."""
        if past_seeds is not None:
            ends = np.cumsum(past_lengths.numpy())
            for s, end, n in zip(past_seeds.tolist(), ends, past_lengths.tolist()):
                self.reset(s)
                for a in past_actions[end - n:end].numpy():
                    self.step(a)
        ep_ret, ep_len = 0.0, 0
        if seed is None:  # never reset (an env with no episode yet)
            return None, ep_ret, ep_len
        o, _ = self.reset(seed)
        for a in actions.numpy():
            o, r, _, _, _ = self.step(a)
            ep_ret, ep_len = ep_ret + r, ep_len + 1
        return o, ep_ret, ep_len


def remembers_past(env):
    """Whether an env's past episodes change its next ones: a Box2D world (BipedalWalker,
    LunarLander, CarRacing) lives as long as its env, and what it did before (the order of
    its bodies' contacts and its internal pools) changes the floating point of later
    episodes (benchmarks/check_box2d_memory.py). Other envs here reset completely."""
    world = getattr(env.unwrapped, "world", None)
    return type(world).__module__.split(".")[0] == "Box2D"
