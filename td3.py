"""TD3, Twin Delayed DDPG (Fujimoto, van Hoof and Meger, 2018), in one readable file.

    python td3.py --env BipedalWalker-v3            # train; one epoch table per epoch
    python td3.py --resume data/td3-BipedalWalker-v3/td3-BipedalWalker-v3_s0

TD3 is DDPG plus three tricks, each in one place under a comment block with its name:
1. Clipped double-Q learning -> core.clipped_double_q_target; 2. Delayed policy updates ->
update() below; 3. Target policy smoothing -> core.smoothed_target_action. ``--no_twin``,
``--no_delay`` and ``--no_smoothing`` switch each off; with all three off the update is
DDPG's (the networks, exploration and warm-up stay TD3's).

Read top to bottom: the hyperparameters (declared once: td3()'s keyword arguments, the
command line and config.json all come from that table), the losses and the update, ``td3()``
(setup, then the loop), the epoch's test and table (``test_agent``, ``log_epoch``), ``main()``.
Networks and TD3 math: core.py; replay buffer: buffer.py; epoch table: logger.py. The run's
machinery (its directory, checkpoints and exact resume, judging, the command line) sits in the
run package, which td3() meets as one ``Run``: the lines marked ``# run``.
"""
from copy import deepcopy
from dataclasses import dataclass

import numpy as np
import torch

import core
from buffer import ReplayBuffer
from run.door import Run, command_line, play, resolve, run_main, setting


# ------------------------------------------------------------------------------------------
# Hyperparameters, each declared once
# ------------------------------------------------------------------------------------------
# A setting whose default is "auto" takes the env's value here, else the general one; each is
# measured (docs/defaults.md). A fall or crash gives -100; floored, standing still or hovering
# stops looking safest. The lander's 0.99 counts its +100 for landing from further; pink noise
# explores the descent. stop_return is the run's (judging): solved at this test return.
GENERAL_DEFAULTS = dict(gamma=0.98, noise="gaussian", reward_floor=None, stop_return=None)
ENV_DEFAULTS = {"BipedalWalker-v3": dict(reward_floor=-10.0, stop_return=300.0),
                "LunarLanderContinuous-v3": dict(gamma=0.99, noise="pink", reward_floor=-10.0,
                                                 stop_return=200.0)}


@dataclass(frozen=True)
class Hyperparameters:
    """TD3's settings; td3(**kwargs) and the command line also take the run's own (how it is
    judged and saved: run/config.py's RunSettings). ``python td3.py -h`` lists them all."""
    AUTO = (GENERAL_DEFAULTS, ENV_DEFAULTS)  # what "auto" means, per env (not a field)
    TRICKS = ("twin", "policy_delay", "target_noise")  # a run is named by those it turned off
    # TD3's own settings: the algorithm, its three tricks and its exploration
    gamma: float | str = setting("auto", "in (0, 1] or auto", "discount, measured per env "
                                 "(docs/defaults.md)")
    polyak: float = setting(0.995, "a factor near 1", "targ <- polyak * targ + (1 - polyak) * net; "
                                                      "the paper's tau is 1 - polyak")
    pi_lr: float = setting(1e-3, "> 0", "Adam learning rate of the actor")
    q_lr: float = setting(1e-3, "> 0", "Adam learning rate of the critics")
    batch_size: int = setting(256, "int >= 1", "transitions per update", at_most="replay_size")
    replay_size: int = setting(1_000_000, "int >= 1", "replay buffer capacity, in transitions")
    start_steps: int = setting(10_000, "int >= 0", "uniform random actions for this many first "
                                                   "steps")
    update_after: int = setting(1000, "int >= 0", "no update before this many env steps")
    update_every: int = setting(50, "int >= 1", "run this many updates every this many env steps")
    act_noise: float = setting(0.1, ">= 0", "exploration noise std, in action half-ranges")
    noise: str = setting("auto", "gaussian, pink or auto", "exploration noise: gaussian (new at "
                         "each step) or pink (1/f, one per episode)", before="gaussian")
    target_noise: float = setting(0.2, ">= 0", "trick 3's noise std on the target action, in "
                                  "action half-ranges; 0: off", switch=("no_smoothing", 0.0))
    noise_clip: float = setting(0.5, ">= 0", "clip of trick 3's noise, in action half-ranges")
    policy_delay: int = setting(2, "int >= 1", "trick 2: one actor and target update per this "
                                "many critic updates; 1 turns it off", switch=("no_delay", 1))
    twin: bool = setting(True, "True or False", "trick 1: target from the smaller of two "
                         "critics", switch=("no_twin", False))
    reward_floor: float | None | str = setting("auto", "number, None or auto", "training "
                                               "rewards below it are raised to it",
                                               switch=("no_reward_floor", None))
    # ---- the loop: its seed and length, its test, where the networks live ----
    seed: int = setting(0, "int >= 0", "seeds torch, exploration, env resets and replay sampling")
    steps_per_epoch: int = setting(5000, "int >= 1", "env steps per epoch (one table row each)")
    epochs: int = setting(100, "int >= 1", "the run takes steps_per_epoch * epochs env steps")
    max_ep_len: int | None = setting(None, "int >= 1 or None", "episode limit; None: the "
                                     "env's, else 1000")
    num_test_episodes: int = setting(10, "int >= 1", "noise-free test episodes per epoch")
    device: str = setting("auto", "a device", "where the networks live; auto: cuda if available")


# ------------------------------------------------------------------------------------------
# The losses and the update. The critic loss, the target action and the stored done flag
# are arguments (swap points): notebook 4 passes a port's mistaken versions to show what
# each does to a run, without touching this file.
# ------------------------------------------------------------------------------------------
def critic_loss(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
    """The critics' loss: each critic's mean squared error against one shared TD target.

    ``q1``/``q2`` are the live critics on (s, a), ``q1_targ``/``q2_targ`` the target
    critics on (s', a'), all (B,) like ``r`` and ``d``. The target is trick 1's minimum and
    it is the same for both critics; a port that gives Q2 ``r + gamma * Q2'`` instead
    trains Q2 on exactly the overestimation the minimum exists to remove.
    """
    with torch.no_grad():
        backup = core.clipped_double_q_target(r, d, q1_targ, q2_targ, gamma, twin)  # trick 1
    core.check_same_shape(q1=q1, target=backup)
    loss_q = ((q1 - backup) ** 2).mean()
    if twin:
        loss_q = loss_q + ((q2 - backup) ** 2).mean()
    return loss_q


def done_flag(terminated, truncated):
    """What the buffer stores as done. Only a true end of the episode stops the bootstrap;
    hitting the time limit is not a property of the state, so it is stored as not done."""
    return float(terminated)


def build_update(ac, ac_targ, hp, logger=None, critic_loss=critic_loss,
                 target_action=core.smoothed_target_action):
    """Make the optimizers and ``update(data, n_updates)``, the update TD3 runs each step.

    Separate from ``td3()`` so that a notebook or a test can run exactly the training loop's
    update on a batch of its own. ``hp``: the Hyperparameters as td3() resolved them (no
    "auto" left; settings_for(env) gives them for an env). Returns ``(update, pi_optimizer,
    q_optimizer)``; ``update`` returns True when it also moved the actor and the targets.
    """
    # Fused Adam: the same math as Adam, one kernel per tensor group (faster, bench_update.py).
    # The critics' parameters as a list: Spinning Up chained them with itertools.chain, and
    # its "freeze the critic during the actor step" loop then found the iterator used up.
    pi_optimizer = torch.optim.Adam(ac.pi.parameters(), lr=hp.pi_lr, fused=True)
    q_optimizer = torch.optim.Adam([*ac.q1.parameters(), *ac.q2.parameters()], lr=hp.q_lr,
                                   fused=True)

    def compute_loss_q(data):
        o, a, r, o2, d = data["obs"], data["act"], data["rew"], data["obs2"], data["done"]
        q1 = ac.q1(o, a)
        q2 = ac.q2(o, a) if hp.twin else None
        with torch.no_grad():
            a2 = target_action(ac_targ.pi(o2), hp.target_noise, hp.noise_clip, ac.pi.act_low,
                               ac.pi.act_high, ac.pi.act_scale)                       # trick 3
            q1_targ = ac_targ.q1(o2, a2)
            q2_targ = ac_targ.q2(o2, a2) if hp.twin else None
        return critic_loss(q1, q2, r, d, q1_targ, q2_targ, hp.gamma, hp.twin), q1, q2

    def compute_loss_pi(data):
        # As in the paper, the actor climbs Q1 only; Q2 exists for trick 1's minimum.
        o = data["obs"]
        return -ac.q1(o, ac.pi(o)).mean()

    def update(data, n_updates):
        q_optimizer.zero_grad(set_to_none=True)
        loss_q, q1, q2 = compute_loss_q(data)
        loss_q.backward()
        q_optimizer.step()
        if logger is not None:
            # Tensors, detached and converted once per epoch by the logger: no per-update
            # sync. (A single critic logs no Q2Vals: its columns read NaN.)
            logger.store(LossQ=loss_q, Q1Vals=q1)
            if hp.twin:
                logger.store(Q2Vals=q2)

        # -------------------------------------------------------------------------------
        # Trick 2: Delayed policy updates
        #
        # The actor climbs the critic's gradient, so it is only as good as the critic. TD3
        # lets the critics take policy_delay steps towards the moving target for each actor
        # step, and moves the slow target networks at the actor's pace, so the policy
        # chases a less noisy Q and the targets change less often. policy_delay=1 (the
        # --no_delay ablation) updates all of them every time, as DDPG does.
        # -------------------------------------------------------------------------------
        if n_updates % hp.policy_delay != 0:
            return False
        # Freeze the critics: the actor loss needs gradients only for pi's weights.
        ac.q1.requires_grad_(False), ac.q2.requires_grad_(False)
        pi_optimizer.zero_grad(set_to_none=True)
        loss_pi = compute_loss_pi(data)
        loss_pi.backward()
        pi_optimizer.step()
        ac.q1.requires_grad_(True), ac.q2.requires_grad_(True)
        with torch.no_grad():
            core.polyak_update(ac.parameters(), ac_targ.parameters(), hp.polyak)
        if logger is not None:
            logger.store(LossPi=loss_pi)
        return True

    return update, pi_optimizer, q_optimizer


@dataclass
class LoopState:  # the training loop's counters; a checkpoint holds them
    t: int = 0                     # env steps taken
    epoch: int = 0
    n_updates: int = 0             # critic updates so far (total_it in the authors' code)


def td3(env_fn, actor_critic=core.MLPActorCritic, ac_kwargs=dict(), logger_kwargs=dict(),
        resume=False, critic_loss=critic_loss, target_action=core.smoothed_target_action,
        done_flag=done_flag, **settings):
    """Train a TD3 agent; writes a run directory and returns the actor-critic.

    Args:
        env_fn: makes a fresh Gymnasium env with a Box action space; called for training, for
            test episodes and, where a run is judged (stop_return), for each judging batch.
        actor_critic: built as ``actor_critic(obs_space, act_space, **ac_kwargs)``; needs
            ``pi``, ``q1`` and ``q2`` like ``core.MLPActorCritic``.
        ac_kwargs (dict): e.g. ``dict(hidden_sizes=(256, 256))``; config.json records the
            network as built, defaults included.
        logger_kwargs (dict): ``EpochLogger`` arguments (``output_dir`` defaults to
            ``<data_dir>/<exp_name>/<exp_name>_s<seed>``, ``data_dir`` to ``data``, as on the
            command line; ``quiet``), and ``progress=False`` to turn off the live progress line.
        resume (bool): continue the run in ``output_dir`` from its ``ckpt.pt`` (one that
            cannot have written a checkpoint yet starts again, keeping its files).
        critic_loss, target_action, done_flag: the swap points, pieces a notebook may replace
            with a port's mistaken version; config.json records the names of the ones used.
        settings: Hyperparameters' fields (above) and the run's own (run/config.py's
            RunSettings: how it is judged and saved, torch's threads), by name.

    Reading and editing it: the lines marked ``# run`` are the run's plumbing; every other
    line is TD3 and may be edited to try an idea. One rule keeps exact resume: state the loop
    carries from one step to the next lives in ``LoopState`` or in a part handed to
    ``run.start`` (a network, an optimizer, the buffer), or a resumed run silently parts from
    an uninterrupted one.
    """
    # run: every setting checked and each "auto" filled in for this env, once; nothing written
    run = Run(env_fn, Hyperparameters, settings, actor_critic, ac_kwargs,
              swaps=dict(critic_loss=critic_loss, target_action=target_action, done_flag=done_flag),
              logger_kwargs=logger_kwargs, resume=resume)
    hp, logger, (env, test_env) = run.hp, run.logger, run.envs  # run: envs a resume can replay

    torch.manual_seed(hp.seed)
    rng = np.random.default_rng(hp.seed)  # exploration noise, random actions, env reset seeds
    ac = actor_critic(env.observation_space, env.action_space, **ac_kwargs).to(hp.device)
    ac_targ = deepcopy(ac).requires_grad_(False)  # only Polyak averaging moves the targets
    act_low, act_high, act_scale = ac.pi.bounds()  # the env's Box, as numpy arrays
    act_dim = env.action_space.shape[0]
    replay_buffer = ReplayBuffer(env.observation_space.shape[0], act_dim, hp.replay_size,
                                 device=hp.device, seed=hp.seed)
    update, pi_optimizer, q_optimizer = build_update(ac, ac_targ, hp, logger, critic_loss,
                                                     target_action)

    def get_action(o, noise_scale, eps=None):  # eps: this step's noise, N(0, 1) unless given
        eps = rng.standard_normal(act_dim) if eps is None else eps  # drawn at a test step too
        a = ac.act(o) + noise_scale * act_scale * eps
        return np.clip(a, act_low, act_high).astype(np.float32)

    def train_reward(r):
        return r if hp.reward_floor is None else max(r, hp.reward_floor)

    def reset_seed():  # every env reset's seed, drawn from the run's stream (a resume redraws it)
        return int(rng.integers(2**31))

    # A resumed run gets every network, optimizer, the buffer, both RNGs, the counters and
    # the episode in progress back (a Box2D world's past replayed); a new one resets its env.
    loop = LoopState()
    o, ep_ret, ep_len = run.start(  # run
        loop, rng, dict(live=ac, averaged=ac_targ), ("LossQ", "LossPi"), ac=ac, ac_targ=ac_targ,
        pi_optimizer=pi_optimizer, q_optimizer=q_optimizer, buffer=replay_buffer,
    ) or (env.reset(seed=reset_seed())[0], 0.0, 0)
    with run:  # run: from here on, Ctrl-C writes a checkpoint and stops cleanly
        while loop.t < hp.steps_per_epoch * hp.epochs and not run.stopped:  # run: solved stops
            # Uniform random actions first, for broad early data; then the policy plus noise,
            # new at each step, or the step's share of the episode's pink sequence.
            if loop.t < hp.start_steps:
                a = rng.uniform(act_low, act_high).astype(np.float32)
            else:
                pink = hp.noise == "pink"
                eps = core.pink_noise(env.seed, hp.max_ep_len, act_dim)[ep_len] if pink else None
                a = get_action(o, hp.act_noise, eps)
            o2, r, terminated, truncated, _ = env.step(a)
            ep_ret, ep_len = ep_ret + r, ep_len + 1
            truncated = truncated or ep_len == hp.max_ep_len
            # done = 1 only on a real end; a time-limit cut keeps bootstrapping (done_flag).
            replay_buffer.store(o, a, train_reward(r), o2, done_flag(terminated, truncated))
            o = o2
            loop.t += 1
            if terminated or truncated:
                # floats, not numpy scalars: ckpt.pt holds them and loads weights_only
                logger.store(EpRet=float(ep_ret), EpLen=ep_len)
                (o, _), ep_ret, ep_len = env.reset(seed=reset_seed()), 0.0, 0

            if loop.t >= hp.update_after and loop.t % hp.update_every == 0:
                for _ in range(hp.update_every):
                    loop.n_updates += 1
                    update(replay_buffer.sample_batch(hp.batch_size), loop.n_updates)

            if loop.t % hp.steps_per_epoch == 0:  # end of epoch: test, log, checkpoint
                loop.epoch += 1
                run.check_finite(loop.epoch)  # run: NaN stops, last checkpoint kept
                seeds = test_agent(ac, lambda o: get_action(o, 0), test_env, reset_seed, hp,
                                   train_reward, logger)  # the live actor's noise-free episodes
                log_epoch(logger, loop)
                run.end_epoch(loop, seeds)  # run: judging, Time, the row; best.pt, ckpt.pt
            run.after_step(loop.t, warm_up=loop.t < hp.start_steps,  # run: the progress line;
                           updating=loop.t >= hp.update_after)  # after Ctrl-C, a checkpoint
    return ac


def test_agent(ac, act, test_env, reset_seed, hp, reward, logger):
    """The epoch's test: noise-free episodes of the live actor ``act`` (run/judging.py plays
    them), and trick 1's overestimation check, Q1(s, pi(s)) against the discounted training
    ``reward`` that followed s (a little low where the time limit cut it). Returns the
    episodes' reset seeds, which the rest of the judging reuses."""
    seeds = []
    for _ in range(hp.num_test_episodes):
        seeds.append(reset_seed())
        ep_ret, ep_len, obs, rews = play(test_env, act, seeds[-1], hp.max_ep_len, reward)
        with torch.no_grad():
            s = torch.as_tensor(np.array(obs), dtype=torch.float32, device=hp.device)
            q_est = ac.q1(s, ac.pi(s))
        logger.store(TestEpRet=ep_ret, TestEpLen=ep_len, TestQEst=q_est,
                     TestQTrue=core.discounted_returns(rews, hp.gamma))
    return seeds


def log_epoch(logger, loop):
    """TD3's columns of the epoch's row (the run adds judging's and Time, then writes it)."""
    logger.log_tabular("Epoch", loop.epoch)
    logger.log_tabular("EpRet", with_min_and_max=True)
    logger.log_tabular("TestEpRet", with_min_and_max=True)
    logger.log_tabular("EpLen", average_only=True)
    logger.log_tabular("TestEpLen", average_only=True)
    logger.log_tabular("TotalEnvInteracts", loop.t)
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


def settings_for(env, **given):
    """The Hyperparameters td3() would train ``env`` with (``given`` as td3()'s keyword
    arguments): each "auto" filled in for the env, as td3() does, for a notebook or a test."""
    return resolve(Hyperparameters, given, env)[0]


# The pieces a learner may swap to see a port's mistake; config.json records their names.
SWAP_POINTS = dict(critic_loss=critic_loss, target_action=core.smoothed_target_action,
                   done_flag=done_flag)


def main(argv=None):
    """python td3.py --env ENV_ID [--setting value ...], or --resume RUN_DIR; -h lists them."""
    td3(**command_line(argv, Hyperparameters, SWAP_POINTS))


if __name__ == "__main__":
    run_main(main)
