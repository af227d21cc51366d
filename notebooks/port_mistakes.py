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
penalty (``--gamma 0.99 --pi_lr 3e-4 --q_lr 3e-4 --no_reward_floor``). ``RUNS`` lists all six
as td3.py options; ``python sweep.py --variants q2_own_target ...`` runs them, each under
the name ``td3-<env>-<mistake>``.
"""
import torch

import core


def q2_own_target(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    """Replaces td3.critic_loss: Q2 regresses onto its own target r + gamma * Q2'(s', a')."""
    y = core.clipped_double_q_target(r, d, q1_targ, q2_targ, gamma)   # Q1's target: right
    y2 = r + gamma * (1 - d) * q2_targ                                # Q2's own: the bug
    return ((q1 - y) ** 2).mean() + ((q2 - y2) ** 2).mean()


def column_critics(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    """Replaces td3.critic_loss: critics that return (B, 1), as Keras Dense(1) does, against
    (B,) rewards. (B,) + (B, 1) broadcasts to (B, B), so every target pairs one sample's
    next value with every sample's reward. This loss forms its own target, so the shape
    check in core.clipped_double_q_target never sees it (it was the port's)."""
    v1, v2 = q1.unsqueeze(1), q2.unsqueeze(1)                 # (B, 1)
    q_next = torch.min(q1_targ, q2_targ).unsqueeze(1)          # (B, 1)
    y = r + gamma * (1 - d) * q_next                           # (B,) + (B, 1) -> (B, B)
    return ((v1 - y) ** 2).mean() + ((v2 - y) ** 2).mean()     # (B, 1) - (B, B) -> (B, B)


def shared_noise(pi_targ, target_noise, noise_clip, act_low, act_high, act_scale):
    """Replaces core.smoothed_target_action: one noise vector, drawn once per batch (as
    ``tf.random.normal([act_dim])`` does), shifts every target action the same way."""
    eps = torch.randn(1, pi_targ.shape[1], device=pi_targ.device) * target_noise
    eps = eps.clamp(-noise_clip, noise_clip)
    return torch.max(torch.min(pi_targ + eps * act_scale, act_high), act_low)


def truncation_as_death(terminated, truncated):
    """Replaces td3.done_flag: the time limit stored as a terminal state (value 0)."""
    return float(terminated or truncated)


MODULE = "notebooks.port_mistakes"
# Each mistake as td3.py options, one mistake per run.
RUNS = {
    "q2_own_target": ["--critic_loss", f"{MODULE}:q2_own_target"],
    "column_critics": ["--critic_loss", f"{MODULE}:column_critics"],
    "shared_noise": ["--target_action", f"{MODULE}:shared_noise"],
    "truncation_as_death": ["--done_flag", f"{MODULE}:truncation_as_death"],
    "polyak_as_tau": ["--polyak", "0.005"],
    "authors_defaults": ["--gamma", "0.99", "--pi_lr", "3e-4", "--q_lr", "3e-4", "--no_reward_floor"],
}
