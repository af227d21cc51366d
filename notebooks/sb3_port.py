"""Stable-Baselines3's TD3, a correct TD3 nobody here wrote, plugged into check_port.py.

    python check_port.py notebooks.sb3_port:Adapter

Its own ``train()`` runs each update, with its replay sample replaced by the checker's batch;
hooks watch what it does (the target action it hands its target critic, the gradients at each
optimizer step) without changing a line of it. Its settings are matched to td3.py's defaults.
SB3 acts in [-1, 1] and rescales actions at the env, so this adapter takes envs whose bounds
are +-1 (BipedalWalker-v3).
"""
import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import TD3
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.logger import configure
from stable_baselines3.common.type_aliases import ReplayBufferSamples

from check_port import TorchNets, torch_grads


class _Spaces(gym.Env):  # SB3 builds its networks from an env's spaces
    def __init__(self, obs_dim, act_dim):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
        self.action_space = gym.spaces.Box(-1, 1, (act_dim,), np.float32)


class _Batch:  # stands in for SB3's replay buffer: every sample is the checker's batch
    def __init__(self, batch):
        t = lambda k: torch.as_tensor(batch[k])
        self.data = ReplayBufferSamples(t("obs"), t("act"), t("obs2"), t("done")[:, None],
                                        t("rew")[:, None], None)

    def sample(self, batch_size, env=None):
        return self.data


class Adapter(TorchNets):
    settings = dict(gamma=0.98, tau=0.005, pi_lr=1e-3, q_lr=1e-3, target_noise=0.2,
                    noise_clip=0.5, policy_delay=2)
    takes_noise = False  # SB3 draws its own; the hook below reports the a' it made

    def __init__(self, obs_dim, act_dim, act_low, act_high):
        if not (np.all(act_low == -1) and np.all(act_high == 1)):
            raise ValueError("this adapter takes action bounds of +-1 (SB3 rescales at the env)")
        s = self.settings
        self.model = TD3("MlpPolicy", _Spaces(obs_dim, act_dim), learning_rate=s["q_lr"],
                         buffer_size=1, learning_starts=0, tau=s["tau"], gamma=s["gamma"],
                         policy_delay=s["policy_delay"], target_policy_noise=s["target_noise"],
                         target_noise_clip=s["noise_clip"], device="cpu",
                         policy_kwargs=dict(net_arch=[256, 256]))
        self.model.set_logger(configure(None, []))
        p = self.model.policy
        self.nets = {"pi": p.actor.mu, "pi_targ": p.actor_target.mu, "q1": p.critic.qf0,
                     "q2": p.critic.qf1, "q1_targ": p.critic_target.qf0, "q2_targ": p.critic_target.qf1}
        self.seen = {}
        p.critic_target.register_forward_pre_hook(
            lambda mod, args: self.seen.__setitem__("target_action", args[1].numpy().copy()))
        for opt, nets in ((p.critic.optimizer, ("q1", "q2")), (p.actor.optimizer, ("pi",))):
            opt.register_step_post_hook(lambda *_, nets=nets: self.seen.setdefault("grads", {}).update(
                {n: torch_grads(self.nets[n]) for n in nets}))

    def actor(self, obs):
        with torch.no_grad():
            return self.model.policy.actor(torch.as_tensor(obs)).numpy()

    def critics(self, obs, act):
        with torch.no_grad():
            return [q.numpy() for q in self.model.policy.critic(torch.as_tensor(obs), torch.as_tensor(act))]

    def done_flag(self, terminated, truncated):
        """Through SB3's own replay buffer: a vec env's done, with its TimeLimit.truncated info."""
        space = self.model.observation_space
        buf = ReplayBuffer(1, space, self.model.action_space, device="cpu")
        o = np.zeros((1, *space.shape), np.float32)
        buf.add(o, o, np.zeros((1, self.model.action_space.shape[0])), np.zeros(1),
                np.array([terminated or truncated]), [{"TimeLimit.truncated": truncated and not terminated}])
        return float(buf.sample(1).dones.item())

    def update(self, batch, normal):
        self.seen = {}
        self.model.replay_buffer = _Batch(batch)
        self.model.train(gradient_steps=1, batch_size=len(batch["obs"]))
        return self.seen
