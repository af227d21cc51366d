"""td3.py's own update as a port, for check_port.py: it must pass, and with one of
port_mistakes.py's drop-ins in a swap point, that mistake must be named, and only it.

    python check_port.py notebooks.td3_port:Adapter
    check_port.check(with_swaps(critic_loss=port_mistakes.q2_own_target))    # in Python
"""
import copy
import numpy as np
import torch

import core
import td3
from check_port import load_torch_weights, torch_grads, torch_weights


class _Space:  # what MLPActorCritic reads of a Box space
    def __init__(self, low, high):
        self.low, self.high, self.shape = low, high, low.shape


class Adapter:
    settings = dict(gamma=0.98, polyak=0.995, pi_lr=1e-3, q_lr=1e-3, target_noise=0.2,
                    noise_clip=0.5, policy_delay=2, reward_floor=-10.0)
    takes_noise = True
    swaps = {}

    def __init__(self, obs_dim, act_dim, act_low, act_high):
        obs = _Space(np.full(obs_dim, -np.inf, np.float32), np.full(obs_dim, np.inf, np.float32))
        self.ac = core.MLPActorCritic(obs, _Space(act_low, act_high))
        self.ac_targ = copy.deepcopy(self.ac).requires_grad_(False)
        self.n_updates = 0
        fields = td3.Hyperparameters.__dataclass_fields__  # (adam_eps is the optimizer's)
        self.hp = td3.Hyperparameters(**{k: v for k, v in self.settings.items() if k in fields})

    def nets(self):
        ac, t = self.ac, self.ac_targ
        return dict(pi=ac.pi.net, q1=ac.q1.net, q2=ac.q2.net, pi_targ=t.pi.net, q1_targ=t.q1.net,
                    q2_targ=t.q2.net)

    def get_weights(self):
        return torch_weights(self.nets())

    def set_weights(self, w):
        load_torch_weights(self.nets(), w)
        self.update_fn = None  # built at the first update: fresh optimizers on these weights

    def swap(self, point, default):
        return self.swaps.get(point, default)

    def grads(self, names):
        return {n: torch_grads(self.nets()[n]) for n in names}

    def actor(self, obs):
        return self.ac.act(obs)

    def critics(self, obs, act):
        with torch.no_grad():
            o, a = torch.as_tensor(obs), torch.as_tensor(act)
            return self.ac.q1(o, a).numpy(), self.ac.q2(o, a).numpy()

    def done_flag(self, terminated, truncated):
        return self.swap("done_flag", td3.done_flag)(terminated, truncated)

    def target_action(self, obs2, normal):
        pi = self.ac.pi
        with torch.no_grad():
            return self.swap("target_action", core.smoothed_target_action)(
                self.ac_targ.pi(torch.as_tensor(obs2)), self.hp.target_noise, self.hp.noise_clip,
                pi.act_low, pi.act_high, pi.act_scale,
                normal=torch.as_tensor(normal)).numpy()

    def update(self, batch, normal):
        self.normal = None if normal is None else torch.as_tensor(normal)  # None: td3.py draws
        if self.update_fn is None:
            target_action = self.swap("target_action", core.smoothed_target_action)

            def seen(*args):  # the a' the update used, reported to the checker
                self.a2 = target_action(*args, normal=self.normal)
                return self.a2
            self.update_fn = td3.build_update(self.ac, self.ac_targ, self.hp, None,
                                              self.swap("critic_loss", td3.critic_loss), seen)[0]
        self.n_updates += 1
        data = {k: torch.as_tensor(v) for k, v in batch.items()}
        moved_actor = self.update_fn(data, self.n_updates)
        return {"grads": self.grads(("q1", "q2", "pi") if moved_actor else ("q1", "q2")),
                "target_action": self.a2.numpy()}


def with_swaps(**swaps):
    """The adapter for td3.py with these swap points replaced (port_mistakes.py's drop-ins)."""
    return type("Adapter_" + "_".join(f.__name__ for f in swaps.values()), (Adapter,),
                {"swaps": swaps})


def with_settings(**settings):
    """The adapter for td3.py with these settings instead of its defaults."""
    return type("Adapter_settings", (Adapter,), {"settings": {**Adapter.settings, **settings}})
