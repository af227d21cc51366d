"""skrl's TD3 agent (skrl 2.1.1), its own update() run on the checker's batch.

    python check_port.py notebooks.skrl_port:Defaults    # skrl's TD3_CFG as it comes
    python check_port.py notebooks.skrl_port:Paper       # with the paper's target smoothing

skrl leaves trick 3 off unless a config names a noise for it: TD3_CFG's
``smooth_regularization_noise`` is None. ``Defaults`` declares that honestly (target_noise 0),
and the checker says the update is not TD3's. ``Paper`` gives it GaussianNoise(0, 0.2),
clipped at 0.5, as the paper does, each times the action half-range.

How this adapter reaches skrl's code, without changing a line of it:
- the batch goes into skrl's own RandomMemory, and its sample() is pointed at the rows in
  order (skrl draws random rows; the checker needs its rows where it put them);
- the networks are skrl Models of our own, so that their compute() can report the target
  action skrl hands its target critics; the optimizers' step hooks report the gradients;
- skrl's ``polyak`` is the paper's tau (the share of the live network): declared as tau;
- skrl's noise is in action units; on an env whose bounds are not +-1 give it
  ``std = target_noise * half-range`` (a setting, not code).
"""
import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from skrl.agents.torch.td3 import TD3, TD3_CFG
from skrl.memories.torch import RandomMemory
from skrl.models.torch import DeterministicMixin, Model
from skrl.resources.noises.torch import GaussianNoise

from check_port import TorchNets, torch_grads


class _Actor(DeterministicMixin, Model):
    def __init__(self, observation_space, action_space, scale, bias):
        Model.__init__(self, observation_space=observation_space, action_space=action_space,
                       device="cpu")
        DeterministicMixin.__init__(self, clip_actions=False)
        self.net = nn.Sequential(nn.Linear(self.num_observations, 256), nn.ReLU(),
                                 nn.Linear(256, 256), nn.ReLU(),
                                 nn.Linear(256, self.num_actions), nn.Tanh())
        self.scale, self.bias = scale, bias

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]) * self.scale + self.bias, {}


class _Critic(DeterministicMixin, Model):
    def __init__(self, observation_space, action_space, seen):
        Model.__init__(self, observation_space=observation_space, action_space=action_space,
                       device="cpu")
        DeterministicMixin.__init__(self, clip_actions=False)
        self.net = nn.Sequential(nn.Linear(self.num_observations + self.num_actions, 256),
                                 nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
        self.seen = seen

    def compute(self, inputs, role=""):
        if role.startswith("target"):  # the a' skrl's update built for its target critics
            self.seen["target_action"] = inputs["taken_actions"].detach().numpy().copy()
        return self.net(torch.cat([inputs["observations"], inputs["taken_actions"]], 1)), {}


_CFG = TD3_CFG()  # skrl's defaults, read from skrl: a new version's are what gets checked
_LR = _CFG.learning_rate if isinstance(_CFG.learning_rate, (tuple, list)) else \
    (_CFG.learning_rate, _CFG.learning_rate)


class Defaults(TorchNets):
    """skrl's TD3_CFG defaults, declared as they are: no target smoothing (its
    smooth_regularization_noise is None), polyak the paper's tau."""
    settings = dict(gamma=_CFG.discount_factor, tau=_CFG.polyak, pi_lr=_LR[0], q_lr=_LR[1],
                    target_noise=0.0 if _CFG.smooth_regularization_noise is None else
                    _CFG.smooth_regularization_noise_kwargs["std"],
                    noise_clip=_CFG.smooth_regularization_clip, policy_delay=_CFG.policy_delay)
    takes_noise = False  # skrl draws its own noise; the critics report the a' it made
    smoothing = None     # TD3_CFG's smooth_regularization_noise std, in action units...
    per_half_range = False  # ...or, where True, in action half-ranges as td3.py's
    advice = {  # what to change, in skrl's terms
        "polyak_as_tau": "set TD3_CFG's polyak to the paper's tau (0.005): skrl's polyak is the "
                         "share of the live network, not of the target",
        "no_smoothing": "set TD3_CFG's smooth_regularization_noise to GaussianNoise, with "
                        "smooth_regularization_noise_kwargs std 0.2 times the action half-range "
                        "(skrl's noise is in action units), and smooth_regularization_clip 0.5 "
                        "times it",
        "noise_unscaled": "give skrl's GaussianNoise std and smooth_regularization_clip in action "
                          "units: the paper's 0.2 and 0.5 times the action half-range",
    }

    def __init__(self, obs_dim, act_dim, act_low, act_high):
        s = self.settings
        obs_space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
        act_space = gym.spaces.Box(act_low, act_high, (act_dim,), np.float32)
        scale = torch.as_tensor((act_high - act_low) / 2)
        bias = torch.as_tensor((act_high + act_low) / 2)
        self.seen = {}
        models = {"policy": _Actor(obs_space, act_space, scale, bias),
                  "target_policy": _Actor(obs_space, act_space, scale, bias)}
        for name in ("critic_1", "critic_2", "target_critic_1", "target_critic_2"):
            models[name] = _Critic(obs_space, act_space, self.seen)
        half = 1.0
        if self.per_half_range:  # skrl's std and clip are one number each: one half-range
            if not np.allclose(act_high - act_low, act_high[0] - act_low[0]):
                raise ValueError("skrl's noise is one number: this adapter takes envs whose "
                                 "action dimensions have the same range")
            half = float(act_high[0] - act_low[0]) / 2
        cfg = TD3_CFG(discount_factor=s["gamma"], polyak=s["tau"],
                      learning_rate=(s["pi_lr"], s["q_lr"]), policy_delay=s["policy_delay"],
                      smooth_regularization_clip=s["noise_clip"] * half)
        if self.smoothing is not None:
            cfg.smooth_regularization_noise = GaussianNoise
            cfg.smooth_regularization_noise_kwargs = dict(mean=0.0, std=self.smoothing * half,
                                                          device="cpu")
        cfg.experiment.write_interval = 0  # no TensorBoard writer, no checkpoints on disk
        cfg.experiment.checkpoint_interval = 0
        self.memory = RandomMemory(memory_size=4096, num_envs=1, device="cpu")
        self.agent = TD3(models=models, memory=self.memory, observation_space=obs_space,
                         action_space=act_space, device="cpu", cfg=cfg)
        self.agent.init()
        self.agent.enable_training_mode(True, apply_to_models=True)  # as skrl's trainer does
        a = self.agent
        self.nets = {"pi": a.policy, "pi_targ": a.target_policy, "q1": a.critic_1,
                     "q2": a.critic_2, "q1_targ": a.target_critic_1, "q2_targ": a.target_critic_2}
        for opt, nets in ((a.critic_optimizer, ("q1", "q2")), (a.policy_optimizer, ("pi",))):
            opt.register_step_post_hook(lambda *_, nets=nets: self.seen.setdefault(
                "grads", {}).update({n: torch_grads(self.nets[n]) for n in nets}))

    def actor(self, obs):
        with torch.no_grad():
            inputs = {"observations": torch.as_tensor(obs)}
            return self.agent.policy.act(inputs, role="policy")[0].numpy()

    def critics(self, obs, act):
        inputs = {"observations": torch.as_tensor(obs), "taken_actions": torch.as_tensor(act)}
        with torch.no_grad():
            return [self.agent.critic_1.act(inputs, role="critic_1")[0].numpy(),
                    self.agent.critic_2.act(inputs, role="critic_2")[0].numpy()]

    def done_flag(self, terminated, truncated):
        """What skrl's update bootstraps with: record_transition keeps terminated alone."""
        one = lambda x, dtype=torch.float32: torch.as_tensor([[x]], dtype=dtype)
        self.memory.reset()
        o = torch.zeros((1, self.agent.observation_space.shape[0]))
        self.agent.record_transition(
            observations=o, states=None, actions=torch.zeros((1, self.agent.action_space.shape[0])),
            rewards=one(0.0), next_observations=o, next_states=None,
            terminated=one(terminated, torch.bool), truncated=one(truncated, torch.bool),
            infos={}, timestep=0, timesteps=1)
        return float(self.memory.get_tensor_by_name("terminated")[0].item())

    def update(self, batch, normal):
        """One call of skrl's update() on the checker's rows, in order."""
        self.seen.clear()
        t = lambda k: torch.as_tensor(batch[k])
        n = len(batch["obs"])
        self.memory.reset()
        for i in range(n):  # one transition per call, as skrl's trainer records them (add_samples
            # given many rows at once moves its write position after each tensor: rows misalign)
            self.memory.add_samples(observations=t("obs")[i:i + 1], actions=t("act")[i:i + 1],
                                    rewards=t("rew")[i:i + 1, None],
                                    next_observations=t("obs2")[i:i + 1],
                                    terminated=t("done")[i:i + 1, None].bool())
        rows = torch.arange(n)
        self.memory.sample = lambda names, batch_size, **_: self.memory.sample_by_index(
            names, indexes=rows)
        self.agent.update(timestep=0, timesteps=1)
        self.agent.tracking_data.clear()
        return dict(self.seen)


class Paper(Defaults):
    """skrl with the paper's target smoothing: GaussianNoise(0, 0.2), clipped at 0.5, each
    times the action half-range (skrl takes them in action units)."""
    settings = dict(Defaults.settings, target_noise=0.2)
    smoothing = 0.2
    per_half_range = True
