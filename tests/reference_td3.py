"""A plain TD3 update written the way the TD3 authors' code reads, as a reference.

One Critic module with both heads, default Adam, and a Python loop of
``target.data.copy_(tau * p + (1 - tau) * target)``. ``make_pair`` gives the project's
actor-critic with its update and a ``PlainTD3`` holding identical weights, so that
tests/test_update.py can check that both compute the same update, and benchmarks/ can time
one against the other.
"""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import core
import td3


class Actor(nn.Module):
    def __init__(self, state_dim, action_dim, max_action, hid=256):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(state_dim, hid), nn.Linear(hid, hid), nn.Linear(hid, action_dim)
        self.max_action = max_action

    def forward(self, state):
        a = F.relu(self.l1(state))
        a = F.relu(self.l2(a))
        return self.max_action * torch.tanh(self.l3(a))


class Critic(nn.Module):
    def __init__(self, state_dim, action_dim, hid=256):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(state_dim + action_dim, hid), nn.Linear(hid, hid), nn.Linear(hid, 1)
        self.l4, self.l5, self.l6 = nn.Linear(state_dim + action_dim, hid), nn.Linear(hid, hid), nn.Linear(hid, 1)

    def forward(self, state, action):
        sa = torch.cat([state, action], 1)
        q1 = self.l3(F.relu(self.l2(F.relu(self.l1(sa)))))
        q2 = self.l6(F.relu(self.l5(F.relu(self.l4(sa)))))
        return q1, q2

    def Q1(self, state, action):
        sa = torch.cat([state, action], 1)
        return self.l3(F.relu(self.l2(F.relu(self.l1(sa)))))


class PlainTD3:
    """The reference update, in the TD3 authors' style."""

    def __init__(self, state_dim, action_dim, max_action=1.0, discount=0.98, tau=0.005,
                 policy_noise=0.2, noise_clip=0.5, policy_freq=2, lr=1e-3, hid=256):
        self.actor = Actor(state_dim, action_dim, max_action, hid)
        self.actor_target = copy.deepcopy(self.actor)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=lr)
        self.critic = Critic(state_dim, action_dim, hid)
        self.critic_target = copy.deepcopy(self.critic)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=lr)
        self.max_action, self.discount, self.tau = max_action, discount, tau
        self.policy_noise, self.noise_clip, self.policy_freq = policy_noise, noise_clip, policy_freq
        self.total_it = 0

    def load_from(self, ac):
        """Copy the weights of a core.MLPActorCritic (and its targets) into this one."""
        def copy_mlp(dst_layers, src_seq):
            for dst, src in zip(dst_layers, [m for m in src_seq if isinstance(m, nn.Linear)]):
                dst.load_state_dict(src.state_dict())
        copy_mlp([self.actor.l1, self.actor.l2, self.actor.l3], ac.pi.net)
        copy_mlp([self.critic.l1, self.critic.l2, self.critic.l3], ac.q1.net)
        copy_mlp([self.critic.l4, self.critic.l5, self.critic.l6], ac.q2.net)
        self.actor_target = copy.deepcopy(self.actor)
        self.critic_target = copy.deepcopy(self.critic)

    def train(self, state, action, next_state, reward, not_done):
        self.total_it += 1
        with torch.no_grad():
            noise = (torch.randn_like(action) * self.policy_noise).clamp(-self.noise_clip, self.noise_clip)
            next_action = (self.actor_target(next_state) + noise).clamp(-self.max_action, self.max_action)
            target_Q1, target_Q2 = self.critic_target(next_state, next_action)
            target_Q = reward + not_done * self.discount * torch.min(target_Q1, target_Q2)
        current_Q1, current_Q2 = self.critic(state, action)
        critic_loss = F.mse_loss(current_Q1, target_Q) + F.mse_loss(current_Q2, target_Q)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        self.critic_optimizer.step()
        if self.total_it % self.policy_freq == 0:
            actor_loss = -self.critic.Q1(state, self.actor(state)).mean()
            self.actor_optimizer.zero_grad()
            actor_loss.backward()
            self.actor_optimizer.step()
            for param, target_param in zip(self.critic.parameters(), self.critic_target.parameters()):
                target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)
            for param, target_param in zip(self.actor.parameters(), self.actor_target.parameters()):
                target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)

    def train_on(self, batch):
        """Our batch dict, reshaped to the authors' (B, 1) rewards and not-done flags."""
        self.train(batch["obs"], batch["act"], batch["obs2"], batch["rew"].unsqueeze(1),
                   (1 - batch["done"]).unsqueeze(1))


def make_pair(obs_dim=24, act_dim=4, hid=256, seed=0):
    """Our actor-critic with its update, and a PlainTD3 holding identical weights."""
    import gymnasium as gym
    torch.manual_seed(seed)
    obs_space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
    act_space = gym.spaces.Box(-1.0, 1.0, (act_dim,), np.float32)
    ac = core.MLPActorCritic(obs_space, act_space, hidden_sizes=(hid, hid))
    ac_targ = copy.deepcopy(ac)
    for p in ac_targ.parameters():
        p.requires_grad_(False)
    update, _, _ = td3.build_update(ac, ac_targ, td3.Hyperparameters(
        gamma=0.98, polyak=0.995, pi_lr=1e-3, q_lr=1e-3, target_noise=0.2, noise_clip=0.5,
        policy_delay=2))
    ref = PlainTD3(obs_dim, act_dim, hid=hid)
    ref.load_from(ac)
    return ac, ac_targ, update, ref


def random_batches(n, batch_size=256, obs_dim=24, act_dim=4, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [dict(obs=torch.randn(batch_size, obs_dim, generator=g),
                 act=torch.rand(batch_size, act_dim, generator=g) * 2 - 1,
                 rew=torch.randn(batch_size, generator=g),
                 obs2=torch.randn(batch_size, obs_dim, generator=g),
                 done=(torch.rand(batch_size, generator=g) < 0.05).float()) for _ in range(n)]
