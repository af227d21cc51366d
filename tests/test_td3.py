"""td3(): run files, Gymnasium semantics, determinism, resume, learning, CLI errors."""
import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import asdict
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch
import td3
from buffer import ReplayBuffer
from conftest import DEVICES, ROOT, SMALL, CountEnv, one_line_error, rows_without_time, run_cli
from logger import read_progress
from run.directory import load_checkpoint
from run import command, config, directory, errors

CLI_SMALL = ["--epochs", 2, "--steps_per_epoch", 200, "--start_steps", 100, "--update_after", 100,
             "--batch_size", 32, "--num_test_episodes", 1, "--hid", 32, "--replay_size", 10000]

COLUMNS = ["Epoch", "AverageEpRet", "StdEpRet", "MaxEpRet", "MinEpRet", "AverageTestEpRet",
           "StdTestEpRet", "MaxTestEpRet", "MinTestEpRet", "EpLen", "TestEpLen",
           "TotalEnvInteracts", "AverageQ1Vals", "StdQ1Vals", "MaxQ1Vals", "MinQ1Vals",
           "AverageQ2Vals", "StdQ2Vals", "MaxQ2Vals", "MinQ2Vals", "LossPi", "LossQ", "Time"]


def final_weights(path):
    return load_checkpoint(os.path.join(path, "ckpt.pt"))["ac"]


def test_cli_run_writes_the_three_files(tmp_path):
    code, out, err = run_cli("--env", "Pendulum-v1", *CLI_SMALL, "--data_dir", tmp_path, "--exp_name", "e")
    assert code == 0, err
    run = tmp_path / "e" / "e_s0"
    assert {"config.json", "progress.txt", "ckpt.pt", "best.pt"} <= set(os.listdir(run))
    header, rows = read_progress(run / "progress.txt")
    assert set(COLUMNS) <= set(header) and [r[0] for r in rows] == ["1", "2"]
    assert "Epoch 2/2 | 400/400 env steps" in out and "steps/s" in out and "left" in out
    ck = torch.load(run / "ckpt.pt", weights_only=True)
    assert ck["epoch"] == 2 and ck["t"] == 400


def test_same_seed_gives_identical_progress_and_weights(tmp_path, pendulum):
    for name in ("a", "b"):
        td3.td3(pendulum, seed=3, logger_kwargs=dict(output_dir=str(tmp_path / name), quiet=True), **SMALL)
    assert rows_without_time(tmp_path / "a") == rows_without_time(tmp_path / "b")
    wa, wb = final_weights(tmp_path / "a"), final_weights(tmp_path / "b")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


@pytest.mark.parametrize("device", DEVICES)
def test_resume_equals_one_long_run(tmp_path, pendulum, device):
    # Pendulum episodes are 200 steps; epochs of 150 end mid-episode, so the env must be
    # rebuilt mid-episode from its reset seed and the actions so far. On a GPU, trick 3's
    # noise draws from the GPU's own generator, which the checkpoint must hold as well.
    kw = {**SMALL, "steps_per_epoch": 150, "device": device}
    full, split = str(tmp_path / "full"), str(tmp_path / "split")
    td3.td3(pendulum, seed=1, logger_kwargs=dict(output_dir=full, quiet=True), **{**kw, "epochs": 4})
    td3.td3(pendulum, seed=1, logger_kwargs=dict(output_dir=split, quiet=True), **{**kw, "epochs": 2})
    td3.td3(pendulum, seed=1, logger_kwargs=dict(output_dir=split, quiet=True), resume=True, **{**kw, "epochs": 4})
    assert rows_without_time(full) == rows_without_time(split)
    assert len(rows_without_time(split)) == 4
    wf, ws = final_weights(full), final_weights(split)
    assert all(torch.equal(wf[k], ws[k]) for k in wf)


@pytest.mark.parametrize("device", DEVICES)
def test_the_checkpoint_holds_the_random_state_of_the_device_the_run_used(tmp_path, pendulum, device):
    out = tmp_path / "run"
    td3.td3(pendulum, device=device, logger_kwargs=dict(output_dir=str(out), quiet=True), **SMALL)
    ckpt = directory.load_checkpoint(out / "ckpt.pt")
    assert ckpt["device"] == device and torch.equal(ckpt["torch_rng"], torch.get_rng_state())
    if device == "cpu":
        assert ckpt["device_rng"] is None
    else:
        assert torch.equal(ckpt["device_rng"], torch.cuda.get_rng_state())


def test_a_resume_on_another_device_says_the_numbers_part_from_here(tmp_path, pendulum, capsys):
    """A run's checkpoint says which device made it; resumed elsewhere (allowed), the run
    trains on and says in one line that it no longer matches an uninterrupted run. (Here a
    CPU run's checkpoint is relabelled as a GPU's; the RNG state it holds is not used.)"""
    out = tmp_path / "run"
    td3.td3(pendulum, device="cpu", logger_kwargs=dict(output_dir=str(out), quiet=True), **SMALL)
    ckpt = directory.load_checkpoint(out / "ckpt.pt")
    directory.save_checkpoint(dict(ckpt, device="cuda:0", device_rng=torch.zeros(16, dtype=torch.uint8)),
                         out / "ckpt.pt")
    capsys.readouterr()
    td3.td3(pendulum, device="cpu", resume=True, logger_kwargs=dict(output_dir=str(out), quiet=True),
            **{**SMALL, "epochs": 3})
    said = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("note:")]
    assert said == [f"note: {out} ran on cuda:0 and resumes on cpu: from here its numbers are no "
                    f"longer those of an uninterrupted run"]
    assert len(rows_without_time(out)) == 3


def test_existing_run_directory_is_not_overwritten(tmp_path, pendulum):
    out = str(tmp_path / "run")
    td3.td3(pendulum, logger_kwargs=dict(output_dir=out, quiet=True), **SMALL)
    before = open(os.path.join(out, "progress.txt")).read()
    with pytest.raises(errors.UserError, match="already holds a run"):
        td3.td3(pendulum, logger_kwargs=dict(output_dir=out, quiet=True), **SMALL)
    assert open(os.path.join(out, "progress.txt")).read() == before


@pytest.mark.parametrize("limit, expect_done", [(5, False), (10, True)])
def test_truncation_is_stored_as_not_done(tmp_path, monkeypatch, limit, expect_done):
    # CountEnv terminates at step 7. With a time limit of 5 every episode is truncated
    # (never done); with 10 every episode terminates (done on its last step).
    stored = []
    orig = ReplayBuffer.store
    monkeypatch.setattr(ReplayBuffer, "store", lambda self, o, a, r, o2, d: (stored.append(d), orig(self, o, a, r, o2, d)))
    env_fn = lambda: gym.wrappers.TimeLimit(CountEnv(end=7), max_episode_steps=limit)
    td3.td3(env_fn, logger_kwargs=dict(output_dir=str(tmp_path), quiet=True),
            **{**SMALL, "steps_per_epoch": 70, "epochs": 1})
    ep = 5 if limit == 5 else 7
    assert stored == [float(expect_done and (i + 1) % ep == 0) for i in range(70)]


def resolved(env, **given):
    """The settings td3() trains ``env`` with, given ``given``: TD3's and the run's, by name."""
    hp, run = config.resolve(td3.Hyperparameters, given, env)
    return SimpleNamespace(**asdict(hp), **asdict(run))


def test_settings_left_to_the_env_are_resolved_from_it():
    hp = resolved(gym.make("BipedalWalker-v3"))
    assert (hp.max_ep_len, hp.reward_floor, hp.stop_return) == (1600, -10.0, 300.0)
    hp = resolved(gym.make("BipedalWalker-v3"), max_ep_len=50, reward_floor=None)
    assert (hp.max_ep_len, hp.reward_floor, hp.stop_return) == (50, None, 300.0)  # given wins
    hp = resolved(gym.make("Pendulum-v1"))
    assert (hp.max_ep_len, hp.reward_floor, hp.stop_return) == (200, None, None)
    hp = resolved(CountEnv())  # no spec, no limit
    assert hp.max_ep_len == 1000


def test_settings_left_to_the_env_per_env():
    per_env = lambda hp: (hp.gamma, hp.noise, hp.reward_floor, hp.stop_return)  # noqa: E731
    assert per_env(SimpleNamespace(**asdict(td3.Hyperparameters()), **asdict(config.RunSettings()))) \
        == ("auto", "auto", "auto", "auto")
    lander = resolved(gym.make("LunarLanderContinuous-v3"))
    assert per_env(lander) == (0.99, "pink", -10.0, 200.0)
    walker = resolved(gym.make("BipedalWalker-v3"))
    assert per_env(walker) == (0.98, "gaussian", -10.0, 300.0)
    pendulum = resolved(gym.make("Pendulum-v1"))
    assert per_env(pendulum) == (0.98, "gaussian", None, None)
    other = resolved(CountEnv())  # no spec, no id
    assert per_env(other) == (0.98, "gaussian", None, None)
    # what is given wins, and each per-env default has its way off
    off = resolved(gym.make("LunarLanderContinuous-v3"), gamma=0.98, noise="gaussian",
                   reward_floor=None, stop_return=None)
    assert per_env(off) == (0.98, "gaussian", None, None)
    on = resolved(gym.make("Pendulum-v1"), gamma=0.99, noise="pink", reward_floor=-10.0,
                  stop_return=-200.0)
    assert per_env(on) == (0.99, "pink", -10.0, -200.0)
    # the same env made another way gets the same defaults: Gymnasium's documented way to
    # the continuous lander, and not the walker's for its hardcore variant
    documented = resolved(gym.make("LunarLander-v3", continuous=True))
    assert documented == lander
    rendered = resolved(gym.make("BipedalWalker-v3", render_mode="rgb_array"))
    assert rendered == walker  # rendering is not another env
    hardcore = [resolved(gym.make(*how[:1], **how[1]))
                for how in (("BipedalWalker-v3", dict(hardcore=True)), ("BipedalWalkerHardcore-v3", {}))]
    assert per_env(hardcore[0]) == per_env(hardcore[1]) == (0.98, "gaussian", None, None)  # (their time limits differ)


def test_lunar_lander_defaults_on_the_command_line_and_in_config_json(tmp_path):
    kwargs = command.command_line(["--env", "LunarLanderContinuous-v3", "--gamma", "auto",
                                     "--noise", "auto"], td3.Hyperparameters, td3.SWAP_POINTS)
    assert (kwargs["gamma"], kwargs["noise"]) == ("auto", "auto")
    kwargs = command.command_line(["--env", "LunarLanderContinuous-v3", "--gamma", "0.98",
                                     "--noise", "gaussian", "--no_reward_floor"],
                                    td3.Hyperparameters, td3.SWAP_POINTS)
    assert (kwargs["gamma"], kwargs["noise"], kwargs["reward_floor"]) == (0.98, "gaussian", None)
    out = str(tmp_path / "lander")
    td3.td3(lambda: gym.make("LunarLanderContinuous-v3"), logger_kwargs=dict(
        output_dir=out, quiet=True), **{**SMALL, "epochs": 1, "num_test_episodes": 1})
    config = directory.read_config(out)  # the values used, never "auto"
    assert (config["gamma"], config["noise"], config["reward_floor"], config["stop_return"]) == (
        0.99, "pink", -10.0, 200.0)


def test_a_run_from_before_noise_was_left_to_the_env_resumes_with_gaussian_noise(tmp_path):
    # Its config.json has no "noise": it explored with Gaussian noise, the only kind then. A
    # resume must keep that, not take the pink noise that "auto" gives LunarLander.
    out = tmp_path / "lander"
    kw = {**SMALL, "epochs": 1, "num_test_episodes": 1}
    td3.td3(lambda: gym.make("LunarLanderContinuous-v3"), logger_kwargs=dict(
        output_dir=str(out), quiet=True), noise="gaussian", **kw)
    config = json.loads((out / "config.json").read_text())
    del config["noise"]
    (out / "config.json").write_text(json.dumps(config))
    code, _, err = run_cli("--resume", out, "--epochs", 2, "--quiet")
    assert code == 0, err
    assert len(rows_without_time(out)) == 2
    assert json.loads((out / "config.json").read_text()).get("noise", "gaussian") == "gaussian"
    msg = one_line_error(*run_cli("--resume", out, "--noise", "pink")[::2])
    assert "was made with noise='gaussian'" in msg


def test_nan_loss_stops_with_a_clear_message(tmp_path, pendulum):
    out = str(tmp_path / "nan")
    with pytest.raises(errors.UserError, match=r"epoch 1: LossQ became NaN"):
        td3.td3(pendulum, q_lr=1e30, pi_lr=1e30, logger_kwargs=dict(output_dir=out, quiet=True),
                **{**SMALL, "epochs": 1})
    assert not os.path.exists(os.path.join(out, "ckpt.pt"))


def test_short_pendulum_run_learns(tmp_path):
    """Fixed seeds, 9k env steps: the last epoch's average test return must reach -300
    (random play is about -1200). Measured: see README "Tests"."""
    rets = []
    ac = td3.td3(lambda: gym.make("Pendulum-v1"), seed=0, steps_per_epoch=1500, epochs=6,
                 start_steps=1000, update_after=500, batch_size=128, num_test_episodes=5,
                 ac_kwargs=dict(hidden_sizes=(64, 64)),
                 logger_kwargs=dict(output_dir=str(tmp_path), quiet=True))
    env = gym.make("Pendulum-v1")
    for ep in range(5):
        o, _ = env.reset(seed=1000 + ep)
        done, ret = False, 0.0
        while not done:
            o, r, term, trunc, _ = env.step(ac.act(o))
            ret, done = ret + r, term or trunc
        rets.append(ret)
    assert np.mean(rets) >= -300, rets


# ---- bad input: one line on stderr, exit code 2, no traceback ----

def test_unknown_env_suggests_close_ids(tmp_path):
    msg = one_line_error(*run_cli("--env", "BipedalWalker-v9", "--data_dir", tmp_path)[::2])
    assert "unknown env id 'BipedalWalker-v9'" in msg and "BipedalWalker-v3" in msg
    assert not os.listdir(tmp_path)


@pytest.mark.skipif(importlib.util.find_spec("mujoco") is not None, reason="mujoco is installed")
def test_missing_mujoco_names_the_pinned_install_line(tmp_path):
    msg = one_line_error(*run_cli("--env", "Hopper-v5", "--data_dir", tmp_path)[::2])
    assert msg == ('error: env \'Hopper-v5\' needs MuJoCo: pip install '
                   '"gymnasium[mujoco]==1.2.3" "mujoco==3.15.0"')
    assert not os.listdir(tmp_path)


def test_discrete_action_space_is_refused(tmp_path):
    msg = one_line_error(*run_cli("--env", "CartPole-v1", "--data_dir", tmp_path)[::2])
    assert "Discrete action space" in msg and "Box" in msg
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("flag", [["--epochs", 0], ["--batch_size", -1], ["--steps_per_epoch", 0]])
def test_non_positive_counts(flag, tmp_path):
    # its own data_dir: were the check missing, the run must not land in the repository's data/
    msg = one_line_error(*run_cli("--env", "Pendulum-v1", *flag, "--data_dir", tmp_path)[::2])
    assert f"{flag[0][2:]} must be a positive integer" in msg
    assert not os.listdir(tmp_path)


def test_watch_without_checkpoint(tmp_path):
    # (td3.py --resume starts such a run again: tests/test_runs.py)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text('{"env_id": "Pendulum-v1", "ac_kwargs": {"hidden_sizes": [32, 32]}, "max_ep_len": 200}')
    msg = one_line_error(*run_cli(run, script="watch.py")[::2])
    assert f"{run} has no" in msg and ("checkpoint" in msg or "ckpt.pt" in msg)


def test_cli_refuses_existing_run_and_says_how_to_resume(tmp_path):
    args = ["--env", "Pendulum-v1", *CLI_SMALL, "--epochs", 1, "--data_dir", tmp_path, "--exp_name", "e"]
    assert run_cli(*args)[0] == 0
    msg = one_line_error(*run_cli(*args)[::2])
    assert "already holds a run" in msg and "--resume" in msg and "--exp_name" in msg


def test_cli_resume_and_watch(tmp_path):
    args = ["--env", "Pendulum-v1", *CLI_SMALL, "--data_dir", tmp_path, "--exp_name", "e"]
    assert run_cli(*args[:-4], "--epochs", 1, *args[-4:])[0] == 0
    run = tmp_path / "e" / "e_s0"
    code, out, err = run_cli("--resume", run, "--epochs", 2)
    assert code == 0, err
    assert "resuming at env step 200" in out
    assert [r[0] for r in read_progress(run / "progress.txt")[1]] == ["1", "2"]
    code, out, err = run_cli(run, "--episodes", 2, "--gif", tmp_path / "w.gif", script="watch.py")
    assert code == 0, err
    assert out.count("return") >= 2 and (tmp_path / "w.gif").read_bytes()[:3] == b"GIF"


def test_malformed_option_is_one_line(tmp_path):
    msg = one_line_error(*run_cli("--env", "Pendulum-v1", "--epochs", "abc", "--data_dir", tmp_path)[::2])
    assert "invalid int value: 'abc'" in msg
    assert not os.listdir(tmp_path)


def test_pink_noise_changes_exploration_and_resumes_exactly(tmp_path, pendulum):
    kw = {**SMALL, "steps_per_epoch": 150, "start_steps": 150, "noise": "pink"}
    full, split = str(tmp_path / "full"), str(tmp_path / "split")
    td3.td3(pendulum, seed=1, logger_kwargs=dict(output_dir=full, quiet=True), **{**kw, "epochs": 3})
    td3.td3(pendulum, seed=1, logger_kwargs=dict(output_dir=split, quiet=True), **{**kw, "epochs": 1})
    td3.td3(pendulum, seed=1, logger_kwargs=dict(output_dir=split, quiet=True), resume=True,
            **{**kw, "epochs": 3})
    assert rows_without_time(full) == rows_without_time(split)  # resumed mid-episode, exactly
    gauss = str(tmp_path / "gauss")
    td3.td3(pendulum, seed=1, logger_kwargs=dict(output_dir=gauss, quiet=True), **{**kw, "epochs": 3,
                                                                                   "noise": "gaussian"})
    rows_p, rows_g = rows_without_time(full), rows_without_time(gauss)
    assert rows_p[0] == rows_g[0]  # epoch 1 is random actions only...
    assert rows_p[1] != rows_g[1]  # ...then the noise differs


@pytest.mark.parametrize("script", ["td3.py", "watch.py", "plot.py", "diagnose.py", "sweep.py"])
def test_each_script_runs_as_a_process_of_its_own(script, tmp_path):
    """The suite runs the scripts' main() in its own process (conftest.run_cli); here each
    starts as a user starts it: --help, then a mistake, one line and exit 2."""
    run = lambda *a: subprocess.run([sys.executable, os.path.join(ROOT, script), *map(str, a)],
                                    capture_output=True, text=True, cwd=tmp_path)
    p = run("--help")
    assert p.returncode == 0 and p.stdout.startswith("usage:"), p.stderr
    p = run("--no_such_option")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stderr.startswith("error: "), p.stderr
