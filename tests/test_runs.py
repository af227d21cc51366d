"""A run directory's lifecycle (the run package): what a resume may change, a finished run,
the early stop and best.pt, checkpoints every save_freq epochs, NaN, temp files, Ctrl-C."""
import argparse
import glob
import json
import os
import shutil
import signal
from dataclasses import fields

import gymnasium as gym
import numpy as np
import pytest
import torch
import sweep  # run_status: which runs of a grid are finished
import td3
from conftest import ROOT, SMALL, CountEnv, one_line_error, rows_without_time, run_cli, snapshot
from logger import read_progress
from run.directory import load_checkpoint
from run import command, directory, errors, progress

CLI_SMALL = ["--env", "Pendulum-v1", "--epochs", 1, "--steps_per_epoch", 200, "--start_steps", 100,
             "--update_after", 100, "--batch_size", 32, "--num_test_episodes", 1, "--hid", 32,
             "--replay_size", 10000]


@pytest.fixture(scope="module")
def one_epoch_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    code, _, err = run_cli(*CLI_SMALL, "--data_dir", d, "--exp_name", "e")
    assert code == 0, err
    return d / "e" / "e_s0"


# ---- a resume keeps its settings: an option is honoured or refused, never dropped ----
@pytest.mark.parametrize("option, says", [
    (["--gamma", 0.9], "--gamma 0.9: {run} was made with gamma=0.98"),
    (["--act_noise", 0.3], "--act_noise 0.3: {run} was made with act_noise=0.1"),
    (["--stop_return", 5], "--stop_return 5.0: {run} was made with stop_return=None"),
    (["--no_twin"], "--twin False: {run} was made with twin=True"),
    (["-s", 4], "--seed 4: {run} was made with seed=0"),
    (["--hid", 64], "--hid 64: {run} was made with hidden_sizes=[32, 32]"),
    (["--l", 3], "--l 3: {run} was made with hidden_sizes=[32, 32]"),
    (["--env", "MountainCarContinuous-v0"], "--env MountainCarContinuous-v0: {run} was made with env='Pendulum-v1'"),
    (["--critic_loss", "notebooks.port_mistakes:q2_own_target"], "was made with critic_loss='td3:critic_loss'"),
    (["--data_dir", "elsewhere"], "--data_dir names a new run's directory"),
], ids=lambda x: x[0] if isinstance(x, list) else "")
def test_resume_refuses_a_changed_setting(one_epoch_run, option, says):
    before = snapshot(one_epoch_run)
    msg = one_line_error(*run_cli("--resume", one_epoch_run, *option, "--epochs", 2)[::2])
    assert says.format(run=one_epoch_run) in msg, msg
    assert snapshot(one_epoch_run) == before  # nothing trained, nothing written


def test_resume_honours_what_may_change_and_what_equals_the_run(tmp_path, one_epoch_run):
    run = tmp_path / "run"
    shutil.copytree(one_epoch_run, run)
    code, out, err = run_cli("--resume", run, "--epochs", 2, "--gamma", 0.98, "--hid", 32,
                             "--env", "Pendulum-v1", "--device", "cpu", "--threads", 1, "--quiet")
    assert code == 0, err
    assert "resuming at env step 200 of 400" in out
    kwargs = command.command_line(["--resume", str(run), "--threads", "1", "--quiet", "--device",
                                   "cpu"], td3.Hyperparameters, td3.SWAP_POINTS)
    assert kwargs["threads"] == 1 and kwargs["logger_kwargs"]["progress"] is False
    assert kwargs["device"] == "cpu" and kwargs["gamma"] == 0.98
    assert [r[0] for r in read_progress(run / "progress.txt")[1]] == ["1", "2"]
    assert json.loads((run / "config.json").read_text())["epochs"] == 1  # the run's record


def test_resume_through_the_python_api_refuses_a_changed_setting(tmp_path, pendulum):
    out = str(tmp_path / "r")
    td3.td3(pendulum, logger_kwargs=dict(output_dir=out, quiet=True), **{**SMALL, "epochs": 1})
    with pytest.raises(errors.UserError, match=r"was run with gamma=0.98, not 0.9; a resumed run "
                                            r"keeps its settings"):
        td3.td3(pendulum, logger_kwargs=dict(output_dir=out, quiet=True), resume=True,
                gamma=0.9, **SMALL)


def test_a_setting_newer_than_the_run_is_compared_with_its_default(tmp_path, pendulum):
    # A run made before --noise existed has no "noise" in config.json: it used the default.
    out = tmp_path / "r"
    td3.td3(pendulum, logger_kwargs=dict(output_dir=str(out), quiet=True), **{**SMALL, "epochs": 1})
    cfg = json.loads((out / "config.json").read_text())
    del cfg["noise"]
    (out / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(errors.UserError, match=r"was run with noise='gaussian', not 'pink'"):
        td3.td3(pendulum, logger_kwargs=dict(output_dir=str(out), quiet=True), resume=True,
                noise="pink", **SMALL)
    msg = one_line_error(*run_cli("--resume", out, "--noise", "pink")[::2])
    assert "--noise pink: " in msg and "was made with noise='gaussian'" in msg


def test_the_command_line_is_parsed_once(monkeypatch, tmp_path):
    calls = []
    parse = argparse.ArgumentParser.parse_args
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args",
                        lambda self, *a, **k: (calls.append(1), parse(self, *a, **k))[1])
    monkeypatch.setattr(td3, "td3", lambda env_fn, **kwargs: None)  # parse only
    td3.main(["--env", "Pendulum-v1", "--hid", "8", "--threads", "1", "--data_dir", str(tmp_path)])
    assert len(calls) == 1


@pytest.mark.parametrize("option", ["--hid", "--l", "--threads"])
def test_command_line_only_options_follow_the_settings_rules(option, tmp_path):
    msg = one_line_error(*run_cli("--env", "Pendulum-v1", option, 0, "--data_dir", tmp_path)[::2])
    name = option[2:] if option == "--threads" else option  # threads: a setting, td3() checks it
    assert msg.startswith(f"error: {name} must be a positive integer") and msg.endswith("got 0")
    assert {f.name for f in fields(command.CommandLineOnly)} == {"hid", "l"}
    assert not os.listdir(tmp_path)


# ---- a finished run, the early stop, best.pt ----
def test_resuming_a_finished_run_says_it_is_finished(one_epoch_run):
    before = snapshot(one_epoch_run)
    code, out, err = run_cli("--resume", one_epoch_run)
    assert code == 0, err
    assert out.strip() == (f"{one_epoch_run} is finished: 1 epochs, 200 env steps; to train on, "
                           f"resume with --epochs N, N > 1")
    assert snapshot(one_epoch_run) == before


def test_a_run_trained_on_then_resumed_again_says_how_far_it_got(tmp_path, one_epoch_run):
    run = tmp_path / "run"
    shutil.copytree(one_epoch_run, run)
    assert run_cli("--resume", run, "--epochs", 2)[0] == 0
    code, out, err = run_cli("--resume", run)  # config.json still says epochs 1
    assert code == 0, err
    assert "is finished: 2 epochs, 400 env steps" in out and "--epochs N, N > 2" in out


class Fading(gym.Env):
    """Every episode returns less than the one before (-1 per step, -1 more per episode), so
    the first epoch's test return is the best and the last one's the worst."""
    episodes = 0

    def __init__(self):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        Fading.episodes += 1
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, a):
        self.t += 1
        return np.zeros(1, np.float32), -float(Fading.episodes), False, self.t >= 10, {}


def test_without_confirmation_the_early_stop_fires_after_stop_epochs_and_best_pt_holds_the_best_epoch(
        tmp_path, capsys):
    """The rule of runs made before confirmations (confirm_episodes 0): stop_epochs in a row."""
    out = tmp_path / "s"
    kw = dict(SMALL, steps_per_epoch=50, epochs=10, start_steps=20, update_after=20,
              update_every=10, max_ep_len=10, confirm_episodes=0)
    td3.td3(Fading, stop_return=-1e9, stop_epochs=3, logger_kwargs=dict(output_dir=str(out), quiet=True), **kw)
    header, rows = read_progress(out / "progress.txt")
    returns = [float(r[header.index("AverageTestEpRet")]) for r in rows]
    assert len(rows) == 3 and returns == sorted(returns, reverse=True)  # stopped after epoch 3
    assert "stopping early: test return >= -1e+09 for 3 epochs in a row" in capsys.readouterr().out
    best = load_checkpoint(out / "best.pt")
    assert best["epoch"] == 1 and best["test_return"] == returns[0] != returns[-1]
    ckpt = load_checkpoint(out / "ckpt.pt")
    assert (ckpt["epoch"], ckpt["epochs_at_goal"]) == (3, 3) and sweep.run_status(out) == "finished"
    assert sweep.run_status(out, 100) == "finished"  # a sweep with more epochs leaves it as it is
    td3.td3(Fading, stop_return=-1e9, stop_epochs=3, resume=True, logger_kwargs=dict(
        output_dir=str(out), quiet=True), **kw)
    said = capsys.readouterr().out
    assert "is finished: 3 epochs" in said and "stopped early" in said and "trains no further" in said
    assert len(read_progress(out / "progress.txt")[1]) == 3


JUDGE = dict(SMALL, steps_per_epoch=50, epochs=4, start_steps=20, update_after=20,
             update_every=10, max_ep_len=10, num_test_episodes=2, confirm_episodes=5)


def test_a_confirmation_that_holds_stop_return_stops_the_run_and_its_actor_is_best_pt(tmp_path, capsys):
    """CountEnv returns 7 in every episode: epoch 1's test reaches 7 and so do its 5
    confirmation episodes, so the run is solved at epoch 1 and stops there."""
    out = tmp_path / "s"
    td3.td3(CountEnv, stop_return=7.0, test_actor="averaged", logger_kwargs=dict(
        output_dir=str(out), quiet=True), **JUDGE)
    header, rows = read_progress(out / "progress.txt")
    assert len(rows) == 1 and float(rows[0][header.index("TargConfirmEpRet")]) == 7.0
    assert "ConfirmEpRet" not in header  # only the judged actor is confirmed
    assert "at epoch 1 the averaged actor's return over 5 more episodes was 7.0" in capsys.readouterr().out
    best, ckpt = load_checkpoint(out / "best.pt"), load_checkpoint(out / "ckpt.pt")
    assert (best["epoch"], best["test_return"], best["actor"], best["confirmed"]) == (1, 7.0, "averaged", True)
    for k, v in ckpt["ac_targ"].items():  # the averaged actor-critic, not the live one
        assert torch.equal(best["ac"][k], v)
    assert not torch.equal(best["ac"]["pi.net.0.weight"], ckpt["ac"]["pi.net.0.weight"])
    assert ckpt["solved"] == dict(live=0, averaged=1) and sweep.run_status(out, 100) == "finished"
    td3.td3(CountEnv, stop_return=7.0, test_actor="averaged", resume=True, logger_kwargs=dict(
        output_dir=str(out), quiet=True), **dict(JUDGE, epochs=9))
    said = capsys.readouterr().out
    assert "is finished: 1 epochs" in said and "the averaged actor's return over 5 more episodes" \
        in said and "trains no further" in said


def test_a_confirmation_below_stop_return_trains_on(tmp_path):
    """Fading's returns fall with every episode played, so epoch 1's confirmation episodes
    (played after its test) return less than the test did: the test reaches stop_return, the
    confirmation does not, and the run trains on; best.pt is the best epoch, unconfirmed."""
    free = tmp_path / "free"
    Fading.episodes = 0
    td3.td3(Fading, stop_return=None, logger_kwargs=dict(output_dir=str(free), quiet=True), **JUDGE)
    header, rows = read_progress(free / "progress.txt")
    first = float(rows[0][header.index("AverageTestEpRet")])
    out = tmp_path / "s"
    Fading.episodes = 0  # the same episodes again, so the same first test return
    td3.td3(Fading, stop_return=first - 1, logger_kwargs=dict(output_dir=str(out), quiet=True), **JUDGE)
    header, rows = read_progress(out / "progress.txt")
    confirm = [float(r[header.index("ConfirmEpRet")]) for r in rows]
    assert len(rows) == 4 and confirm[0] < first - 1 and all(np.isnan(confirm[1:]))
    best = load_checkpoint(out / "best.pt")
    assert (best["epoch"], best["confirmed"]) == (1, False)
    assert load_checkpoint(out / "ckpt.pt")["solved"] == dict(live=0, averaged=0)


def test_judging_draws_nothing_from_the_training_stream(tmp_path, pendulum):
    """Comparing both actors and confirming them changes no training or test column: every
    row equals a run without judging, and the new columns are added after them."""
    kw = dict(SMALL, epochs=3, confirm_episodes=3)
    plain, judged = tmp_path / "plain", tmp_path / "judged"
    td3.td3(pendulum, stop_return=None, logger_kwargs=dict(output_dir=str(plain), quiet=True), **kw)
    td3.td3(pendulum, stop_return=-1e9, early_stop=False, compare_actors=True,
            logger_kwargs=dict(output_dir=str(judged), quiet=True), **kw)
    (h1, r1), (h2, r2) = read_progress(plain / "progress.txt"), read_progress(judged / "progress.txt")
    new = ["TargTestEpRet", "ConfirmEpRet", "TargConfirmEpRet"]
    assert h2 == h1[:-1] + new + ["Time"]
    assert [r[:-1] for r in r1] == [r[:len(h1) - 1] for r in r2]
    confirmed = [[r[h2.index(k)] != "nan" for k in new[1:]] for r in r2]
    assert confirmed == [[True, True], [False, False], [False, False]]  # both solved at epoch 1
    assert os.path.exists(judged / "best_averaged.pt") and not os.path.exists(plain / "best_averaged.pt")


def test_checkpoint_every_save_freq_epochs_and_at_the_end(tmp_path, pendulum, monkeypatch):
    written = []
    save = directory.save_checkpoint
    monkeypatch.setattr(directory, "save_checkpoint", lambda state, path: (
        written.append((os.path.basename(path), state.get("epoch"))), save(state, path)))
    td3.td3(pendulum, save_freq=2, logger_kwargs=dict(output_dir=str(tmp_path), quiet=True),
            **{**SMALL, "epochs": 5})
    assert [e for name, e in written if name == "ckpt.pt"] == [2, 4, 5]


# ---- NaN: stop before anything uses the broken weights, keep the last good checkpoint ----
def test_nan_in_the_second_epoch_keeps_the_first_epochs_checkpoint(tmp_path):
    test_steps, n_loss = [], []

    class Counted(gym.Wrapper):
        def step(self, a):
            test_steps.append(1)
            return self.env.step(a)

    envs = iter([gym.make("Pendulum-v1"), Counted(gym.make("Pendulum-v1"))])  # training, test

    def loss_nan_in_epoch_2(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
        n_loss.append(1)
        loss = td3.critic_loss(q1, q2, r, d, q1_targ, q2_targ, gamma, twin)
        return loss * float("nan") if len(n_loss) > 150 else loss  # epoch 1 has 150 updates

    out = tmp_path / "nan"
    with pytest.raises(errors.UserError, match=r"epoch 2: LossQ became NaN or inf; stopped, its "
                                            r"last good checkpoint \(epoch 1\) in .* is kept"):
        td3.td3(lambda: next(envs), critic_loss=loss_nan_in_epoch_2,
                logger_kwargs=dict(output_dir=str(out), quiet=True), **{**SMALL, "epochs": 3})
    assert len(test_steps) == 200  # epoch 1's test episode only: epoch 2 never tested NaN weights
    assert len(read_progress(out / "progress.txt")[1]) == 1
    ckpt = load_checkpoint(out / "ckpt.pt")
    assert ckpt["epoch"] == 1 and all(torch.isfinite(v).all() for v in ckpt["ac"].values())


def test_nan_before_the_first_checkpoint_says_none_is_kept(tmp_path, pendulum):
    def loss_nan(q1, q2, r, d, q1_targ, q2_targ, gamma, twin=True):
        return td3.critic_loss(q1, q2, r, d, q1_targ, q2_targ, gamma, twin) * float("nan")

    out = tmp_path / "nan"
    with pytest.raises(errors.UserError, match=r"epoch 1: LossQ became NaN or inf; stopped, .* has "
                                            r"no checkpoint yet, so a resume starts it again$"):
        td3.td3(pendulum, critic_loss=loss_nan, logger_kwargs=dict(output_dir=str(out), quiet=True),
                **SMALL)
    assert not (out / "ckpt.pt").exists()


@pytest.mark.parametrize("left", [("config.json",), ("config.json", "progress.txt", "best.pt")])
def test_a_run_killed_before_its_first_checkpoint_resumes_from_the_start(tmp_path, left):
    """With --save_freq 2, a kill during epoch 2 leaves config.json, epoch 1's row and best.pt
    but no ckpt.pt. --resume starts the run again and ends with the rows of a run never
    stopped; what the first start wrote is kept beside it under other names."""
    args = [*CLI_SMALL[:2], *CLI_SMALL[4:], "--epochs", 2, "--save_freq", 2]
    ref, run = tmp_path / "ref", tmp_path / "k"
    assert run_cli(*args, "--data_dir", ref, "--exp_name", "r")[0] == 0
    shutil.copytree(ref / "r" / "r_s0", run)
    for name in set(os.listdir(run)) - set(left):
        os.remove(run / name)
    p1 = (run / "progress.txt")
    if p1.exists():  # one row, as epoch 1 wrote it
        p1.write_text("".join(p1.read_text().splitlines(keepends=True)[:2]))
    before = snapshot(run)
    code, out, err = run_cli("--resume", run)
    assert code == 0, err
    kept = {"config.json": "config.before-restart.json", "progress.txt": "progress.before-restart.txt",
            "best.pt": "best.before-restart.pt"}
    assert f"note: {run} has no checkpoint yet (it stopped before its first was written), so " \
           f"it starts again from env step 0; its earlier files are kept as " \
           f"{', '.join(kept[n] for n in ('config.json', 'progress.txt', 'best.pt') if n in left)}" in out
    assert rows_without_time(run) == rows_without_time(ref / "r" / "r_s0")
    assert json.loads((run / "config.json").read_text())["resume"] is False  # a start, again
    after = snapshot(run)
    assert all(after[kept[name]] == before[name] for name in left)  # nothing it wrote is lost


@pytest.mark.parametrize("rows, save_freq, epochs", [(30, 1, 30), (3, 2, 3), (4, 5, 2)])
def test_a_run_whose_table_shows_a_checkpoint_is_refused_without_it(tmp_path, rows, save_freq, epochs):
    """A committed walker's directory without its ckpt.pt: a row after the first checkpoint's
    epoch (save_freq, or the run's epochs if fewer: a run resumed with more epochs) proves a
    checkpoint existed, so a restart would replace a run. --resume refuses in one line and
    changes nothing."""
    src = os.path.join(ROOT, "results/judging/td3-BipedalWalker-v3/td3-BipedalWalker-v3_s18")
    run = tmp_path / "r"
    shutil.copytree(src, run)
    cfg = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps(dict(cfg, save_freq=save_freq, epochs=epochs)))
    lines = (run / "progress.txt").read_text().splitlines(keepends=True)
    (run / "progress.txt").write_text("".join(lines[:rows + 1]))
    before = snapshot(run)
    msg = one_line_error(*run_cli("--resume", run, "--quiet")[::2])
    assert f"{run} has no ckpt.pt, but its progress.txt has {rows} rows, so the checkpoint " \
           f"written after epoch {min(save_freq, epochs)} existed" in msg
    assert snapshot(run) == before


def test_a_run_killed_between_a_row_and_its_first_checkpoint_starts_again(tmp_path):
    """save_freq 1, killed after epoch 1's row, while its first ckpt.pt was being written (a
    temp file left): no checkpoint ever existed, so --resume starts again, keeping the row."""
    args = [*CLI_SMALL[:2], *CLI_SMALL[4:], "--epochs", 2]
    ref, run = tmp_path / "ref", tmp_path / "k"
    assert run_cli(*args, "--data_dir", ref, "--exp_name", "r")[0] == 0
    shutil.copytree(ref / "r" / "r_s0", run)
    os.remove(run / "ckpt.pt")
    (run / "ckpt.pt.tmp4242").write_bytes(b"half a checkpoint")
    p1 = run / "progress.txt"
    p1.write_text("".join(p1.read_text().splitlines(keepends=True)[:2]))
    code, out, err = run_cli("--resume", run)
    assert code == 0 and "starts again from env step 0" in out, err
    assert rows_without_time(run) == rows_without_time(ref / "r" / "r_s0")
    assert (run / "progress.before-restart.txt").exists() and not (run / "ckpt.pt.tmp4242").exists()


# Every shape of config.json among the committed runs (results/): the keys each has.
COMMITTED_SHAPES = sorted({tuple(sorted(json.load(open(p)))) for p in
                           glob.glob(os.path.join(ROOT, "results", "**", "config.json"), recursive=True)})


@pytest.mark.parametrize("keys", COMMITTED_SHAPES, ids=lambda k: f"{len(k)}keys")
def test_a_run_shaped_like_each_committed_one_resumes_through_td3_py(tmp_path, one_epoch_run, keys):
    """A run made before later settings existed (its config.json has only the keys of a
    committed run's, and stop_return None as theirs had where they did not stop): td3.py
    --resume trains it on with the settings it had, one more epoch."""
    run = tmp_path / "old"
    shutil.copytree(one_epoch_run, run)
    cfg = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({k: v for k, v in cfg.items() if k in keys}))
    code, out, err = run_cli("--resume", run, "--epochs", 2)
    assert code == 0, err
    assert len(read_progress(run / "progress.txt")[1]) == 2


def test_a_run_from_before_judging_resumes_with_its_own_options(tmp_path, one_epoch_run, monkeypatch):
    """A run made with the old --no_stop (stop_return None, no early_stop key in config.json)
    resumes through td3.py, with --no_stop (its own value) or without; a resume takes the
    run's thread count."""
    run = tmp_path / "old"
    shutil.copytree(one_epoch_run, run)
    cfg = json.loads((run / "config.json").read_text())
    for key in ("early_stop", "confirm_episodes", "test_actor", "compare_actors"):
        cfg.pop(key)
    (run / "config.json").write_text(json.dumps(dict(cfg, stop_return=None, torch_threads=3)))
    kwargs = command.command_line(["--resume", str(run), "--no_stop", "--epochs", "2"],
                                  td3.Hyperparameters, td3.SWAP_POINTS)
    assert kwargs["early_stop"] is False and kwargs["confirm_episodes"] == 0
    threads = []
    monkeypatch.setattr(torch, "set_num_threads", threads.append)
    sweep.planned(["--resume", str(run), "--no_stop"])  # the Run td3() would resume
    sweep.planned(["--resume", str(run), "--threads", "1"])
    assert threads == [3, 1]
    code, _, err = run_cli("--resume", run, "--no_stop", "--epochs", 2, "--threads", 1)
    assert code == 0, err
    code, _, err = run_cli("--resume", run, "--epochs", 3, "--threads", 1)
    assert code == 0, err
    assert len(read_progress(run / "progress.txt")[1]) == 3


# Envs made with arguments: their run's config.json records them, and a resume rebuilds them.
MADE_WITH = {"lander": (lambda: gym.make("LunarLander-v3", continuous=True), {"continuous": True}),
             "hardcore": (lambda: gym.make("BipedalWalker-v3", hardcore=True), {"hardcore": True})}


@pytest.mark.parametrize("name", MADE_WITH)
def test_the_env_a_run_was_made_with_is_rebuilt_on_resume(tmp_path, name):
    """td3(lambda: gym.make(id, **arguments)), then td3.py --resume: the resumed run plays the
    same env (its rows equal a run never stopped: Box2D resumes exactly); watch.py replays it,
    and a Python resume with the plain id is refused in one line."""
    env_fn, arguments = MADE_WITH[name]
    kw = dict(SMALL, steps_per_epoch=300, max_ep_len=150)
    whole, run = tmp_path / "whole", tmp_path / "run"
    td3.td3(env_fn, logger_kwargs=dict(output_dir=str(whole), quiet=True), **kw)
    td3.td3(env_fn, logger_kwargs=dict(output_dir=str(run), quiet=True), **dict(kw, epochs=1))
    assert json.loads((run / "config.json").read_text())["env_kwargs"] == arguments
    code, out, err = run_cli("--resume", run, "--epochs", 2, "--quiet")
    assert code == 0, err
    assert rows_without_time(run) == rows_without_time(whole)
    code, out, err = run_cli(run, "--episodes", 1, script="watch.py")
    assert code == 0 and "average return over 1 episodes" in out, err
    made = json.loads((run / "config.json").read_text())
    same = {k: made[k] for k in ("gamma", "noise", "reward_floor", "stop_return")}
    with pytest.raises(errors.UserError) as refused:
        td3.td3(lambda: gym.make(made["env_id"]), resume=True,  # the plain id, same settings
                logger_kwargs=dict(output_dir=str(run), quiet=True), **dict(kw, epochs=3, **same))
    assert f"was run with env_kwargs={arguments!r}, not {{}}" in str(refused.value) or \
        "Discrete action space" in str(refused.value)  # LunarLander-v3 alone: discrete actions


def test_a_lander_made_from_its_arguments_is_diagnosed_against_the_landers(tmp_path):
    out = tmp_path / "l"
    td3.td3(MADE_WITH["lander"][0], logger_kwargs=dict(output_dir=str(out), quiet=True),
            **dict(SMALL, epochs=1, steps_per_epoch=300, max_ep_len=150))
    code, said, err = run_cli(out, script="diagnose.py")
    assert code == 0, err
    assert "LunarLanderContinuous-v3" in said
    assert "not judged yet: the healthy runs are compared at their logged steps (5,000" in said


def test_a_wrapped_env_is_refused_by_the_command_line_in_one_line(tmp_path):
    out = tmp_path / "w"
    td3.td3(lambda: gym.wrappers.RescaleAction(gym.make("Pendulum-v1"), -1.0, 1.0),
            logger_kwargs=dict(output_dir=str(out), quiet=True), **dict(SMALL, epochs=1))
    before = snapshot(out)
    msg = one_line_error(*run_cli("--resume", out, "--epochs", 2)[::2])
    assert "wrapped in Python (RescaleAction)" in msg and "td3(env_fn, resume=True" in msg
    assert snapshot(out) == before


def test_judging_a_walker_changes_no_training_or_test_column(tmp_path):
    """As on Pendulum (above), on a Box2D env, whose world remembers its past episodes: the
    averaged actor's test and the confirmations play in envs of their own, so the run's train
    and test envs see the episodes a run without judging sees."""
    walker = lambda: gym.make("BipedalWalker-v3")
    kw = dict(SMALL, epochs=3, steps_per_epoch=300, max_ep_len=150, num_test_episodes=2,
              confirm_episodes=2)
    plain, judged = tmp_path / "plain", tmp_path / "judged"
    td3.td3(walker, stop_return=None, logger_kwargs=dict(output_dir=str(plain), quiet=True), **kw)
    td3.td3(walker, stop_return=-1e9, early_stop=False, compare_actors=True,
            logger_kwargs=dict(output_dir=str(judged), quiet=True), **kw)
    (h1, r1), (h2, r2) = read_progress(plain / "progress.txt"), read_progress(judged / "progress.txt")
    assert h2[:len(h1) - 1] == h1[:-1]  # the same columns first (all but Time), then judging's
    assert [r[:-1] for r in r1] == [r[:len(h1) - 1] for r in r2]


def test_a_resume_compares_numbers_as_numbers(tmp_path, pendulum):
    """reward_floor=-10 (an int) on resume is the run's -10.0, not another setting."""
    out = tmp_path / "r"
    td3.td3(pendulum, reward_floor=-10.0, logger_kwargs=dict(output_dir=str(out), quiet=True), **SMALL)
    td3.td3(pendulum, reward_floor=-10, resume=True, logger_kwargs=dict(output_dir=str(out), quiet=True),
            **{**SMALL, "epochs": 3})
    assert len(read_progress(out / "progress.txt")[1]) == 3
    with pytest.raises(errors.UserError, match="was run with reward_floor=-10.0, not -9"):
        td3.td3(pendulum, reward_floor=-9, resume=True, logger_kwargs=dict(output_dir=str(out),
                quiet=True), **{**SMALL, "epochs": 4})


# ---- temp files: only the ones a killed write leaves are cleaned up ----
def test_resume_removes_only_the_checkpoint_writers_temp_files(tmp_path, one_epoch_run):
    run = tmp_path / "run"
    shutil.copytree(one_epoch_run, run)
    mine = ["notes.tmpl", "my.tmp", "ckpt.pt.tmpfile", "ideas.tmp.txt", "notes.tmp2"]
    for name in mine + ["ckpt.pt.tmp4242", "progress.txt.tmp17"]:
        (run / name).write_text("x")
    code, _, err = run_cli("--resume", run, "--epochs", 2)
    assert code == 0, err
    assert sorted(n for n in os.listdir(run) if "tmp" in n) == sorted(mine)


# ---- Ctrl-C: the first asks for a clean stop, a second stops at once ----
def test_second_ctrl_c_stops_at_once():
    previous = signal.getsignal(signal.SIGINT)
    ctrl_c = progress.CtrlC()
    try:
        os.kill(os.getpid(), signal.SIGINT)
        assert ctrl_c.requested
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    finally:
        ctrl_c.close()
    assert signal.getsignal(signal.SIGINT) is previous


def test_every_command_line_only_option_is_parsed_checked_and_handed_to_td3():
    """CommandLineOnly's fields, all of them, reach td3()'s arguments (none dropped)."""
    kwargs = command.command_line(["--env", "Pendulum-v1", "--hid", "64", "--l", "3", "--threads",
                                   "1"], td3.Hyperparameters, td3.SWAP_POINTS)
    assert kwargs["ac_kwargs"] == dict(hidden_sizes=(64, 64, 64)) and kwargs["threads"] == 1
    assert {f.name for f in fields(command.CommandLineOnly)} == {"hid", "l"}
    with pytest.raises(errors.UserError, match="--l must be a positive integer"):
        command.command_line(["--env", "Pendulum-v1", "--l", "0"], td3.Hyperparameters, td3.SWAP_POINTS)
