"""Tianshou's TD3 algorithm (Tianshou 2.0.1), its own update() run on the checker's batch.

    python check_port.py notebooks.tianshou_port:Defaults   # TD3's arguments as they come
    python check_port.py notebooks.tianshou_port:Clipped    # one method overridden: a' clipped

Tianshou's defaults are the paper's settings (discount 0.99, tau 0.005, noise 0.2 clipped at
0.5, an actor step every second critic step), so one class checks both. The checker finds one
difference: the target action is not clipped to the action bounds after the noise. Tianshou has
no setting for that clip; a user adds it by overriding ``TD3._target_q_compute_action`` (clamp
``act_batch.act`` to [-1, 1] after the noise).

How this adapter reaches Tianshou's code, without changing a line of it:
- the batch goes into Tianshou's own ReplayBuffer, and ``update(buffer, sample_size=0)`` takes
  the whole buffer in the order it was written: the checker's rows, in order;
- a hook on the lagged critic reports the target action Tianshou hands it, and the three
  optimizers' step hooks report the gradients (each critic has an optimizer of its own);
- Tianshou acts in [-1, 1] and rescales at the env (``action_scaling``), so this adapter takes
  envs whose bounds are +-1 (BipedalWalker-v3), as the SB3 one does.
"""
import inspect

import gymnasium as gym
import numpy as np
import torch
from tianshou.algorithm import TD3
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import ReplayBuffer
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ContinuousActorDeterministic, ContinuousCritic
from tianshou.utils.torch_utils import policy_within_training_step

from check_port import TorchNets, torch_grads


# Tianshou's defaults, read from its signatures: a new version's are what gets checked
_TD3 = {k: p.default for k, p in inspect.signature(TD3.__init__).parameters.items()}
_LR = inspect.signature(AdamOptimizerFactory.__init__).parameters["lr"].default


class Defaults(TorchNets):
    """Tianshou's TD3 with its own defaults, which are the paper's settings."""
    settings = dict(gamma=_TD3["gamma"], tau=_TD3["tau"], pi_lr=_LR, q_lr=_LR,
                    target_noise=_TD3["policy_noise"], noise_clip=_TD3["noise_clip"],
                    policy_delay=_TD3["update_actor_freq"])
    takes_noise = False  # Tianshou draws its own noise; a hook reports the a' it made
    algorithm = TD3
    advice = {  # what to change, in Tianshou's terms
        "action_unclipped": "Tianshou has no setting for this clip: subclass TD3 and override "
                            "_target_q_compute_action to clamp act_batch.act to [-1, 1] after "
                            "the noise",
    }

    def __init__(self, obs_dim, act_dim, act_low, act_high):
        if not (np.all(act_low == -1) and np.all(act_high == 1)):
            raise ValueError("this adapter takes action bounds of +-1 (Tianshou rescales at "
                             "the env)")
        s = self.settings
        self.obs_dim, self.act_dim = obs_dim, act_dim
        actor = ContinuousActorDeterministic(
            preprocess_net=Net(state_shape=obs_dim, hidden_sizes=[256, 256]),
            action_shape=act_dim, max_action=1.0)
        critic1, critic2 = (ContinuousCritic(preprocess_net=Net(
            state_shape=obs_dim, action_shape=act_dim, hidden_sizes=[256, 256], concat=True))
            for _ in range(2))
        space = gym.spaces.Box(-1.0, 1.0, (act_dim,), np.float32)
        self.policy = ContinuousDeterministicPolicy(
            actor=actor, action_space=space,
            observation_space=gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32))
        self.algo = self.algorithm(
            policy=self.policy, policy_optim=AdamOptimizerFactory(lr=s["pi_lr"]), critic=critic1,
            critic_optim=AdamOptimizerFactory(lr=s["q_lr"]), critic2=critic2,
            critic2_optim=AdamOptimizerFactory(lr=s["q_lr"]), tau=s["tau"], gamma=s["gamma"],
            policy_noise=s["target_noise"], update_actor_freq=s["policy_delay"],
            noise_clip=s["noise_clip"])
        a = self.algo
        self.nets = {"pi": actor, "pi_targ": a.actor_old, "q1": critic1, "q2": critic2,
                     "q1_targ": a.critic_old, "q2_targ": a.critic2_old}
        self.seen = {}
        a.critic_old.register_forward_pre_hook(  # the a' of the target: its second argument
            lambda mod, args: self.seen.__setitem__("target_action",
                                                    args[1].detach().numpy().copy()))
        for opt, net in ((a.critic_optim, "q1"), (a.critic2_optim, "q2"), (a.policy_optim, "pi")):
            opt._optim.register_step_post_hook(lambda *_, net=net: self.seen.setdefault(
                "grads", {}).__setitem__(net, torch_grads(self.nets[net])))

    def actor(self, obs):
        with torch.no_grad():
            return self.nets["pi"](torch.as_tensor(obs))[0].numpy()

    def critics(self, obs, act):
        o, a = torch.as_tensor(obs), torch.as_tensor(act)
        with torch.no_grad():
            return [self.nets["q1"](o, a).numpy(), self.nets["q2"](o, a).numpy()]

    def _buffer(self, obs, act, rew, obs2, terminated, truncated):
        return ReplayBuffer.from_data(obs=obs, act=act, rew=rew, terminated=terminated,
                                      truncated=truncated, done=terminated | truncated,
                                      obs_next=obs2)

    def done_flag(self, terminated, truncated):
        """What Tianshou's 1-step return bootstraps with: a buffer row of reward 0 and a next
        value of 1 gives gamma * (1 - done)."""
        o = np.zeros((1, self.obs_dim), np.float32)
        buf = self._buffer(o, np.zeros((1, self.act_dim), np.float32), np.zeros(1, np.float32),
                           o, np.array([terminated]), np.array([truncated]))
        batch, idx = buf.sample(0)
        out = self.algo.compute_nstep_return(batch=batch, buffer=buf, indices=idx,
                                             target_q_fn=lambda b, i: torch.ones(len(i)),
                                             gamma=self.algo.gamma, n_step=1)
        ret = float(np.asarray(out.returns).ravel()[0])
        return round(1.0 - ret / self.algo.gamma, 6)  # (float32's rounding)

    def update(self, batch, normal):
        """One call of Tianshou's update() on the checker's rows, in order (sample_size 0: the
        whole buffer, as written)."""
        self.seen.clear()
        done = batch["done"].astype(bool)
        buf = self._buffer(batch["obs"], batch["act"], batch["rew"], batch["obs2"], done,
                           np.zeros_like(done))
        with policy_within_training_step(self.policy):  # as its OffPolicyTrainer calls it
            self.algo.update(buffer=buf, sample_size=0)
        return dict(self.seen)


class ClippedTD3(TD3):
    """Tianshou's TD3 with the target action clamped to the bounds after the noise."""

    def _target_q_compute_action(self, obs_batch):
        act_batch = super()._target_q_compute_action(obs_batch)
        act_batch.act = act_batch.act.clamp(-1.0, 1.0)
        return act_batch


class Clipped(Defaults):
    """The fix the checker advises, made by overriding one method: the paper's update."""
    algorithm = ClippedTD3
