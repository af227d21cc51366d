"""td3.build_update: trick 2's schedule, --no_twin, and equality with a plain reference."""
import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

import core
import td3

from reference_td3 import make_pair, random_batches


def HP(**kwargs):
    """Hyperparameters as td3() resolves them (no "auto" left), with ``kwargs`` changed."""
    return td3.Hyperparameters(**{"gamma": 0.98, **kwargs})


def small_ac(seed=0):
    torch.manual_seed(seed)
    ac = core.MLPActorCritic(gym.spaces.Box(-1, 1, (3,), np.float32),
                             gym.spaces.Box(-1, 1, (2,), np.float32), hidden_sizes=(16, 16))
    ac_targ = copy.deepcopy(ac)
    for p in ac_targ.parameters():
        p.requires_grad_(False)
    return ac, ac_targ


def flat(module):
    return torch.cat([p.detach().reshape(-1).clone() for p in module.parameters()])


@pytest.mark.parametrize("policy_delay", [1, 2, 3])
def test_delayed_policy_updates_count(policy_delay):
    ac, ac_targ = small_ac()
    update, _, _ = td3.build_update(ac, ac_targ, HP(policy_delay=policy_delay))
    batches = random_batches(12, batch_size=8, obs_dim=3, act_dim=2)
    pi_moves = targ_moves = q_moves = 0
    for n, b in enumerate(batches, start=1):
        pi0, targ0, q0 = flat(ac.pi), flat(ac_targ), flat(ac.q1)
        updated = update(b, n_updates=n)
        pi_moves += not torch.equal(pi0, flat(ac.pi))
        targ_moves += not torch.equal(targ0, flat(ac_targ))
        q_moves += not torch.equal(q0, flat(ac.q1))
        assert updated == (n % policy_delay == 0)
    assert q_moves == 12                      # critics: every update
    assert pi_moves == 12 // policy_delay     # actor: once per policy_delay
    assert targ_moves == 12 // policy_delay   # all targets: with the actor


def test_actor_step_adds_no_gradient_to_the_critics():
    # Two copies from one state and seed: one also takes an actor step. The critics are
    # frozen during it, so their gradients stay exactly the critic loss's.
    b = random_batches(1, batch_size=8, obs_dim=3, act_dim=2)[0]
    grads = []
    for delay in (1, 10**9):
        ac, ac_targ = small_ac()
        update, _, _ = td3.build_update(ac, ac_targ, HP(policy_delay=delay))
        torch.manual_seed(5)
        assert update(b, n_updates=1) == (delay == 1)
        grads.append(torch.cat([p.grad.reshape(-1) for p in ac.q1.parameters()]))
        assert all(p.requires_grad for p in ac.q1.parameters())  # unfrozen afterwards
    assert torch.equal(grads[0], grads[1])


def test_no_twin_trains_and_uses_one_critic():
    ac, ac_targ = small_ac()
    update, _, _ = td3.build_update(ac, ac_targ, HP(twin=False))
    q1_before, q2_before, pi_before = flat(ac.q1), flat(ac.q2), flat(ac.pi)
    for n, b in enumerate(random_batches(4, batch_size=8, obs_dim=3, act_dim=2), start=1):
        update(b, n_updates=n)
    assert not torch.equal(flat(ac.q1), q1_before)   # it trains: Q1 and the actor move
    assert not torch.equal(flat(ac.pi), pi_before)
    assert torch.equal(flat(ac.q2), q2_before)       # and uses one critic: Q2 never does


def test_update_rejects_column_shaped_rewards():
    ac, ac_targ = small_ac()
    update, _, _ = td3.build_update(ac, ac_targ, HP())
    b = random_batches(1, batch_size=8, obs_dim=3, act_dim=2)[0]
    b["rew"] = b["rew"].unsqueeze(1)  # (B, 1): the port bug
    with pytest.raises(core.ShapeError):
        update(b, n_updates=1)


def test_both_critics_regress_onto_the_one_shared_target():
    # Q2's target critic is far more optimistic than Q1's; TD3's target is the minimum
    # for both critics, so critics that already sit on it have zero loss. The port's bug
    # (Q2 regressing onto r + gamma * Q2') would leave Q2 a loss of 54.
    r, d = torch.tensor([1.0, -1.0, 0.5]), torch.tensor([0.0, 1.0, 0.0])
    q1_targ, q2_targ = torch.tensor([2.0, 3.0, -1.0]), torch.tensor([12.0, 13.0, 9.0])
    y = r + 0.9 * (1 - d) * torch.min(q1_targ, q2_targ)
    assert td3.critic_loss(y.clone(), y.clone(), r, d, q1_targ, q2_targ, 0.9).item() == 0.0
    own = r + 0.9 * (1 - d) * q2_targ
    loss = td3.critic_loss(y.clone(), own, r, d, q1_targ, q2_targ, 0.9)
    assert loss.item() == pytest.approx(((own - y) ** 2).mean().item())
    assert loss.item() == pytest.approx(54.0)
    # --no_twin: Q2 is ignored and Q1' alone forms the target.
    assert td3.critic_loss(r + 0.9 * (1 - d) * q1_targ, None, r, d, q1_targ, None, 0.9,
                           twin=False).item() == 0.0


def test_critic_loss_rejects_column_shaped_values():
    r, d, q = torch.zeros(4), torch.zeros(4), torch.zeros(4)
    with pytest.raises(core.ShapeError, match=r"q1 \(4, 1\)"):
        td3.critic_loss(q.unsqueeze(1), q.unsqueeze(1), r, d, q, q, 0.9)  # (B, 1) critics


# Tolerance: the two updates do the same math, but fused Adam and the in-place lerp round
# differently from default Adam and copy_(tau * p + (1 - tau) * t); over a few updates the
# parameters agree to 1e-5 absolute (measured max difference is about 1e-7).
TOL = 1e-5


def _max_diff(ac, ac_targ, ref):
    ours = [flat(ac.pi), flat(ac.q1), flat(ac.q2), flat(ac_targ.pi), flat(ac_targ.q1), flat(ac_targ.q2)]
    def cat(layers):
        return torch.cat([p.detach().reshape(-1) for l in layers for p in l.parameters()])
    theirs = [cat([ref.actor.l1, ref.actor.l2, ref.actor.l3]),
              cat([ref.critic.l1, ref.critic.l2, ref.critic.l3]),
              cat([ref.critic.l4, ref.critic.l5, ref.critic.l6]),
              cat([ref.actor_target.l1, ref.actor_target.l2, ref.actor_target.l3]),
              cat([ref.critic_target.l1, ref.critic_target.l2, ref.critic_target.l3]),
              cat([ref.critic_target.l4, ref.critic_target.l5, ref.critic_target.l6])]
    return max((a - b).abs().max().item() for a, b in zip(ours, theirs))


@pytest.mark.parametrize("n_updates", [1, 2, 4])  # 1: critic only; 2, 4: critic+actor+targets
def test_update_equals_plain_reference(n_updates):
    ac, ac_targ, update, ref = make_pair(hid=64)
    assert _max_diff(ac, ac_targ, ref) == 0.0
    batches = random_batches(n_updates, batch_size=64)
    for n, b in enumerate(batches, start=1):
        torch.manual_seed(100 + n)  # the same target-smoothing noise for both
        update(b, n_updates=n)
        torch.manual_seed(100 + n)
        ref.train_on(b)
    pi_changed = not torch.equal(flat(ac.pi), flat(make_pair(hid=64)[0].pi))
    assert pi_changed == (n_updates >= 2)
    assert _max_diff(ac, ac_targ, ref) < TOL


def test_update_takes_the_settings_as_resolved():
    """build_update uses the gamma it is handed; td3() hands it the env's resolved settings
    (Pendulum-v1 has no per-env gamma: the general 0.98)."""
    b = random_batches(1, batch_size=8, obs_dim=3, act_dim=2)[0]
    critics = {}
    resolved = td3.settings_for(gym.make("Pendulum-v1"))
    assert resolved.gamma == td3.GENERAL_DEFAULTS["gamma"] == 0.98
    for name, hp in (("resolved", resolved), ("0.98", HP(gamma=0.98)), ("0.99", HP(gamma=0.99))):
        ac, ac_targ = small_ac()
        update, _, _ = td3.build_update(ac, ac_targ, hp)
        torch.manual_seed(5)
        update(b, n_updates=1)
        critics[name] = flat(ac.q1)
    assert torch.equal(critics["resolved"], critics["0.98"])
    assert not torch.equal(critics["resolved"], critics["0.99"])
