"""TorchRL's TD3Loss (TorchRL 0.14.1), in the update loop of its TD3 example, on the
checker's batch.

    python check_port.py notebooks.torchrl_port:Defaults   # TD3Loss's own defaults
    python check_port.py notebooks.torchrl_port:Paper      # the paper's squared loss and noise

TD3Loss's default critic loss is ``loss_function="smooth_l1"``, a Huber loss; the paper's, and
TorchRL's TD3 example config's, is ``"l2"``. ``Paper`` also gives the noise in action units, as
TD3Loss takes it: 0.2 and 0.5 times the action half-range. Both classes use the example's
optimizers (Adam, lr 3e-4, eps 1e-4), its SoftUpdate (tau 0.005) and its update loop, since
TorchRL has no update loop of its own: the value loss and the critic step, then, every second
update, the actor loss, the actor step and the target step.

How this adapter reaches TorchRL's code, without changing a line of it:
- the batch goes to ``value_loss`` as a TensorDict, its rows in order (the example samples a
  replay buffer there);
- the two critics are one network with stacked parameters, (2, out, in) each: critic i is
  row i of every tensor;
- the example's critic reads ``["action", "observation"]``, so its first layer's input
  columns are (a, s): get_weights and set_weights swap them to the checker's (s, a);
- the target action is read where TD3Loss hands it to its target critics (the vmapped call
  ``_vmap_qvalue_network00``, wrapped here), and the optimizers' step hooks report the
  gradients;
- TD3Loss's policy_noise and noise_clip are in action units; on an env whose bounds are not
  +-1 give them times the action half-range (a setting, not code).
"""
import inspect

import numpy as np
import torch
import torch.nn as nn
from tensordict import TensorDict
from torchrl.data import Bounded
from torchrl.modules import MLP, SafeModule, SafeSequential, TanhModule, ValueOperator
from torchrl.objectives import SoftUpdate, TD3Loss
from torchrl.objectives.utils import ValueEstimators, default_value_kwargs

_LAYERS = ("0", "2", "4")  # the Linear layers of TorchRL's MLP (ReLUs between)
# TD3Loss's defaults, read from TorchRL (a new version's are what gets checked); the optimizer,
# tau and the delay are its TD3 example config's (sota-implementations/td3/config.yaml)
_LOSS = {k: p.default for k, p in inspect.signature(TD3Loss.__init__).parameters.items()}
_GAMMA = default_value_kwargs(ValueEstimators.TD0)["gamma"]


class Defaults:
    """TD3Loss with its defaults: a Huber critic loss (loss_function="smooth_l1")."""
    settings = dict(gamma=_GAMMA, tau=0.005, pi_lr=3e-4, q_lr=3e-4,
                    target_noise=_LOSS["policy_noise"], noise_clip=_LOSS["noise_clip"],
                    policy_delay=2, adam_eps=1e-4)
    loss = {}  # TD3Loss's keyword arguments beyond the networks
    per_half_range = False  # policy_noise, noise_clip in action units (TD3Loss's), or where
                            # True, times the action half-range (td3.py's units)
    takes_noise = False  # TD3Loss draws its own noise; the wrapped call reports the a' it made
    advice = {  # what to change, in TorchRL's terms
        "huber_loss": "give TD3Loss loss_function=\"l2\", as TorchRL's TD3 example config does",
        "noise_unscaled": "give TD3Loss policy_noise and noise_clip in action units: the "
                          "paper's 0.2 and 0.5 times the action half-range",
        "polyak_as_tau": "give SoftUpdate tau=0.005 (or eps=0.995): its tau is the share of "
                         "the live network",
    }

    def __init__(self, obs_dim, act_dim, act_low, act_high):
        s = self.settings
        self.obs_dim, self.act_dim = obs_dim, act_dim
        spec = Bounded(low=torch.as_tensor(act_low), high=torch.as_tensor(act_high),
                       shape=(act_dim,))
        actor = SafeSequential(  # the example's make_td3_agent
            SafeModule(MLP(num_cells=[256, 256], out_features=act_dim, activation_class=nn.ReLU),
                       in_keys=["observation"], out_keys=["param"]),
            TanhModule(in_keys=["param"], out_keys=["action"], spec=spec))
        qvalue = ValueOperator(in_keys=["action", "observation"], module=MLP(
            num_cells=[256, 256], out_features=1, activation_class=nn.ReLU))
        with torch.no_grad():  # the lazy layers take their sizes, as the example does
            td = TensorDict(observation=torch.zeros(1, obs_dim), action=torch.zeros(1, act_dim),
                            batch_size=[1])
            actor(td.clone()), qvalue(td.clone())
        half = 1.0
        if self.per_half_range:  # TD3Loss's noise is one number: one half-range
            if not np.allclose(act_high - act_low, act_high[0] - act_low[0]):
                raise ValueError("TD3Loss's noise is one number: this adapter takes envs whose "
                                 "action dimensions have the same range")
            half = float(act_high[0] - act_low[0]) / 2
        self.loss_module = L = TD3Loss(actor_network=actor, qvalue_network=qvalue,
                                       num_qvalue_nets=2, action_spec=spec,
                                       policy_noise=s["target_noise"] * half,
                                       noise_clip=s["noise_clip"] * half, **self.loss)
        L.make_value_estimator(gamma=s["gamma"])
        self.target_updater = SoftUpdate(L, tau=s["tau"])
        critic_params = list(L.qvalue_network_params.flatten_keys().values())
        actor_params = list(L.actor_network_params.flatten_keys().values())
        self.optimizer_critic = torch.optim.Adam(critic_params, lr=s["q_lr"], eps=s["adam_eps"])
        self.optimizer_actor = torch.optim.Adam(actor_params, lr=s["pi_lr"], eps=s["adam_eps"])
        self.update_counter = 0
        self.seen = {}
        vmapped = L._vmap_qvalue_network00

        def watched(td, params):  # the first call of value_loss: the target critics on (s', a')
            if params is L.target_qvalue_network_params:
                self.seen["target_action"] = td["action"][0].detach().numpy().copy()
            return vmapped(td, params)

        L._vmap_qvalue_network00 = watched
        self.optimizer_critic.register_step_post_hook(lambda *_: self.seen.setdefault(
            "grads", {}).update(q1=self._critic(0, grad=True), q2=self._critic(1, grad=True)))
        self.optimizer_actor.register_step_post_hook(lambda *_: self.seen.setdefault(
            "grads", {}).update(pi=self._actor(L.actor_network_params, grad=True)))

    # --- the weights: TorchRL's (out, in) tensors, stacked for the critics, (a, s) first layer
    def _actor(self, params, grad=False):
        out = []
        for k in _LAYERS:
            for name in ("weight", "bias"):
                x = params["module", "0", "module", k, name]
                x = (x.grad if grad else x).detach().numpy()
                out.append(x.T.copy() if name == "weight" else x.copy())
        return out

    def _critic(self, i, params=None, grad=False):
        params = self.loss_module.qvalue_network_params if params is None else params
        out = []
        for k in _LAYERS:
            w, b = params["module", k, "weight"], params["module", k, "bias"]
            w, b = ((w.grad, b.grad) if grad else (w, b))
            w = w[i].detach().numpy().T
            if k == "0":  # input rows (a, s) -> (s, a)
                w = np.concatenate([w[self.act_dim:], w[:self.act_dim]])
            out += [w.copy(), b[i].detach().numpy().copy()]
        return out

    def get_weights(self):
        L = self.loss_module
        return {"pi": self._actor(L.actor_network_params),
                "pi_targ": self._actor(L.target_actor_network_params),
                "q1": self._critic(0), "q2": self._critic(1),
                "q1_targ": self._critic(0, L.target_qvalue_network_params),
                "q2_targ": self._critic(1, L.target_qvalue_network_params)}

    def set_weights(self, w):
        L, t = self.loss_module, torch.as_tensor
        with torch.no_grad():
            for params, name in ((L.actor_network_params, "pi"),
                                 (L.target_actor_network_params, "pi_targ")):
                for j, k in enumerate(_LAYERS):
                    params["module", "0", "module", k, "weight"].copy_(t(w[name][2 * j].T))
                    params["module", "0", "module", k, "bias"].copy_(t(w[name][2 * j + 1]))
            for params, names in ((L.qvalue_network_params, ("q1", "q2")),
                                  (L.target_qvalue_network_params, ("q1_targ", "q2_targ"))):
                for i, name in enumerate(names):
                    for j, k in enumerate(_LAYERS):
                        W = w[name][2 * j]
                        if k == "0":  # input rows (s, a) -> (a, s)
                            W = np.concatenate([W[self.obs_dim:], W[:self.obs_dim]])
                        params["module", k, "weight"][i].copy_(t(W.T))
                        params["module", k, "bias"][i].copy_(t(w[name][2 * j + 1]))

    def actor(self, obs):
        L = self.loss_module
        with torch.no_grad(), L.actor_network_params.to_module(L.actor_network):
            td = TensorDict(observation=torch.as_tensor(obs), batch_size=[len(obs)])
            return L.actor_network(td)["action"].numpy()

    def critics(self, obs, act):
        L = self.loss_module
        td = TensorDict(observation=torch.as_tensor(obs), action=torch.as_tensor(act),
                        batch_size=[len(obs)])
        qs = []
        with torch.no_grad():
            for i in range(2):
                with L.qvalue_network_params[i].to_module(L.qvalue_network):
                    qs.append(L.qvalue_network(td.clone())["state_action_value"].numpy())
        return qs

    def done_flag(self, terminated, truncated):
        """What TD3Loss's value estimator bootstraps with: a row of reward 0 and a next value of
        1 gives gamma * (1 - done)."""
        flag = lambda x: torch.tensor([[x]])
        td = TensorDict(observation=torch.zeros(1, self.obs_dim),
                        next=TensorDict(reward=torch.zeros(1, 1), terminated=flag(terminated),
                                        truncated=flag(truncated),
                                        done=flag(terminated or truncated),
                                        state_action_value=torch.ones(1, 1), batch_size=[1]),
                        batch_size=[1])
        value = self.loss_module.value_estimator.value_estimate(td)
        gamma = self.loss_module.value_estimator.gamma
        return round(1.0 - float(value.item()) / float(gamma), 6)  # float32

    def update(self, batch, normal):
        """One update of the example's loop on the checker's rows, in order."""
        self.seen.clear()
        t, n = torch.as_tensor, len(batch["obs"])
        done = t(batch["done"])[:, None].bool()
        td = TensorDict(observation=t(batch["obs"]), action=t(batch["act"]),
                        next=TensorDict(observation=t(batch["obs2"]),
                                        reward=t(batch["rew"])[:, None], done=done,
                                        terminated=done.clone(),
                                        truncated=torch.zeros_like(done), batch_size=[n]),
                        batch_size=[n])
        self.update_counter += 1
        update_actor = self.update_counter % int(self.settings["policy_delay"]) == 0
        q_loss, *_ = self.loss_module.value_loss(td)
        self.optimizer_critic.zero_grad()
        q_loss.backward()
        self.optimizer_critic.step()
        if update_actor:
            actor_loss, *_ = self.loss_module.actor_loss(td)
            self.optimizer_actor.zero_grad()
            actor_loss.backward()
            self.optimizer_actor.step()
            self.target_updater.step()
        return dict(self.seen)


class Paper(Defaults):
    """TD3Loss with the paper's squared critic loss (TorchRL's TD3 example config) and its
    noise times the action half-range."""
    loss = dict(loss_function="l2")
    per_half_range = True
