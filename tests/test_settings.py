"""One home per setting: range checks, the CLI and the Python API agree, swap points, no global
side effects, and rows pinned from a short run."""
import json
import os
import platform
import signal
import subprocess
import sys
from dataclasses import fields

import gymnasium as gym
import pytest
import torch
import core
import td3
from notebooks import port_mistakes
from conftest import DEVICES, ROOT, SMALL, run_cli
from logger import read_progress
from run import command, config, errors, machine

# One invalid value per setting, each breaking its field's rule.
BAD = dict(seed=-1, steps_per_epoch=0, epochs=0, replay_size=0, gamma=1.5, polyak=1.0,
           pi_lr=0.0, q_lr=-1e-3, batch_size=0, start_steps=-5, update_after=-1,
           update_every=0, act_noise=-0.1, target_noise=-0.2, noise_clip=-0.5,
           noise="white", policy_delay=0, twin="maybe", reward_floor="abc", num_test_episodes=0,
           max_ep_len=0, stop_return="nan", confirm_episodes=-1, stop_epochs=0, early_stop="no",
           test_actor="best", compare_actors="yes", save_freq=0, device="tpu", threads=0)


def test_every_setting_has_a_bad_value_here():
    assert set(BAD) == {f.name for cls in (td3.Hyperparameters, config.RunSettings)
                        for f in fields(cls)}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_value_is_one_line_and_writes_nothing(name, tmp_path, capsys):
    argv = ["--env", "Pendulum-v1", f"--{name}", str(BAD[name]), "--data_dir", str(tmp_path)]
    with pytest.raises((errors.UserError, SystemExit)) as e:
        td3.main(argv)
    msg = str(e.value) if e.type is errors.UserError else capsys.readouterr().err.strip()
    if e.type is SystemExit:
        assert e.value.code == 2
    # td3()'s one check, or argparse's for text that is not even of the option's type
    assert len(msg.splitlines()) == 1 and (msg.startswith(name) or f"argument --{name}:" in msg), msg
    assert os.listdir(tmp_path) == []


def test_bad_value_from_the_command_line(tmp_path):
    code, out, err = run_cli("--env", "Pendulum-v1", "--gamma", 1.5, "--data_dir", tmp_path)
    assert code == 2 and err.strip() == ("error: gamma must be in (0, 1] or 'auto' (the "
                                         "env's default), got 1.5")
    assert os.listdir(tmp_path) == []


def test_batch_larger_than_buffer_is_refused(tmp_path):
    with pytest.raises(errors.UserError, match=r"batch_size \(64\) must be at most replay_size \(32\)"):
        td3.td3(lambda: gym.make("Pendulum-v1"), batch_size=64, replay_size=32,
                logger_kwargs=dict(output_dir=str(tmp_path / "r")))
    assert not (tmp_path / "r").exists()


def test_unavailable_device_is_one_line(tmp_path):
    code, out, err = run_cli("--env", "Pendulum-v1", "--device", "cuda:99", "--data_dir", tmp_path)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "device 'cuda:99' is not available" in err and "available: cpu" in err
    assert "choose with --device" in err
    assert os.listdir(tmp_path) == []


def test_cli_and_python_api_write_the_same_config(tmp_path):
    # BipedalWalker-v3's per-env defaults (reward floor, early stop) must reach both paths.
    small = ["--epochs", 1, "--steps_per_epoch", 60, "--start_steps", 60, "--update_after", 50,
             "--batch_size", 16, "--num_test_episodes", 1, "--max_ep_len", 30, "--hid", 16,
             "--replay_size", 1000]
    code, _, err = run_cli("--env", "BipedalWalker-v3", *small, "--data_dir", tmp_path / "cli")
    assert code == 0, err
    kwargs = {k.lstrip("-"): v for k, v in zip(small[::2], small[1::2]) if k != "--hid"}
    td3.td3(lambda: gym.make("BipedalWalker-v3"), ac_kwargs=dict(hidden_sizes=(16, 16)),
            logger_kwargs=dict(output_dir=str(tmp_path / "api"), quiet=True), **kwargs)
    cli = json.loads(next((tmp_path / "cli").glob("*/*/config.json")).read_text())
    api = json.loads((tmp_path / "api" / "config.json").read_text())
    assert cli["reward_floor"] == api["reward_floor"] == -10.0
    assert cli["stop_return"] == api["stop_return"] == 300.0
    paths = {"logger_kwargs", "torch_threads"}  # where it writes; the CLI test runs 1 thread
    assert {k: v for k, v in cli.items() if k not in paths} == \
           {k: v for k, v in api.items() if k not in paths}


def cpu_from_the_system():
    """The CPU model as /proc/cpuinfo (or, without it, the platform) names it, read here and
    not through machine.cpu_model, so that a wrong record cannot pass by agreeing with itself."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


@pytest.mark.parametrize("threads", [1, 2])
def test_config_records_threads_and_cpu(tmp_path, threads):
    code, _, err = run_cli("--env", "Pendulum-v1", "--epochs", 1, "--steps_per_epoch", 50,
                           "--start_steps", 50, "--num_test_episodes", 1, "--hid", 8,
                           "--threads", threads, "--data_dir", tmp_path, "--exp_name", "t")
    assert code == 0, err
    config = json.loads((tmp_path / "t" / "t_s0" / "config.json").read_text())
    assert config["torch_threads"] == threads  # what the run was told, not what it reports
    assert config["cpu"] == cpu_from_the_system() and config["cpu"]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs two cores to pin a run to one")
def test_threads_follow_the_cores_the_process_may_use(tmp_path):
    """taskset -c 0 python td3.py ...: one core allowed, so one torch thread, not two."""
    one = {min(os.sched_getaffinity(0))}
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}  # (the suite sets it)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "td3.py"), "--env", "Pendulum-v1",
                        "--epochs", "1", "--steps_per_epoch", "50", "--start_steps", "50",
                        "--num_test_episodes", "1", "--hid", "8", "--data_dir", str(tmp_path),
                        "--exp_name", "t"], capture_output=True, text=True, cwd=ROOT, env=env,
                       preexec_fn=lambda: os.sched_setaffinity(0, one))
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "t" / "t_s0" / "config.json").read_text())["torch_threads"] == 1


def test_the_default_thread_count_follows_omp_num_threads(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert machine.default_threads(cores=8, free=8) == 2 and machine.default_threads(cores=1) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert machine.default_threads(cores=8, free=8) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert machine.default_threads(cores=8, free=8) == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "nonsense")
    assert machine.default_threads(cores=8, free=8) == 2


def test_the_default_thread_count_is_one_while_another_process_keeps_a_core_busy(monkeypatch):
    """A second thread spins on a core another process holds and waits for it at every step
    (docs/speed.md): with less than about 1.5 cores free, the rule takes one thread."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert [machine.default_threads(cores=2, free=f) for f in (2.0, 1.6, 1.4, 1.0, 0.1)] == \
        [2, 2, 1, 1, 1]
    monkeypatch.setattr(machine, "free_cores", lambda: 0.9)  # measured when not given
    assert machine.default_threads(cores=2) == 1
    monkeypatch.setattr(machine, "free_cores", lambda: None)  # not measurable here
    assert machine.default_threads(cores=2) == 2


def test_a_run_with_two_threads_says_once_when_the_machine_got_busy(capsys):
    """The thread count stays (determinism); the run says, once, what to do about it."""
    from types import SimpleNamespace
    from run.door import Run
    loads = iter([1.2, 1.5])
    run = SimpleNamespace(other_load=SimpleNamespace(since_last=lambda: next(loads)), output_dir="R")
    Run.say_if_shared(run)
    Run.say_if_shared(run)
    said = capsys.readouterr().out
    assert said.count("note: other processes kept 1.2 cores busy") == 1 and "--threads 1" in said
    quiet = SimpleNamespace(other_load=SimpleNamespace(since_last=lambda: 0.1), output_dir="R")
    Run.say_if_shared(quiet)
    assert capsys.readouterr().out == ""


def test_config_records_the_code_and_the_network_as_built(tmp_path, pendulum):
    # ac_kwargs left empty still records the network's shape (MLPActorCritic's default), the
    # same record a CLI run with --hid 256 --l 2 writes; and the git commit of the code.
    kw = {k: v for k, v in SMALL.items() if k != "ac_kwargs"}
    td3.td3(pendulum, logger_kwargs=dict(output_dir=str(tmp_path), quiet=True), **kw)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["ac_kwargs"] == {"hidden_sizes": [256, 256]}
    # The commit, asked of git here, not of machine.git_commit (a None from it must not pass).
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    except OSError:  # no git installed
        head = None
    if head is not None and head.returncode == 0:
        assert config["git"]["commit"] == head.stdout.strip() and len(config["git"]["commit"]) == 40
        assert isinstance(config["git"]["uncommitted_changes"], bool)
    else:
        assert config["git"] is None  # not a git checkout


def test_polyak_that_looks_like_tau_warns_in_one_line(tmp_path, pendulum, capsys):
    td3.td3(pendulum, polyak=0.005, logger_kwargs=dict(output_dir=str(tmp_path / "a"), quiet=True),
            **{**SMALL, "epochs": 1})
    err = capsys.readouterr().err.strip().splitlines()
    assert [ln for ln in err if ln.startswith("warning: polyak=0.005")] == [err[0]] and \
        "1 - tau" in err[0]
    td3.td3(pendulum, logger_kwargs=dict(output_dir=str(tmp_path / "b"), quiet=True),
            **{**SMALL, "epochs": 1})
    assert "polyak" not in capsys.readouterr().err


def test_sigint_handler_is_the_callers_again_after_a_nan_stop(tmp_path, pendulum):
    mine = lambda signum, frame: None
    previous = signal.signal(signal.SIGINT, mine)
    try:
        with pytest.raises(errors.UserError, match="NaN"):
            td3.td3(pendulum, q_lr=1e30, pi_lr=1e30, **{**SMALL, "epochs": 1},
                    logger_kwargs=dict(output_dir=str(tmp_path), quiet=True))
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)


# ---- swap points: each injected mistake really changes the update's numbers ----
def one_update(**swaps):
    torch.manual_seed(0)
    box = gym.spaces.Box(-1, 1, (3,), "float32")
    ac = core.MLPActorCritic(box, gym.spaces.Box(-1, 1, (2,), "float32"), hidden_sizes=(16, 16))
    ac_targ = core.MLPActorCritic(box, gym.spaces.Box(-1, 1, (2,), "float32"), hidden_sizes=(16, 16))
    g = torch.Generator().manual_seed(1)
    batch = dict(obs=torch.randn(32, 3, generator=g), act=torch.rand(32, 2, generator=g) * 2 - 1,
                 rew=torch.randn(32, generator=g), obs2=torch.randn(32, 3, generator=g),
                 done=torch.zeros(32))
    update, _, _ = td3.build_update(ac, ac_targ, td3.Hyperparameters(gamma=0.98), **swaps)
    torch.manual_seed(2)
    update(batch, n_updates=2)
    return torch.cat([p.detach().flatten() for p in ac.parameters()])


@pytest.mark.parametrize("swap", [dict(critic_loss=port_mistakes.q2_own_target),
                                  dict(critic_loss=port_mistakes.column_critics),
                                  dict(target_action=port_mistakes.shared_noise)],
                         ids=lambda s: next(iter(s.values())).__name__)
def test_each_swapped_mistake_changes_the_update(swap):
    right = one_update()
    # The swap point is what the update calls: a stand-in that counts its calls and does
    # what the default does gives the same numbers, and the mistake gives other numbers.
    (name, mistake), = swap.items()
    default, calls = {"critic_loss": td3.critic_loss, "target_action": core.smoothed_target_action}[name], []
    counted = lambda *a, **k: (calls.append(1), default(*a, **k))[1]
    assert torch.equal(right, one_update(**{name: counted})) and len(calls) == 1
    assert (one_update(**swap) - right).abs().max() > 1e-4


def test_done_flag_swap_reaches_the_buffer(tmp_path, monkeypatch):
    stored = []
    orig = td3.ReplayBuffer.store
    monkeypatch.setattr(td3.ReplayBuffer, "store",
                        lambda self, o, a, r, o2, d: (stored.append(d), orig(self, o, a, r, o2, d)))
    td3.td3(lambda: gym.make("Pendulum-v1"), done_flag=port_mistakes.truncation_as_death,
            logger_kwargs=dict(output_dir=str(tmp_path), quiet=True), **{**SMALL, "epochs": 1})
    assert stored[199] == 1.0 and sum(stored) == 1.0  # Pendulum's 200-step limit, stored as death
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["done_flag"] == "notebooks.port_mistakes:truncation_as_death"


@pytest.mark.parametrize("device", DEVICES)
def test_swap_points_from_the_command_line_and_on_resume(tmp_path, device):
    small = ["--env", "Pendulum-v1", "--epochs", 1, "--steps_per_epoch", 200, "--start_steps", 100,
             "--update_after", 100, "--batch_size", 32, "--num_test_episodes", 1, "--hid", 32,
             "--replay_size", 10000, "--device", device, "--data_dir", tmp_path, "--exp_name", "p"]
    code, _, err = run_cli(*small, "--target_action", "notebooks.port_mistakes:shared_noise")
    assert code == 0, err
    run = tmp_path / "p" / "p_s0"
    assert json.loads((run / "config.json").read_text())["target_action"] == \
        "notebooks.port_mistakes:shared_noise"
    kwargs = parse_td3(["--resume", str(run), "--epochs", "2"])
    assert kwargs["target_action"] is port_mistakes.shared_noise  # the run keeps its mistake
    assert kwargs["critic_loss"] is td3.critic_loss
    code, _, err = run_cli(*small[:-4], "--critic_loss", "notebooks.port_mistakes:nope")
    assert code == 2 and "cannot load 'notebooks.port_mistakes:nope'" in err


def parse_td3(argv):
    return command.command_line(argv, td3.Hyperparameters, td3.SWAP_POINTS)


# ---- the algorithm's numbers, pinned ----
PINNED = os.path.join(os.path.dirname(__file__), "pinned_rows.json")


def short_pinned_run(out):
    # On the CPU: the pinned rows were made there, and a GPU's kernels round differently.
    td3.td3(lambda: gym.make("Pendulum-v1"), seed=5, logger_kwargs=dict(output_dir=out, quiet=True),
            **{**SMALL, "epochs": 3, "start_steps": 200, "device": "cpu"})
    header, rows = read_progress(os.path.join(out, "progress.txt"))
    t = header.index("Time")
    return dict(header=header[:t] + header[t + 1:], rows=[r[:t] + r[t + 1:] for r in rows])


def test_two_runs_in_one_process_write_identical_rows(tmp_path):
    """What holds on any CPU: the same seed, the same process, the same rows (but Time)."""
    first, second = short_pinned_run(str(tmp_path / "a")), short_pinned_run(str(tmp_path / "b"))
    assert first == second and len(first["rows"]) == 3
    td3.td3(lambda: gym.make("Pendulum-v1"), seed=6, logger_kwargs=dict(
        output_dir=str(tmp_path / "c"), quiet=True), **{**SMALL, "epochs": 1, "start_steps": 200})
    assert read_progress(str(tmp_path / "c" / "progress.txt"))[1][0][1] != first["rows"][0][1]


def test_a_short_run_writes_the_pinned_rows(tmp_path):
    """tests/pinned_rows.json holds a short run's rows as the code wrote them when they were
    pinned, for each CPU model and torch thread count they were pinned on (add this
    machine's: python tests/test_settings.py). Floating-point reduction order differs
    between CPU models and thread counts, so rows are compared only where they were pinned;
    elsewhere the test checks the one thing no machine changes, the first row's training
    return, which random actions decide before any update, and says it is skipped."""
    pinned = json.load(open(PINNED))
    now = short_pinned_run(str(tmp_path))
    assert now["header"] == pinned["header"]
    here = [m for m in pinned["machines"]
            if (m["cpu"], m["torch_threads"]) == (machine.cpu_model(), torch.get_num_threads())]
    ep_ret = pinned["header"].index("AverageEpRet")
    assert all(now["rows"][0][ep_ret] == m["rows"][0][ep_ret] for m in pinned["machines"])
    if not here:
        pytest.skip(f"no rows pinned for {machine.cpu_model()} with {torch.get_num_threads()} "
                    f"torch threads: only the first row's training return was compared")
    assert now["rows"] == here[0]["rows"]



@pytest.mark.parametrize("argv, expected", [
    ([], dict(stop_return=300.0, reward_floor=-10.0, twin=True, policy_delay=2, target_noise=0.2)),
    (["--no_stop", "--no_reward_floor"], dict(stop_return=300.0, early_stop=False, reward_floor=None)),
    (["--stop_return", "none", "--reward_floor", "None"], dict(stop_return=None, reward_floor=None)),
    (["--no_twin", "--no_delay", "--no_smoothing"], dict(twin=False, policy_delay=1, target_noise=0.0)),
    (["-s", "3", "--polyak", "0.9"], dict(seed=3, polyak=0.9)),
])
def test_every_switch_reaches_the_config(argv, expected):
    # A switch that sets None (--no_reward_floor) must not read as "not given", which would
    # leave the env's default (BipedalWalker-v3: floor -10) in place. --no_stop keeps the
    # threshold: the run is still judged (best.pt, the confirmation), it only trains on.
    import sweep
    config = sweep.planned(["--env", "BipedalWalker-v3", *argv]).config  # as td3() makes it
    assert {k: config[k] for k in expected} == expected
    if not {"--no_twin", "-s"} & set(argv):  # sweep.py sets these itself
        plan = sweep.plan_runs(*sweep.parse_args(["--env", "BipedalWalker-v3", "--seeds", "3",
                                                  "--data_dir", "/nonexistent-td3-data", *argv]))
        swept = sweep.planned(plan[0]["argv"]).config
        assert {k: swept[k] for k in expected} == expected


if __name__ == "__main__":
    import tempfile
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as d:
        run = short_pinned_run(os.path.join(d, "r"))
    pinned = json.load(open(PINNED)) if os.path.exists(PINNED) else dict(header=run["header"], machines=[])
    key = (machine.cpu_model(), torch.get_num_threads())
    pinned["machines"] = [m for m in pinned["machines"] if (m["cpu"], m["torch_threads"]) != key]
    pinned["machines"].append(dict(cpu=key[0], torch_threads=key[1], rows=run["rows"]))
    with open(PINNED, "w") as f:
        json.dump(pinned, f, indent=1)
    print(f"wrote {PINNED}: rows for {key[0]} with {key[1]} torch threads")
