"""The networks, the three tricks' math and the Polyak update, on known tensors."""
import gymnasium as gym
import numpy as np
import pytest
import torch

import core


def test_clipped_double_q_takes_elementwise_minimum():
    # Stub critics with known outputs: the minimum is taken per sample, not over the batch.
    r = torch.tensor([1.0, 2.0, 3.0])
    d = torch.zeros(3)
    q1 = torch.tensor([10.0, 0.0, 5.0])
    q2 = torch.tensor([4.0, 8.0, 5.0])
    y = core.clipped_double_q_target(r, d, q1, q2, gamma=0.5)
    assert torch.allclose(y, r + 0.5 * torch.tensor([4.0, 0.0, 5.0]))


def test_no_twin_uses_first_critic_only():
    r, d = torch.zeros(3), torch.zeros(3)
    q1, q2 = torch.tensor([10.0, 0.0, 5.0]), torch.tensor([4.0, 8.0, 5.0])
    y = core.clipped_double_q_target(r, d, q1, q2, gamma=1.0, twin=False)
    assert torch.equal(y, q1)
    assert torch.equal(core.clipped_double_q_target(r, d, q1, None, 1.0, twin=False), q1)


def test_termination_stops_bootstrap_truncation_does_not():
    # done = terminated only: a truncated transition arrives with d = 0 and bootstraps.
    r, q = torch.ones(2), torch.full((2,), 10.0)
    y = core.clipped_double_q_target(r, torch.tensor([0.0, 1.0]), q, q, gamma=0.9)
    assert torch.allclose(y, torch.tensor([1.0 + 9.0, 1.0]))


def test_target_catches_the_B_by_B_broadcast():
    r, d = torch.zeros(5), torch.zeros(5)
    q_column = torch.zeros(5, 1)  # a critic that forgot to squeeze
    assert (r + q_column).shape == (5, 5)  # what would silently happen without the check
    with pytest.raises(core.ShapeError, match="shapes"):
        core.clipped_double_q_target(r, d, q_column, q_column, 0.99)


def test_target_noise_is_per_sample_per_dimension_and_clipped():
    torch.manual_seed(0)
    B, A = 4096, 3
    low, high = torch.tensor([-2.0, 0.0, -1.0]), torch.tensor([2.0, 4.0, 1.0])
    scale = (high - low) / 2
    center = (high + low) / 2
    pi_targ = center.expand(B, A).clone()
    a2 = core.smoothed_target_action(pi_targ, target_noise=0.2, noise_clip=0.5,
                                     act_low=low, act_high=high, act_scale=scale)
    eps = (a2 - pi_targ) / scale  # noise in half-range units
    # clipped to +-noise_clip, and the clip is reached (std 0.2 -> |eps| > 0.5 sometimes)
    assert eps.abs().max() <= 0.5 + 1e-6
    assert (eps.abs() > 0.499).any()
    # per sample: rows differ; per dimension: columns differ within a row
    assert eps.std(dim=0).min() > 0.15
    assert (eps[:, 0] != eps[:, 1]).float().mean() > 0.99
    assert abs(eps.std().item() - 0.2) < 0.03  # roughly N(0, 0.2) before clipping


def test_smoothed_action_is_clipped_to_the_bounds():
    torch.manual_seed(0)
    low, high = torch.tensor([-1.0, 0.0]), torch.tensor([1.0, 3.0])
    pi_targ = high.expand(1000, 2).clone()  # at the upper bound: noise pushes half outside
    a2 = core.smoothed_target_action(pi_targ, 0.5, 0.5, low, high, (high - low) / 2)
    assert (a2 <= high).all() and (a2 >= low).all()
    assert (a2 < high).any()


def test_no_smoothing_returns_target_action_unchanged():
    pi_targ = torch.randn(8, 2)
    out = core.smoothed_target_action(pi_targ, 0.0, 0.5, -torch.ones(2), torch.ones(2), torch.ones(2))
    assert torch.equal(out, pi_targ)


def test_polyak_update_on_known_tensors():
    targ = [torch.zeros(3), torch.full((2, 2), 4.0)]
    src = [torch.ones(3), torch.zeros(2, 2)]
    core.polyak_update(src, targ, polyak=0.9)
    assert torch.allclose(targ[0], torch.full((3,), 0.1))
    assert torch.allclose(targ[1], torch.full((2, 2), 3.6))
    assert torch.equal(src[0], torch.ones(3))  # the source is untouched


def test_actor_critic_shapes_and_action_bounds():
    obs_space = gym.spaces.Box(-1, 1, (5,), np.float32)
    act_space = gym.spaces.Box(np.array([0.0, -3.0], np.float32), np.array([2.0, -1.0], np.float32))
    ac = core.MLPActorCritic(obs_space, act_space, hidden_sizes=(16, 16))
    o = torch.randn(7, 5) * 100  # large inputs drive tanh to its limits
    a = ac.pi(o)
    assert a.shape == (7, 2)
    assert (a[:, 0] >= 0).all() and (a[:, 0] <= 2).all()
    assert (a[:, 1] >= -3).all() and (a[:, 1] <= -1).all()
    assert ac.q1(o, a).shape == (7,) and ac.q2(o, a).shape == (7,)
    assert ac.act(np.zeros(5, np.float32)).shape == (2,)


def test_mlp_layers():
    net = core.mlp([3, 8, 8, 2])
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(3, 8), (8, 8), (8, 2)]
    assert isinstance(net[-1], torch.nn.Identity)


def test_pink_noise_is_unit_scale_one_over_f_and_drawn_from_its_seed():
    x = core.pink_noise(3, 1600, 4)
    assert x.shape == (1600, 4) and not x.flags.writeable
    assert np.allclose(x.std(axis=0), 1.0) and np.allclose(x.mean(axis=0), 0.0, atol=1e-9)
    assert np.array_equal(x, core.pink_noise.__wrapped__(3, 1600, 4))  # the seed decides it
    assert not np.allclose(x, core.pink_noise(4, 1600, 4))
    assert np.abs(np.corrcoef(x.T)[np.triu_indices(4, 1)]).max() < 0.5  # dimensions independent
    # Power against frequency over many sequences: a slope of -1 on log-log axes (white: 0).
    seqs = np.concatenate([core.pink_noise.__wrapped__(s, 1024, 8) for s in range(8)], axis=1)
    power = (np.abs(np.fft.rfft(seqs, axis=0)) ** 2).mean(axis=1)[1:]
    freqs = np.fft.rfftfreq(1024)[1:]
    slope = np.polyfit(np.log(freqs), np.log(power), 1)[0]
    assert -1.15 < slope < -0.85, slope
    # Consecutive steps keep their sign far more often than white noise's one in two.
    assert (np.sign(x[1:]) == np.sign(x[:-1])).mean() > 0.7
