"""Networks and the small pieces of TD3 math, each testable on its own.

This file holds what TD3 *is* apart from the training loop:

* ``mlp``, the ``Actor`` (a tanh policy scaled to the env's action bounds), the
  ``QFunction`` critic and ``MLPActorCritic``, which bundles one actor with twin critics;
* trick 1, clipped double-Q learning: ``clipped_double_q_target``;
* trick 3, target policy smoothing: ``smoothed_target_action``;
* the discounted return that followed each step (what the critic estimates): ``discounted_returns``;
* the Polyak average of the target networks: ``polyak_update``;
* exploration noise that keeps its direction for a while: ``pink_noise``.

Trick 2, delayed policy updates, is a decision about *when* to update, so it lives in the
loop's ``update`` in ``td3.py``.

Shapes, everywhere in this project: observations ``(B, obs_dim)``, actions ``(B, act_dim)``,
rewards, done flags and Q values ``(B,)``. A critic that returned ``(B, 1)`` would broadcast
against ``(B,)`` rewards to ``(B, B)`` and the agent would quietly never learn; the target
functions below check the shapes (``check_same_shape``, a real error that ``python -O``
keeps, not an ``assert``) so that mistake fails loudly instead.

Nothing here touches an environment, the replay buffer or a file.
"""
import functools

import numpy as np
import torch
import torch.nn as nn


def mlp(sizes, activation=nn.ReLU, output_activation=nn.Identity):
    """A stack of Linear layers: ``sizes=[in, h1, h2, out]`` gives three layers."""
    layers = []
    for j in range(len(sizes) - 1):
        act = activation if j < len(sizes) - 2 else output_activation
        layers += [nn.Linear(sizes[j], sizes[j + 1]), act()]
    return nn.Sequential(*layers)


class Actor(nn.Module):
    """Deterministic policy pi(s): tanh squashes to [-1, 1], then an affine map puts the
    action inside the env's Box bounds (which need not be symmetric or +-1)."""

    def __init__(self, obs_dim, act_dim, hidden_sizes, activation, act_low, act_high):
        super().__init__()
        self.net = mlp([obs_dim, *hidden_sizes, act_dim], activation, nn.Tanh)
        low = torch.as_tensor(act_low, dtype=torch.float32)
        high = torch.as_tensor(act_high, dtype=torch.float32)
        # Buffers, not parameters: they move with .to(device) and are saved, never trained.
        self.register_buffer("act_scale", (high - low) / 2)
        self.register_buffer("act_bias", (high + low) / 2)
        # The bounds themselves, for clipping (not saved: they are the env's, as built).
        self.register_buffer("act_low", low, persistent=False)
        self.register_buffer("act_high", high, persistent=False)

    def forward(self, obs):
        return self.act_scale * self.net(obs) + self.act_bias

    def bounds(self):
        """The action bounds and half-range, (low, high, scale), as numpy arrays."""
        return tuple(x.cpu().numpy() for x in (self.act_low, self.act_high, self.act_scale))


class QFunction(nn.Module):
    """Q(s, a) -> shape (B,). The squeeze is the point: see the module docstring."""

    def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
        super().__init__()
        self.net = mlp([obs_dim + act_dim, *hidden_sizes, 1], activation)

    def forward(self, obs, act):
        return self.net(torch.cat([obs, act], dim=-1)).squeeze(-1)


class MLPActorCritic(nn.Module):
    """One actor ``pi`` and twin critics ``q1``, ``q2`` (TD3 trains two, uses the smaller)."""

    def __init__(self, observation_space, action_space, hidden_sizes=(256, 256),
                 activation=nn.ReLU):
        super().__init__()
        obs_dim = observation_space.shape[0]
        act_dim = action_space.shape[0]
        self.pi = Actor(obs_dim, act_dim, hidden_sizes, activation,
                        action_space.low, action_space.high)
        self.q1 = QFunction(obs_dim, act_dim, hidden_sizes, activation)
        self.q2 = QFunction(obs_dim, act_dim, hidden_sizes, activation)

    @torch.no_grad()
    def act(self, obs):
        """The deterministic action for one observation or a batch, as a numpy array."""
        device = self.pi.act_scale.device
        obs = torch.as_tensor(obs, dtype=torch.float32, device=device)
        return self.pi(obs).cpu().numpy()


class ShapeError(ValueError):
    """Tensors that would broadcast into a wrong shape instead of failing."""


def check_same_shape(**tensors):
    """Raise ShapeError unless every tensor has the same 1-D (B,) shape."""
    shapes = {name: tuple(x.shape) for name, x in tensors.items()}
    if len(set(shapes.values())) != 1 or len(next(iter(shapes.values()))) != 1:
        raise ShapeError("TD target shapes differ (all must be (B,)): " +
                         ", ".join(f"{n} {s}" for n, s in shapes.items()))


# ---------------------------------------------------------------------------------------
# Trick 1: Clipped double-Q learning
#
# A single critic's maximisation bias compounds through bootstrapping: the actor seeks out
# actions whose Q is overestimated, and the TD target then copies that error backwards.
# TD3 learns two critics and builds the target from the smaller of their two estimates,
# element by element, so an error has to fool both critics to survive. Both critics
# regress onto this one shared target (a port that gives Q2 its own target is not TD3).
# ---------------------------------------------------------------------------------------
def clipped_double_q_target(r, d, q1_targ, q2_targ, gamma, twin=True):
    """TD target  y = r + gamma * (1 - d) * min(Q1'(s', a'), Q2'(s', a')).

    ``d`` is 1 only where the episode *terminated* (a real end: the walker fell); a
    time-limit truncation is not a terminal state, so it must arrive here as d = 0 and
    keep bootstrapping. With ``twin=False`` (the ``--no_twin`` ablation) only Q1' is used,
    which is what DDPG does; ``q2_targ`` may then be None.
    """
    q_targ = torch.min(q1_targ, q2_targ) if twin else q1_targ
    # The (B,) + (B, 1) -> (B, B) broadcast is the classic silent killer of TD3 ports.
    check_same_shape(r=r, d=d, q_targ=q_targ)
    return r + gamma * (1 - d) * q_targ


# ---------------------------------------------------------------------------------------
# Trick 3: Target policy smoothing
#
# A deterministic target policy lets the critic fit a narrow, wrong peak in Q and the
# target exploit it. Adding clipped noise to the target action makes the target an average
# of Q over a small neighbourhood of a', which smooths those peaks away. The noise is drawn
# independently for every sample and every action dimension (one vector shared by the
# whole batch, a common porting mistake, pushes every target of a batch the same way, so
# each critic step is biased in one random direction), clipped to +-noise_clip, and the
# noisy action is clipped back into the env's bounds. Noise scales are in units of the
# action half-range, so target_noise=0.2 means 20% of (high - low) / 2 on every env.
# ---------------------------------------------------------------------------------------
def smoothed_target_action(pi_targ, target_noise, noise_clip, act_low, act_high, act_scale,
                           normal=None):
    """Trick 3's target action a' = clip(pi_targ(s') + act_scale * clip(eps, -c, c), low, high),
    eps ~ N(0, target_noise^2), with c = noise_clip; the TD target is then taken at (s', a').

    ``pi_targ`` is (B, act_dim); ``act_low``/``act_high``/``act_scale`` are (act_dim,)
    tensors. ``target_noise=0`` (the ``--no_smoothing`` ablation) returns ``pi_targ``.
    ``normal``: the N(0, 1) draws to use, (B, act_dim), for check_port.py to give a port and
    td3.py the same noise; None draws them here.
    """
    if target_noise == 0:
        return pi_targ
    eps = (torch.randn_like(pi_targ) if normal is None else normal) * target_noise
    eps = eps.clamp(-noise_clip, noise_clip) * act_scale
    return torch.max(torch.min(pi_targ + eps, act_high), act_low)


def discounted_returns(rews, gamma):
    """G_t = r_t + gamma * G_{t+1}, for every step of one episode."""
    out, g = np.zeros(len(rews), dtype=np.float32), 0.0
    for i in range(len(rews) - 1, -1, -1):
        g = rews[i] + gamma * g
        out[i] = g
    return out


def polyak_update(params, targ_params, polyak):
    """targ <- polyak * targ + (1 - polyak) * param, for every pair, in place.

    ``targ.lerp_(param, w)`` is ``targ + w * (param - targ)``: with ``w = 1 - polyak`` the
    same average in one call per tensor (and the same numbers the runs in results/ used).
    """
    for p, p_targ in zip(params, targ_params):
        p_targ.lerp_(p, 1.0 - polyak)


@functools.lru_cache(maxsize=2)  # td3() asks for the same episode's sequence at every step
def pink_noise(seed, steps, dims):
    """``(steps, dims)`` pink noise drawn from ``seed``: zero mean and unit standard deviation
    in each column, power falling as 1/frequency (Eberhard et al., ICLR 2023).

    Gaussian noise drawn afresh at every step averages out within a few steps, so it barely
    moves a policy that stands still or hovers; pink noise keeps its sign for longer, so its
    excursions are coherent. td3() draws one sequence per episode from the episode's reset
    seed, so a resumed run rebuilds it and the run's own random stream is not touched.
    """
    rng = np.random.default_rng([seed, 1])  # a stream of its own, not the env's from this seed
    if steps < 2:
        return rng.standard_normal((steps, dims))
    freqs = np.fft.rfftfreq(steps)[1:]  # no frequency 0: no constant offset
    coeffs = rng.standard_normal((freqs.size, dims)) + 1j * rng.standard_normal((freqs.size, dims))
    x = np.fft.irfft(np.vstack([np.zeros((1, dims)), coeffs / np.sqrt(freqs)[:, None]]),
                     n=steps, axis=0)  # amplitude 1/sqrt(f): power 1/f
    x /= x.std(axis=0)
    x.setflags(write=False)
    return x
