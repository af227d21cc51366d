"""run/judging.py alone: what is confirmed, who is solved, what best.pt keeps, when a run stops;
and the run package's parts alone: the training state's Box2D past, the run directory's refusals."""
import json
import math
import os

import gymnasium as gym
import numpy as np
import pytest

import td3
from run import directory, errors, judging, resume
from run.config import RunSettings

CONFIG = dict(seed=0, stop_return=300.0, confirm_episodes=100, stop_epochs=3, early_stop=True,
              test_actor="live", compare_actors=True, max_ep_len=1600)


def test_a_paired_confirmation_does_not_solve_an_actor_whose_own_test_fell_short():
    """The live actor's test reached 300, so both actors were confirmed; the averaged one's
    confirmation held 300, but its own test (290) did not: only the live one is solved."""
    judge = judging.Judge(CONFIG)
    assert judge.to_confirm(dict(live=301.0, averaged=290.0)) == ("live", "averaged")
    keep = judge.end_epoch(4, dict(live=301.0, averaged=290.0), dict(live=305.0, averaged=310.0))
    assert judge.solved == dict(live=4, averaged=0) and judge.stopped
    assert keep == [("best.pt", "live", 305.0, True)]  # not best_averaged.pt
    judge = judging.Judge(dict(CONFIG, early_stop=False))
    judge.end_epoch(4, dict(live=301.0, averaged=300.0), dict(live=299.0, averaged=310.0))
    assert judge.solved == dict(live=0, averaged=4) and not judge.stopped


def test_best_pt_keeps_the_best_epoch_until_solved_then_the_solved_actor_for_good():
    judge = judging.Judge(dict(CONFIG, compare_actors=False, early_stop=False))
    assert judge.columns == ["ConfirmEpRet"]
    assert judge.to_confirm(dict(live=250.0)) == ()  # below stop_return: no confirmation
    assert judge.end_epoch(1, dict(live=250.0), {}) == [("best.pt", "live", 250.0, False)]
    assert judge.end_epoch(2, dict(live=240.0), {}) == []  # not better
    assert judge.end_epoch(3, dict(live=305.0), dict(live=290.0)) == [("best.pt", "live", 305.0, False)]
    assert judge.end_epoch(4, dict(live=302.0), dict(live=301.0)) == [("best.pt", "live", 301.0, True)]
    assert judge.to_confirm(dict(live=330.0)) == ()  # solved: never confirmed again
    assert judge.end_epoch(5, dict(live=330.0), {}) == []  # the solved actor stays
    state = judge.state_dict()
    again = judging.Judge(dict(CONFIG, compare_actors=False, early_stop=False))
    again.load_state_dict(state)
    assert again.state_dict() == state == dict(best_return=301.0, epochs_at_goal=3,
                                               solved=dict(live=4, averaged=0))


def test_without_confirmations_the_old_rule_stops_after_stop_epochs_in_a_row():
    judge = judging.Judge(dict(CONFIG, compare_actors=False, confirm_episodes=0))
    assert judge.columns == [] and not judge.confirms
    for epoch, r in enumerate([301.0, 299.0, 300.0, 310.0], 1):
        judge.end_epoch(epoch, dict(live=r), {})
        assert not judge.stopped
    judge.end_epoch(5, dict(live=320.0), {})
    assert judge.stopped and judge.stop_reason() == "test return >= 300 for 3 epochs in a row"
    assert judge.best_return == 320.0 and math.isinf(judging.Judge(CONFIG).best_return)


def test_confirmation_seeds_are_a_stream_of_their_own():
    a, b = judging.confirm_seeds(3, 7, 5), judging.confirm_seeds(3, 7, 5)
    assert a == b and a != judging.confirm_seeds(3, 8, 5) and len(set(a)) == 5


def walker_history(env, rng, episodes=3, steps=150):
    """Random episodes in ``env`` (a ReplayableEnv), like training's."""
    for _ in range(episodes):
        env.reset(int(rng.integers(2**31)))
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, 4).astype(np.float32))
            if terminated or truncated:
                break


@pytest.mark.parametrize("replay_the_past", [True, False])
def test_a_walkers_training_state_puts_its_worlds_past_back(replay_the_past):
    """TrainingState alone: a BipedalWalker-v3 env after a few episodes is captured, restored
    into a fresh env, and both play the same next episode: the same observations, to the bit,
    exactly when the past episodes are replayed (without them the world differs)."""
    rng = np.random.default_rng(0)
    env = resume.ReplayableEnv(gym.make("BipedalWalker-v3"))
    walker_history(env, rng, episodes=4)
    state = env.state_dict()
    if not replay_the_past:
        state = {k: v for k, v in state.items() if not k.startswith("past_")}
    fresh = resume.ReplayableEnv(gym.make("BipedalWalker-v3"))
    fresh.replay(**state)
    seed, actions = 12345, rng.uniform(-1, 1, (400, 4)).astype(np.float32)
    trajectories = [next_episode(e, seed, actions) for e in (env, fresh)]
    same = trajectories[0].shape == trajectories[1].shape and np.array_equal(*trajectories)
    assert same == replay_the_past


def test_the_run_directory_refuses_a_lost_checkpoint_and_sets_a_restart_aside(tmp_path):
    """RunDirectory alone: no ckpt.pt and fewer rows than save_freq: a restart, whose earlier
    files prepare() keeps under other names; a row after epoch save_freq: refused."""
    config = dict(env_id="Pendulum-v1", save_freq=2, epochs=4, seed=0)
    run = tmp_path / "r"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(config))
    (run / "progress.txt").write_text("Epoch\tTime\n1\t0.5\n")
    d = directory.RunDirectory(str(run), config, True, (td3.Hyperparameters, RunSettings))
    assert d.ckpt is None and d.restart == ["config.json", "progress.txt"]
    assert sorted(d.prepare()) == ["config.before-restart.json", "progress.before-restart.txt"]
    assert sorted(os.listdir(run)) == ["config.before-restart.json", "progress.before-restart.txt"]
    (run / "config.json").write_text(json.dumps(config))
    (run / "progress.txt").write_text("Epoch\tTime\n1\t0.5\n2\t1.0\n3\t1.5\n")
    with pytest.raises(errors.UserError, match="has 3 rows, so the checkpoint written after epoch 2"):
        directory.RunDirectory(str(run), config, True, (td3.Hyperparameters, RunSettings))


@pytest.mark.parametrize("drop", [None, "test_env"])
def test_the_training_state_carries_both_envs_pasts(drop):
    """TrainingState.capture, then restore into fresh walker envs: the next episode of the
    train env and of the test env is the one the originals play, to the bit; without the
    test env's record (``drop``) its world is another one."""
    from types import SimpleNamespace
    from dataclasses import dataclass

    @dataclass
    class Loop:
        t: int = 0

    def state(rng):
        envs = [resume.ReplayableEnv(gym.make("BipedalWalker-v3")) for _ in range(2)]
        return resume.TrainingState(Loop(), rng, *envs, SimpleNamespace(epoch_dict={}), "cpu", {})

    old = state(np.random.default_rng(0))
    for e in (old.env, old.test_env):
        walker_history(e, np.random.default_rng(1), episodes=4)
    ckpt = old.capture()
    if drop:
        del ckpt[drop]
    new = state(np.random.default_rng(5))
    new.restore(ckpt, "unused")
    actions = np.random.default_rng(2).uniform(-1, 1, (400, 4)).astype(np.float32)
    for name in ("env", "test_env"):
        a, b = (next_episode(getattr(s, name), 777, actions) for s in (old, new))
        same = a.shape == b.shape and np.array_equal(a, b)
        assert same == (name != drop), name


def next_episode(env, seed, actions):
    obs = [env.reset(seed)[0]]
    for a in actions:
        o, _, terminated, truncated, _ = env.step(a)
        obs.append(o)
        if terminated or truncated:
            break
    return np.array(obs)
