"""The classic mistakes of a TD3 port, each a drop-in for one of td3.py's swap points.

Classic mistakes of TD3 ports (from TensorFlow and Keras, say), each of which can keep a
port from ever learning BipedalWalker-v3; notebook 4 shows each one. Every function below has the signature of the piece of td3.py it replaces,
so one run can carry exactly one mistake and nothing else changes:

    python td3.py --env BipedalWalker-v3 --no_stop --epochs 30 --seed 0 \
        --critic_loss notebooks.port_mistakes:q2_own_target \
        --exp_name td3-BipedalWalker-v3-q2_own_target

Two more mistakes are settings, not code: the Polyak weight confused with the paper's tau
(``--polyak 0.005``: the targets are 99.5% the live networks, nearly a copy every update),
and the TD3 authors' discount and learning rates with BipedalWalker-v3's raw -100 fall
penalty (``--gamma 0.99 --pi_lr 3e-4 --q_lr 3e-4 --no_reward_floor``). variants.py holds
every mistake's words and td3.py options; ``python sweep.py --variants q2_own_target ...``
runs them, each under the name ``td3-<env>-<mistake>``. check_port.py replays a port's
update with each of them in place of td3.py's piece, to name the one the port made.
"""
import torch

import core


def q2_own_target(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    """Replaces td3.critic_loss: Q2 regresses onto its own target r + gamma * Q2'(s', a')."""
    y = core.clipped_double_q_target(r, d, q1_targ, q2_targ, gamma)   # Q1's target: right
    y2 = r + gamma * (1 - d) * q2_targ                                # Q2's own: the bug
    return ((q1 - y) ** 2).mean() + ((q2 - y2) ** 2).mean()


def q2_next_value(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    """Replaces td3.critic_loss: Q2 regresses onto Q2'(s', a') itself, reward and discount
    left out (the classic TensorFlow port's ``MSE(value2, target_value2)``)."""
    y = core.clipped_double_q_target(r, d, q1_targ, q2_targ, gamma)
    return ((q1 - y) ** 2).mean() + ((q2 - q2_targ) ** 2).mean()


def column_critics(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    """Replaces td3.critic_loss: critics that return (B, 1), as Keras Dense(1) does, against
    (B,) rewards. (B,) + (B, 1) broadcasts to (B, B), so every target pairs one sample's
    next value with every sample's reward. This loss forms its own target, so the shape
    check in core.clipped_double_q_target never sees it (it was the port's)."""
    v1, v2 = q1.unsqueeze(1), q2.unsqueeze(1)                 # (B, 1)
    q_next = torch.min(q1_targ, q2_targ).unsqueeze(1)          # (B, 1)
    y = r + gamma * (1 - d) * q_next                           # (B,) + (B, 1) -> (B, B)
    return ((v1 - y) ** 2).mean() + ((v2 - y) ** 2).mean()     # (B, 1) - (B, B) -> (B, B)


def shared_noise(pi_targ, target_noise, noise_clip, act_low, act_high, act_scale, normal=None):
    """Replaces core.smoothed_target_action: one noise vector, drawn once per batch (as
    ``tf.random.normal([act_dim])`` does), shifts every target action the same way."""
    normal = torch.randn(1, pi_targ.shape[1], device=pi_targ.device) if normal is None else normal[:1]
    eps = normal * target_noise
    eps = eps.clamp(-noise_clip, noise_clip)
    return torch.max(torch.min(pi_targ + eps * act_scale, act_high), act_low)


def truncation_as_death(terminated, truncated):
    """Replaces td3.done_flag: the time limit stored as a terminal state (value 0)."""
    return float(terminated or truncated)


def summed_loss(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    """Replaces td3.critic_loss: squared errors summed over the batch instead of averaged."""
    y = core.clipped_double_q_target(r, d, q1_targ, q2_targ, gamma)
    return ((q1 - y) ** 2).sum() + ((q2 - y) ** 2).sum()


def no_min(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    """Replaces td3.critic_loss: both critics regress onto Q1' alone (no minimum)."""
    y = core.clipped_double_q_target(r, d, q1_targ, None, gamma, twin=False)
    return ((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean()


def done_ignored(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    """Replaces td3.critic_loss: y = r + gamma * min(Q1', Q2'), bootstrapping past a fall."""
    y = core.clipped_double_q_target(r, torch.zeros_like(d), q1_targ, q2_targ, gamma)
    return ((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean()


def discount_on_done(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    """Replaces td3.critic_loss: y = r + (1 - gamma * d) * min(Q1', Q2')."""
    y = r + (1 - gamma * d) * torch.min(q1_targ, q2_targ)
    return ((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean()


def done_inverted(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    """Replaces td3.critic_loss: y = r + gamma * d * min(Q1', Q2'), ``d`` where ``1 - d``
    belongs: the target bootstraps only where the episode ended."""
    y = r + gamma * d * torch.min(q1_targ, q2_targ)
    return ((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean()


def huber_loss(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    """Replaces td3.critic_loss: the Huber (smooth L1) loss in place of the squared error,
    TorchRL's default: beyond 1, a TD error pulls with a constant force."""
    y = core.clipped_double_q_target(r, d, q1_targ, q2_targ, gamma)
    huber = torch.nn.functional.smooth_l1_loss
    return huber(q1, y) + huber(q2, y)


def noise_unclipped(pi_targ, target_noise, noise_clip, act_low, act_high, act_scale, normal=None):
    """Replaces core.smoothed_target_action: the noise is never clipped to +-noise_clip."""
    return core.smoothed_target_action(pi_targ, target_noise, float("inf"), act_low, act_high,
                                       act_scale, normal)


def action_unclipped(pi_targ, target_noise, noise_clip, act_low, act_high, act_scale, normal=None):
    """Replaces core.smoothed_target_action: pi_targ + noise is not clipped to the bounds."""
    inf = torch.full_like(act_low, float("inf"))
    return core.smoothed_target_action(pi_targ, target_noise, noise_clip, -inf, inf, act_scale,
                                       normal)


def noise_unscaled(pi_targ, target_noise, noise_clip, act_low, act_high, act_scale, normal=None):
    """Replaces core.smoothed_target_action: the noise in raw units, not action half-ranges."""
    return core.smoothed_target_action(pi_targ, target_noise, noise_clip, act_low, act_high,
                                       torch.ones_like(act_scale), normal)
