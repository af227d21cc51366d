"""TD3, Twin Delayed DDPG (Fujimoto, van Hoof and Meger, 2018), in one readable file.

    python td3.py --env BipedalWalker-v3            # train; one epoch table per epoch
    python td3.py --resume data/td3-BipedalWalker-v3/td3-BipedalWalker-v3_s0
    python td3.py --watch  data/td3-BipedalWalker-v3/td3-BipedalWalker-v3_s0 --gif walker.gif

TD3 is DDPG plus three tricks. Each lives in one place, under a comment block with its name:

1. Clipped double-Q learning   -> core.clipped_double_q_target
2. Delayed policy updates      -> update() below
3. Target policy smoothing     -> core.smoothed_target_action

``--no_twin``, ``--no_delay`` and ``--no_smoothing`` switch each one off; all three off is DDPG.

The networks and the TD3 math live in core.py, the replay buffer in buffer.py and the
epoch table and checkpoint files in logger.py. This file is the algorithm: the losses, the
update, the loop that collects experience, tests the policy and writes a run directory:

    data/<exp_name>/<exp_name>_s<seed>/
        config.json     every argument of td3(), plus library versions
        progress.txt    one tab-separated row per epoch (Spinning Up's format)
        ckpt.pt         everything needed to continue exactly (--resume), written atomically
        best.pt         the actor-critic of the epoch with the best test return (--watch)
"""
import argparse
import copy
import difflib
import json
import os
import platform
import signal
import sys
import time

import gymnasium as gym
import numpy as np
import torch

import core
from buffer import ReplayBuffer
from logger import EpochLogger, load_checkpoint, save_checkpoint


class UserError(Exception):
    """A mistake in what the user asked for; the CLI prints it as one line and exits 2."""


def critic_loss(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    """The critics' loss: each critic's mean squared error against one shared TD target.

    ``q1``/``q2`` are the live critics on (s, a), ``q1_targ``/``q2_targ`` the target
    critics on (s', a'), all (B,) like ``r`` and ``d``. The target is trick 1's minimum and
    it is the same for both critics; a port that gives Q2 ``r + gamma * Q2'`` instead
    trains Q2 on exactly the overestimation the minimum exists to remove. (Notebook 4
    swaps this function for such ports' versions to show what they do to a run.)
    """
    with torch.no_grad():
        backup = core.clipped_double_q_target(r, d, q1_targ, q2_targ, gamma, twin)  # trick 1
    assert q1.shape == backup.shape, f"Q {tuple(q1.shape)} vs target {tuple(backup.shape)}"
    loss_q = ((q1 - backup) ** 2).mean()
    if twin:
        loss_q = loss_q + ((q2 - backup) ** 2).mean()
    return loss_q


def build_update(ac, ac_targ, gamma=0.98, polyak=0.995, pi_lr=1e-3, q_lr=1e-3,
                 target_noise=0.2, noise_clip=0.5, policy_delay=2, twin=True, logger=None):
    """Make the optimizers and the ``update(data, timer)`` function of TD3.

    It is separate from ``td3()`` so that a notebook or a test can run exactly the update
    the training loop runs, on a batch of its own. Returns ``(update, pi_optimizer,
    q_optimizer)``; ``update`` returns True when it also updated the actor and targets.
    """
    pi_params = list(ac.pi.parameters())
    # A list, not an iterator: Spinning Up chained the two critics' parameters with
    # itertools.chain, the optimizer used the iterator up, and its "freeze the critic
    # during the actor step" loop then froze nothing.
    q_params = list(ac.q1.parameters()) + list(ac.q2.parameters())
    params, targ_params = list(ac.parameters()), list(ac_targ.parameters())
    # Fused Adam does the whole step in one kernel per tensor group (benchmarks/bench_update.py).
    fused = all(p.device.type in ("cpu", "cuda") for p in params)
    pi_optimizer = torch.optim.Adam(pi_params, lr=pi_lr, fused=fused)
    q_optimizer = torch.optim.Adam(q_params, lr=q_lr, fused=fused)
    act_low, act_high, act_scale = (ac.pi.act_bias - ac.pi.act_scale, ac.pi.act_bias + ac.pi.act_scale,
                                    ac.pi.act_scale)

    def compute_loss_q(data):
        o, a, r, o2, d = data["obs"], data["act"], data["rew"], data["obs2"], data["done"]
        q1 = ac.q1(o, a)
        q2 = ac.q2(o, a) if twin else None
        with torch.no_grad():
            a2 = core.smoothed_target_action(ac_targ.pi(o2), target_noise, noise_clip,
                                             act_low, act_high, act_scale)           # trick 3
            q1_targ = ac_targ.q1(o2, a2)
            q2_targ = ac_targ.q2(o2, a2) if twin else None
        return critic_loss(q1, q2, r, d, q1_targ, q2_targ, gamma, twin), q1, q2

    def compute_loss_pi(data):
        o = data["obs"]
        return -ac.q1(o, ac.pi(o)).mean()

    def update(data, timer):
        q_optimizer.zero_grad(set_to_none=True)
        loss_q, q1, q2 = compute_loss_q(data)
        loss_q.backward()
        q_optimizer.step()
        if logger is not None:
            # Detached tensors, converted once per epoch by the logger: no per-update sync.
            logger.store(LossQ=loss_q.detach(), Q1Vals=q1.detach(),
                         Q2Vals=(q2 if twin else torch.full_like(q1, float("nan"))).detach())

        # -------------------------------------------------------------------------------
        # Trick 2: Delayed policy updates
        #
        # The actor climbs the critic's gradient, so it is only as good as the critic. TD3
        # lets the critics take policy_delay steps towards the moving target for each actor
        # step, and moves the slow target networks at the actor's pace, so the policy
        # chases a less noisy Q and the targets change less often. policy_delay=1 (the
        # --no_delay ablation) updates all of them every time, as DDPG does.
        # -------------------------------------------------------------------------------
        if timer % policy_delay != 0:
            return False
        # Freeze the critics: the actor loss needs gradients only for pi's weights.
        for p in q_params:
            p.requires_grad_(False)
        pi_optimizer.zero_grad(set_to_none=True)
        loss_pi = compute_loss_pi(data)
        loss_pi.backward()
        pi_optimizer.step()
        for p in q_params:
            p.requires_grad_(True)
        with torch.no_grad():
            core.polyak_update(params, targ_params, polyak)
        if logger is not None:
            logger.store(LossPi=loss_pi.detach())
        return True

    return update, pi_optimizer, q_optimizer


def td3(env_fn, actor_critic=core.MLPActorCritic, ac_kwargs=dict(), seed=0,
        steps_per_epoch=5000, epochs=100, replay_size=int(1e6), gamma=0.98, polyak=0.995,
        pi_lr=1e-3, q_lr=1e-3, batch_size=256, start_steps=10000, update_after=1000,
        update_every=50, act_noise=0.1, target_noise=0.2, noise_clip=0.5, policy_delay=2,
        twin=True, reward_floor=None, num_test_episodes=10, max_ep_len=None,
        stop_return=None, stop_epochs=3, logger_kwargs=dict(), save_freq=1, device="cpu",
        resume=False):
    """Train a TD3 agent, writing a run directory as described in the module docstring.

    Args:
        env_fn: a function that makes a fresh Gymnasium env with a Box action space; called
            twice, once for training and once for the test episodes.
        actor_critic: the module class, built as ``actor_critic(obs_space, act_space,
            **ac_kwargs)``; it needs ``pi``, ``q1`` and ``q2`` like ``core.MLPActorCritic``.
        ac_kwargs (dict): e.g. ``dict(hidden_sizes=(256, 256))``.
        seed (int): seeds torch, the numpy RNG for exploration and the env resets.
        steps_per_epoch (int): env steps per epoch; one table row per epoch.
        epochs (int): number of epochs; the run takes ``steps_per_epoch * epochs`` env steps.
        replay_size (int): capacity of the replay buffer, in transitions.
        gamma (float): discount. 0.98 (not 0.99) measured faster on BipedalWalker-v3.
        polyak (float): targets move as ``targ <- polyak * targ + (1 - polyak) * net``
            (the paper's tau is 1 - polyak).
        pi_lr (float), q_lr (float): Adam learning rates of the actor and the critics.
        batch_size (int): transitions per update.
        start_steps (int): the first this-many steps take uniform random actions.
        update_after (int): no update before this many env steps are stored.
        update_every (int): run this many updates every this-many env steps (the ratio of
            updates to env steps stays 1; batching them is faster).
        act_noise (float): std of the Gaussian exploration noise, in units of the action
            half-range ``(high - low) / 2``.
        target_noise (float): std of trick 3's noise on the target action, same units;
            0 switches trick 3 off (``--no_smoothing``).
        noise_clip (float): trick 3's noise is clipped to +-noise_clip (same units).
        policy_delay (int): trick 2, one actor and target update per this many critic
            updates; 1 switches it off (``--no_delay``).
        twin (bool): trick 1, target from the minimum of two critics; False uses Q1 alone
            and trains only Q1 (``--no_twin``).
        reward_floor (float or None): a training-only transform: rewards below it are raised
            to it before they are stored. BipedalWalker-v3 gives -100 for a fall; flooring
            it keeps the critic from learning that standing still is the safest plan. Logged
            returns (EpRet, TestEpRet) are always the env's true reward.
        num_test_episodes (int): deterministic (noise-free) episodes on a separate env at
            the end of each epoch.
        max_ep_len (int or None): episode limit; None takes the env spec's own limit
            (1600 for BipedalWalker-v3), or 1000 if the env has none.
        stop_return (float or None): stop early once the average test return has been at
            least this for ``stop_epochs`` epochs in a row (None: run every epoch).
        stop_epochs (int): see ``stop_return``.
        logger_kwargs (dict): ``EpochLogger`` arguments, e.g. ``dict(output_dir=...)``.
        save_freq (int): write ``ckpt.pt`` every this many epochs (and at the last).
        device (str): "cpu", "cuda" or "auto" (cuda when available).
        resume (bool): continue the run in ``logger_kwargs['output_dir']`` from its
            ``ckpt.pt`` instead of starting one.

    Returns:
        the trained actor-critic.
    """
    config = {k: v for k, v in locals().items() if k not in ("env_fn", "actor_critic")}
    config["actor_critic"] = getattr(actor_critic, "__name__", str(actor_critic))
    for name in ("steps_per_epoch", "epochs", "replay_size", "batch_size", "update_every",
                 "policy_delay", "num_test_episodes", "save_freq", "stop_epochs"):
        if int(config[name]) < 1:
            raise UserError(f"{name} must be a positive integer, got {config[name]}")
    for name in ("start_steps", "update_after"):
        if int(config[name]) < 0:
            raise UserError(f"{name} must be zero or more, got {config[name]}")
    if max_ep_len is not None and max_ep_len < 1:
        raise UserError(f"max_ep_len must be a positive integer, got {max_ep_len}")

    device = torch.device("cuda" if device == "auto" and torch.cuda.is_available()
                          else "cpu" if device == "auto" else device)
    output_dir = logger_kwargs.get("output_dir") or os.path.join("data", f"td3_s{seed}")
    ckpt_path = os.path.join(output_dir, "ckpt.pt")
    ckpt = None
    if resume:
        try:
            ckpt = load_checkpoint(ckpt_path)
        except ValueError as e:  # missing, truncated, or not a plain weights file
            raise UserError(str(e)) from None
    elif os.path.exists(os.path.join(output_dir, "progress.txt")) or os.path.exists(ckpt_path):
        raise UserError(f"{output_dir} already holds a run; continue it with --resume "
                        f"{output_dir}, or pick another --exp_name or --seed")

    env, test_env = env_fn(), env_fn()
    check_env(env)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    act_low, act_high = env.action_space.low.astype(np.float32), env.action_space.high.astype(np.float32)
    act_scale = (act_high - act_low) / 2
    spec_limit = getattr(env.spec, "max_episode_steps", None) if env.spec else None
    max_ep_len = max_ep_len or spec_limit or 1000
    config.update(env_id=env.spec.id if env.spec else str(env), obs_dim=obs_dim, act_dim=act_dim,
                  max_ep_len=max_ep_len, device=str(device), versions=versions(),
                  torch_threads=torch.get_num_threads(), cpu=cpu_model())
    if ckpt is not None:  # check everything before anything in the run directory changes
        check_ckpt_matches(ckpt, config)

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)  # exploration noise, random actions, env reset seeds
    ac = actor_critic(env.observation_space, env.action_space, **ac_kwargs).to(device)
    ac_targ = copy.deepcopy(ac)
    for p in ac_targ.parameters():
        p.requires_grad_(False)

    nbytes = ReplayBuffer.nbytes_for(obs_dim, act_dim, replay_size)
    check_memory(nbytes, replay_size, obs_dim, act_dim)
    replay_buffer = ReplayBuffer(obs_dim, act_dim, replay_size, device=device, seed=seed)

    try:
        logger = EpochLogger(**{**logger_kwargs, "output_dir": output_dir},
                             resume_epochs=ckpt["epoch"] if ckpt else None)
    except (ValueError, OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot resume: {e}") from None
    update, pi_optimizer, q_optimizer = build_update(
        ac, ac_targ, gamma=gamma, polyak=polyak, pi_lr=pi_lr, q_lr=q_lr,
        target_noise=target_noise, noise_clip=noise_clip, policy_delay=policy_delay,
        twin=twin, logger=logger)

    def get_action(o, noise_scale):
        a = ac.act(o)
        a = a + noise_scale * act_scale * rng.standard_normal(act_dim)
        return np.clip(a, act_low, act_high).astype(np.float32)

    def test_agent():
        """Deterministic episodes, plus the overestimation check of trick 1: the critic's
        Q1(s, pi(s)) against the discounted return that actually followed s (computed with
        the training reward, which is what the critic learns; a truncated episode's tail is
        missing, so there the 'true' value is a little low)."""
        for _ in range(num_test_episodes):
            o, _ = test_env.reset(seed=int(rng.integers(2**31)))
            done, ep_ret, ep_len, obs, rews = False, 0.0, 0, [], []
            while not done:
                obs.append(o)
                o, r, terminated, truncated, _ = test_env.step(get_action(o, 0))
                ep_ret, ep_len = ep_ret + r, ep_len + 1
                rews.append(train_reward(r))
                done = terminated or truncated or ep_len == max_ep_len
            with torch.no_grad():
                s = torch.as_tensor(np.array(obs), dtype=torch.float32, device=device)
                q_est = ac.q1(s, ac.pi(s))
            logger.store(TestEpRet=ep_ret, TestEpLen=ep_len, TestQEst=q_est,
                         TestQTrue=discounted_returns(rews, gamma))

    def train_reward(r):
        return r if reward_floor is None else max(r, reward_floor)

    # ---- start, or put everything back as it was at the checkpoint ----
    t, epoch, n_updates, elapsed, best_ret, held = 0, 0, 0, 0.0, -np.inf, 0
    ep_seed, ep_actions = int(rng.integers(2**31)), []
    if ckpt is not None:
        remove_stale_temp_files(output_dir)
        ac.load_state_dict(ckpt["ac"])
        ac_targ.load_state_dict(ckpt["ac_targ"])
        pi_optimizer.load_state_dict(ckpt["pi_optimizer"])
        q_optimizer.load_state_dict(ckpt["q_optimizer"])
        replay_buffer.load_state_dict(ckpt["buffer"])
        rng.bit_generator.state = ckpt["rng"]
        torch.set_rng_state(ckpt["torch_rng"])
        t, epoch, n_updates = ckpt["t"], ckpt["epoch"], ckpt["n_updates"]
        elapsed, best_ret, held = ckpt["elapsed"], ckpt["best_ret"], ckpt["held"]
        ep_seed, ep_actions = ckpt["ep_seed"], list(ckpt["ep_actions"].numpy())
        logger.epoch_dict.update(ckpt["epoch_dict"])
    else:
        logger.save_config(config)
    # A Box2D env cannot be pickled, but it is deterministic: the reset seed plus the
    # episode's actions so far rebuild it exactly.
    o, _ = env.reset(seed=ep_seed)
    ep_ret, ep_len = 0.0, 0
    for a in ep_actions:
        o, r, _, _, _ = env.step(a)
        ep_ret, ep_len = ep_ret + r, ep_len + 1

    def checkpoint():
        save_checkpoint(dict(
            ac=ac.state_dict(), ac_targ=ac_targ.state_dict(),
            pi_optimizer=pi_optimizer.state_dict(), q_optimizer=q_optimizer.state_dict(),
            buffer=replay_buffer.state_dict(), rng=rng.bit_generator.state,
            torch_rng=torch.get_rng_state(), t=t, epoch=epoch, n_updates=n_updates,
            elapsed=elapsed + time.time() - start_time, best_ret=best_ret, held=held,
            ep_seed=ep_seed,
            ep_actions=torch.as_tensor(np.array(ep_actions, dtype=np.float32).reshape(-1, act_dim)),
            epoch_dict=logger.epoch_dict, env_id=config["env_id"], obs_dim=obs_dim,
            act_dim=act_dim, ac_kwargs=dict(ac_kwargs)), ckpt_path)

    interrupt = install_sigint_handler()
    total_steps = steps_per_epoch * epochs
    start_time = epoch_start = time.time()
    epoch_start_t = t
    if t < total_steps:
        print(f"replay buffer: {replay_size:,} x {2 * obs_dim + act_dim + 2} floats = "
              f"{nbytes / 1e6:,.0f} MB; {'resuming at' if ckpt else 'starting'} env step "
              f"{t:,} of {total_steps:,}; device {device}", flush=True)

    while t < total_steps:
        # Uniform random actions first, for broad early data; then the policy plus noise.
        if t < start_steps:
            a = rng.uniform(act_low, act_high).astype(np.float32)
        else:
            a = get_action(o, act_noise)
        o2, r, terminated, truncated, _ = env.step(a)
        ep_ret, ep_len = ep_ret + r, ep_len + 1
        ep_actions.append(a)
        truncated = truncated or ep_len == max_ep_len
        # Only a true end of the episode stops the bootstrap. Hitting the time limit is not
        # a property of the state, so it is stored as not done.
        replay_buffer.store(o, a, train_reward(r), o2, float(terminated))
        o = o2
        t += 1
        if terminated or truncated:
            logger.store(EpRet=float(ep_ret), EpLen=ep_len)  # plain floats: weights_only
            ep_seed, ep_actions = int(rng.integers(2**31)), []
            (o, _), ep_ret, ep_len = env.reset(seed=ep_seed), 0.0, 0

        if t >= update_after and t % update_every == 0:
            for _ in range(update_every):
                n_updates += 1
                update(replay_buffer.sample_batch(batch_size), timer=n_updates)

        if t % steps_per_epoch == 0:
            epoch += 1
            test_agent()
            check_finite(logger, ac, epoch, output_dir)
            now = time.time()
            sps = (t - epoch_start_t) / max(now - epoch_start, 1e-9)
            title = (f"Epoch {epoch}/{epochs} | {t:,}/{total_steps:,} env steps | "
                     f"{sps:,.0f} steps/s | ~{format_seconds((total_steps - t) / sps)} left")
            test_ret = float(np.mean(logger.epoch_dict["TestEpRet"]))
            log_epoch(logger, epoch, t, elapsed + now - start_time, title)
            if test_ret > best_ret:
                best_ret = test_ret
                save_checkpoint(dict(ac=ac.state_dict(), epoch=epoch, test_return=test_ret,
                                     env_id=config["env_id"], obs_dim=obs_dim, act_dim=act_dim,
                                     ac_kwargs=dict(ac_kwargs)),
                                os.path.join(output_dir, "best.pt"))
            held = held + 1 if stop_return is not None and test_ret >= stop_return else 0
            if held >= stop_epochs:
                total_steps = t  # solved and held: this epoch is the last
            if epoch % save_freq == 0 or t == total_steps:
                checkpoint()
            if t == total_steps and held >= stop_epochs:
                print(f"stopping early: average test return >= {stop_return} for {held} "
                      f"epochs in a row", flush=True)
            epoch_start, epoch_start_t = time.time(), t
        if interrupt.requested:
            checkpoint()
            print(f"interrupted at env step {t:,}; checkpoint saved. Continue with: "
                  f"python td3.py --resume {output_dir}", file=sys.stderr, flush=True)
            sys.exit(130)
    interrupt.restore()
    return ac


def log_epoch(logger, epoch, t, elapsed, title):
    logger.log_tabular("Epoch", epoch)
    logger.log_tabular("EpRet", with_min_and_max=True)
    logger.log_tabular("TestEpRet", with_min_and_max=True)
    logger.log_tabular("EpLen", average_only=True)
    logger.log_tabular("TestEpLen", average_only=True)
    logger.log_tabular("TotalEnvInteracts", t)
    logger.log_tabular("Q1Vals", with_min_and_max=True)
    logger.log_tabular("Q2Vals", with_min_and_max=True)
    logger.log_tabular("LossPi", average_only=True)
    logger.log_tabular("LossQ", average_only=True)
    # Overestimation (what trick 1 fights): the critic's value minus the return that came.
    est = torch.cat(logger.epoch_dict["TestQEst"]).mean().item()
    true = np.concatenate(logger.epoch_dict["TestQTrue"]).mean()
    logger.log_tabular("TestQEst", average_only=True)
    logger.log_tabular("TestQTrue", average_only=True)
    logger.log_tabular("TestQBias", est - true)
    logger.log_tabular("Time", elapsed)
    logger.dump_tabular(title)


def discounted_returns(rews, gamma):
    """G_t = r_t + gamma * G_{t+1}, for every step of one episode."""
    out, g = np.zeros(len(rews), dtype=np.float32), 0.0
    for i in range(len(rews) - 1, -1, -1):
        g = rews[i] + gamma * g
        out[i] = g
    return out


def check_env(env):
    if not isinstance(env.action_space, gym.spaces.Box):
        name = env.spec.id if env.spec else type(env).__name__
        raise UserError(f"{name} has a {type(env.action_space).__name__} action space; "
                        f"TD3 needs continuous (Box) actions")
    if len(env.observation_space.shape or ()) != 1:
        raise UserError(f"TD3 here needs flat observations, got shape {env.observation_space.shape}")


def check_memory(nbytes, replay_size, obs_dim, act_dim):
    try:
        with open("/proc/meminfo") as f:
            avail = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("MemAvailable"))
    except (OSError, StopIteration):
        return
    if nbytes > 0.8 * avail:
        raise UserError(f"replay buffer of {replay_size:,} x {2 * obs_dim + act_dim + 2} floats "
                        f"needs {nbytes / 1e9:.1f} GB but only {avail / 1e9:.1f} GB is "
                        f"available; lower --replay_size")


CKPT_KEYS = ("ac", "ac_targ", "pi_optimizer", "q_optimizer", "buffer", "rng", "torch_rng", "t",
             "epoch", "n_updates", "elapsed", "best_ret", "held", "ep_seed", "ep_actions",
             "epoch_dict", "env_id", "obs_dim", "act_dim")


def check_ckpt_matches(ckpt, config, keys=CKPT_KEYS):
    missing = [k for k in keys if k not in ckpt] if isinstance(ckpt, dict) else ["all"]
    if missing:
        raise UserError(f"not a td3.py checkpoint (it lacks {', '.join(missing[:3])})")
    for key in ("env_id", "obs_dim", "act_dim"):
        if key in ckpt and ckpt[key] != config[key]:
            raise UserError(f"checkpoint is for {key}={ckpt.get(key)}, this run has {config[key]}")
    as_json = lambda d: json.dumps(dict(d or {}), sort_keys=True)  # tuples and lists alike
    if as_json(ckpt.get("ac_kwargs")) != as_json(config["ac_kwargs"]):
        raise UserError(f"checkpoint networks {ckpt.get('ac_kwargs')} differ from "
                        f"{config['ac_kwargs']}")


def remove_stale_temp_files(output_dir):
    """A kill during an atomic write leaves its temp file; the real file is intact."""
    for name in os.listdir(output_dir):
        if ".tmp" in name:
            os.remove(os.path.join(output_dir, name))


def check_finite(logger, ac, epoch, output_dir):
    """Stop on NaN/inf before it reaches a checkpoint: the last good one stays."""
    for key in ("LossQ", "LossPi"):
        vals = logger.epoch_dict.get(key, [])
        if vals and not bool(torch.isfinite(torch.stack(vals)).all()):
            raise UserError(f"epoch {epoch}: {key} became NaN or inf; stopped, the last good "
                            f"checkpoint in {output_dir} is kept")
    for name, p in ac.named_parameters():
        if not bool(torch.isfinite(p).all()):
            raise UserError(f"epoch {epoch}: parameter {name} became NaN or inf; stopped, "
                            f"the last good checkpoint in {output_dir} is kept")


class install_sigint_handler:
    """Ctrl-C sets a flag; the loop finishes its step, writes a checkpoint and exits."""

    def __init__(self):
        self.requested = False
        self.previous = signal.signal(signal.SIGINT, self._handle)

    def restore(self):
        signal.signal(signal.SIGINT, self.previous)

    def _handle(self, signum, frame):
        if self.requested:  # a second Ctrl-C stops at once
            raise KeyboardInterrupt
        self.requested = True


def format_seconds(s):
    s = int(max(0, s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def cpu_model():
    """The CPU's name: determinism holds only for one CPU model and one torch thread count."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions():
    import matplotlib
    return dict(python=platform.python_version(), torch=torch.__version__,
                gymnasium=gym.__version__, numpy=np.__version__, matplotlib=matplotlib.__version__)


# ------------------------------------------------------------------------------------------
# Watching a trained agent
# ------------------------------------------------------------------------------------------
def watch(run_dir, episodes=5, gif=None, which="best", seed=10_000):
    """Run deterministic episodes of a saved agent; print each return; render or write a GIF."""
    config = read_config(run_dir)
    path = os.path.join(run_dir, "best.pt" if which == "best" else "ckpt.pt")
    if which == "best" and not os.path.exists(path):
        path = os.path.join(run_dir, "ckpt.pt")
    if not os.path.exists(path):
        raise UserError(f"{run_dir} has no checkpoint (best.pt or ckpt.pt) to watch")
    try:
        ckpt = load_checkpoint(path)
    except ValueError as e:
        raise UserError(str(e)) from None
    render_mode = "rgb_array" if gif else ("human" if os.environ.get("DISPLAY") else None)
    env = make_env(config["env_id"], render_mode=render_mode)()
    ac = core.MLPActorCritic(env.observation_space, env.action_space, **config["ac_kwargs"])
    check_ckpt_matches(ckpt, dict(config, obs_dim=env.observation_space.shape[0],
                                  act_dim=env.action_space.shape[0]), keys=("ac", "env_id"))
    try:
        ac.load_state_dict(ckpt["ac"])
    except RuntimeError:
        raise UserError(f"{path} holds networks of another shape than {config['ac_kwargs']}") from None
    frames, rets = [], []
    for ep in range(episodes):
        o, _ = env.reset(seed=seed + ep)
        done, ep_ret, ep_len = False, 0.0, 0
        while not done:
            o, r, terminated, truncated, _ = env.step(ac.act(o))
            ep_ret, ep_len = ep_ret + r, ep_len + 1
            done = terminated or truncated or ep_len == config["max_ep_len"]
            if gif and ep == 0 and ep_len % 2 == 0:
                frames.append(env.render())
        rets.append(ep_ret)
        print(f"episode {ep + 1}: return {ep_ret:.1f}, length {ep_len}", flush=True)
    print(f"average return over {episodes} episodes: {np.mean(rets):.1f} "
          f"(std {np.std(rets):.1f}) from {path} (epoch {ckpt.get('epoch')})")
    if gif:
        write_gif(frames, gif)
        print(f"wrote {gif} ({len(frames)} frames of episode 1)")
    env.close()
    return rets


def write_gif(frames, path, scale=0.5, fps=25):
    from PIL import Image
    imgs = [Image.fromarray(f) for f in frames]
    size = (int(imgs[0].width * scale), int(imgs[0].height * scale))
    imgs = [im.resize(size).convert("P", palette=Image.ADAPTIVE, colors=64) for im in imgs]
    imgs[0].save(path, save_all=True, append_images=imgs[1:], duration=int(1000 / fps), loop=0)


# ------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------
# Per-env defaults, applied only where the user gave no value. Each one is measured; see
# README "Defaults for BipedalWalker-v3".
ENV_DEFAULTS = {
    "BipedalWalker-v3": dict(reward_floor=-10.0, stop_return=300.0),
}


def make_env(env_id, **kwargs):
    """An ``env_fn`` for td3(); an unknown id becomes a UserError naming close ids."""
    try:
        gym.make(env_id, **kwargs).close()
    except gym.error.Error as e:
        close = difflib.get_close_matches(env_id, list(gym.registry), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        if isinstance(e, (gym.error.NameNotFound, gym.error.VersionNotFound,
                          gym.error.NamespaceNotFound, gym.error.UnregisteredEnv)):
            raise UserError(f"unknown env id {env_id!r}{hint}") from None
        raise UserError(f"cannot make env {env_id!r}: {e}") from None
    except ImportError as e:
        raise UserError(f"env {env_id!r} needs a package that is missing: {e}") from None
    return lambda: gym.make(env_id, **kwargs)


def read_config(run_dir):
    path = os.path.join(run_dir, "config.json")
    if not os.path.isdir(run_dir):
        raise UserError(f"{run_dir} is not a directory")
    try:
        with open(path) as f:
            config = json.load(f)
    except FileNotFoundError:
        raise UserError(f"{run_dir} has no config.json; is it a run directory?") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{path} does not parse ({e})") from None
    if not isinstance(config, dict) or "env_id" not in config:
        raise UserError(f"{path} is not a td3.py config (no env_id)")
    return config


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Train, resume or watch a TD3 agent.")
    p.error = lambda msg: (print(f"error: {msg}", file=sys.stderr), sys.exit(2))  # one line
    p.add_argument("--env", help="Gymnasium env id with Box actions, e.g. BipedalWalker-v3")
    p.add_argument("--hid", type=int, default=256, help="units per hidden layer")
    p.add_argument("--l", type=int, default=2, help="number of hidden layers")
    p.add_argument("--seed", "-s", type=int, default=0)
    # Left unset, these take td3()'s defaults (see its docstring) or ENV_DEFAULTS.
    for name, typ in [("gamma", float), ("epochs", int), ("steps_per_epoch", int),
                      ("start_steps", int), ("update_after", int), ("update_every", int),
                      ("batch_size", int), ("replay_size", int), ("pi_lr", float),
                      ("q_lr", float), ("act_noise", float), ("num_test_episodes", int),
                      ("max_ep_len", int)]:
        p.add_argument(f"--{name}", type=typ, help="default: see td3()'s docstring")
    p.add_argument("--reward_floor", type=float, help="training-only floor on rewards")
    p.add_argument("--stop_return", type=float, help="stop once test return holds here")
    p.add_argument("--stop_epochs", type=int, help="epochs in a row for --stop_return")
    p.add_argument("--no_stop", action="store_true", help="turn off a per-env early stop")
    p.add_argument("--no_reward_floor", action="store_true", help="turn off a per-env floor")
    p.add_argument("--no_twin", action="store_true", help="trick 1 off: one critic")
    p.add_argument("--no_delay", action="store_true", help="trick 2 off: policy_delay=1")
    p.add_argument("--no_smoothing", action="store_true", help="trick 3 off: target_noise=0")
    p.add_argument("--exp_name", help="default td3-<env>[-ablations]")
    p.add_argument("--data_dir", default="data")
    p.add_argument("--device", default="auto", help="cpu, cuda or auto")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue a stopped run")
    p.add_argument("--watch", metavar="RUN_DIR", help="run a saved agent")
    p.add_argument("--episodes", type=int, default=5, help="episodes for --watch")
    p.add_argument("--gif", metavar="FILE", help="with --watch: write episode 1 as a GIF")
    p.add_argument("--last", action="store_true", help="with --watch: ckpt.pt, not best.pt")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    for name in ("hid", "l", "epochs", "steps_per_epoch", "batch_size", "replay_size",
                 "update_every", "num_test_episodes", "max_ep_len", "episodes", "threads",
                 "stop_epochs"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise UserError(f"--{name} must be a positive integer, got {v}")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.watch:
        watch(args.watch, episodes=args.episodes, gif=args.gif,
              which="last" if args.last else "best")
        return
    if args.resume:
        config = read_config(args.resume)
        if not os.path.exists(os.path.join(args.resume, "ckpt.pt")):
            raise UserError(f"{args.resume} has no ckpt.pt to resume from")
        kwargs = {k: config[k] for k in TD3_ARGS if k in config}
        kwargs["ac_kwargs"] = dict(hidden_sizes=tuple(config["ac_kwargs"]["hidden_sizes"]))
        if args.epochs:  # the one thing a resume may change: how far to go
            kwargs["epochs"] = args.epochs
        td3(make_env(config["env_id"]), logger_kwargs=dict(output_dir=args.resume,
            exp_name=config.get("exp_name")), resume=True, **kwargs)
        return
    if not args.env:
        raise UserError("give --env ENV_ID to train (or --resume / --watch RUN_DIR)")
    env_fn = make_env(args.env)
    kwargs = dict(ENV_DEFAULTS.get(args.env, {}))
    for k in TD3_ARGS:
        if k not in ("seed", "device") and getattr(args, k, None) is not None:
            kwargs[k] = getattr(args, k)
    if args.no_reward_floor:
        kwargs["reward_floor"] = None
    if args.no_stop:
        kwargs["stop_return"] = None
    ablations = [n for n in ("no_twin", "no_delay", "no_smoothing") if getattr(args, n)]
    if args.no_twin:
        kwargs["twin"] = False
    if args.no_delay:
        kwargs["policy_delay"] = 1
    if args.no_smoothing:
        kwargs["target_noise"] = 0.0
    exp_name = args.exp_name or "-".join(["td3", args.env, *ablations])
    output_dir = os.path.join(args.data_dir, exp_name, f"{exp_name}_s{args.seed}")
    td3(env_fn, ac_kwargs=dict(hidden_sizes=(args.hid,) * args.l), seed=args.seed,
        device=args.device, logger_kwargs=dict(output_dir=output_dir, exp_name=exp_name),
        **kwargs)


# td3() arguments that config.json records and --resume passes back.
TD3_ARGS = ("seed", "steps_per_epoch", "epochs", "replay_size", "gamma", "polyak", "pi_lr",
            "q_lr", "batch_size", "start_steps", "update_after", "update_every", "act_noise",
            "target_noise", "noise_clip", "policy_delay", "twin", "reward_floor",
            "num_test_episodes", "max_ep_len", "stop_return", "stop_epochs", "save_freq",
            "device")


if __name__ == "__main__":
    try:
        main()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
