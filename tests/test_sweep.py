"""sweep.py: a grid of td3.py runs on Ray that finishes, resumes exactly after Ctrl-C or a
kill, reports a failing run while the others finish, and runs the same way on a Ray head
started here. All of Ray's traffic stays on 127.0.0.1, which the tests check.

td3.py imports this module when a sweep names the env "tests.test_sweep:SweepExploding-v0"
(Gymnasium's "module:EnvId" form), so it imports nothing of the project at the top.
"""
import contextlib
import glob
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.classic_control.pendulum import PendulumEnv
from run import errors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPOCHS = 8  # enough that a Ctrl-C after the first checkpoint lands mid-run on a busy machine
SMALL = ["--hid", 32, "--steps_per_epoch", 200, "--epochs", EPOCHS, "--start_steps", 100,
         "--update_after", 100, "--batch_size", 32, "--num_test_episodes", 1,
         "--replay_size", 10_000]  # a few seconds a run
TINY = ["--env", "Pendulum-v1", *SMALL]
GRID = [*TINY, "--seeds", 0, 1, "--variants", "td3", "ddpg"]
DDPG = "td3-Pendulum-v1-no_twin-no_delay-no_smoothing"
RUNS = ["td3-Pendulum-v1/td3-Pendulum-v1_s0", "td3-Pendulum-v1/td3-Pendulum-v1_s1",
        f"{DDPG}/{DDPG}_s0", f"{DDPG}/{DDPG}_s1"]


class Exploding(PendulumEnv):
    """Pendulum whose rewards overflow float32 in the replay buffer: the critic's loss is
    inf at the first update and td3.py stops with its "LossQ became NaN or inf" error."""

    def step(self, a):
        o, r, terminated, truncated, info = super().step(a)
        return o, r * 1e39, terminated, truncated, info


gym.register("SweepExploding-v0", entry_point=f"{__name__}:Exploding", max_episode_steps=200)
EXPLODING = "tests.test_sweep:SweepExploding-v0"  # td3.py imports this module to make it


# ------------------------------------------------------------------------------------------
# Helpers: running sweeps, reading runs, watching processes and sockets
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """The environment of every sweep here: its own Ray temp dir (short: Ray's socket paths
    must fit in 107 characters) and a HOME of its own, to see that nothing lands in ~/.ray."""
    ray_tmp = tempfile.mkdtemp(prefix="rt", dir="/tmp")
    home = tmp_path_factory.mktemp("home")
    yield {**os.environ, "RAY_TMPDIR": ray_tmp, "HOME": str(home), "OMP_NUM_THREADS": "1"}
    shutil.rmtree(ray_tmp, ignore_errors=True)


def sweep_cmd(*args):
    return [sys.executable, os.path.join(ROOT, "sweep.py"), *map(str, args)]


def run_sweep(env, *args, timeout=600):
    p = subprocess.run(sweep_cmd(*args), capture_output=True, text=True, timeout=timeout,
                       cwd=ROOT, env=env)
    return p.returncode, p.stdout, p.stderr


def start_sweep(env, *args, sigint_ignored=False):
    """A sweep in a session of its own, as a terminal runs it: signals go to its group.
    ``sigint_ignored``: as a shell script's background job (``cmd &``), or anything started
    by one (a test suite run so), inherits SIGINT."""
    ignore = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)
    return subprocess.Popen(sweep_cmd(*args), cwd=ROOT, env=env, start_new_session=True,
                            preexec_fn=ignore if sigint_ignored else None,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def rows_written(data_dir):
    n = 0
    for path in glob.glob(os.path.join(data_dir, "*", "*", "progress.txt")):
        with open(path) as f:
            n += max(0, sum(1 for line in f if line.endswith("\n")) - 1)
    return n


def wait_for(predicate, p=None, timeout=300):
    deadline = time.time() + timeout
    while not predicate():
        assert p is None or p.poll() is None, f"the sweep ended early: {p.communicate()}"
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


def progress(run):
    """progress.txt rows without the Time column."""
    with open(os.path.join(run, "progress.txt")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    i = rows[0].index("Time")
    return [r[:i] + r[i + 1:] for r in rows]


def config(run):
    with open(os.path.join(run, "config.json")) as f:
        c = json.load(f)
    c.pop("logger_kwargs")  # holds the run's own path
    return c


def actor(run):
    import torch
    return torch.load(os.path.join(run, "ckpt.pt"), weights_only=True)["ac"]


def snapshot(data_dir):
    out = {}
    for path in sorted(glob.glob(os.path.join(data_dir, "**"), recursive=True)):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                out[path] = (hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_mtime_ns)
    return out


def process_tree(pid):
    """pid and all its descendants (from /proc)."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    tree, todo = set(), [pid]
    while todo:
        p = todo.pop()
        tree.add(p)
        todo += children.get(p, [])
    return tree


def alive(pids):
    out = set()
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    out.add(p)
        except OSError:
            pass
    return out


def assert_loopback_only(pids):
    """Every TCP or UDP socket of these processes is on 127.0.0.1: listening there, and
    talking to nothing else."""
    if not shutil.which("ss"):  # iproute2, on every machine of this project's kind
        warnings.warn("no ss command: Ray's sockets were not checked")
        return
    out = subprocess.run(["ss", "-tuanpH"], capture_output=True, text=True).stdout
    seen = 0
    for line in out.splitlines():
        owners = {int(x.split("=")[1]) for x in line.split("users:")[-1].split(",")
                  if x.startswith("pid=")} if "users:" in line else set()
        if not owners & pids:
            continue
        seen += 1
        local, peer = (a.rsplit(":", 1)[0].strip("[]").replace("::ffff:", "")
                       for a in line.split()[4:6])
        assert local == "127.0.0.1", f"a socket off loopback: {line}"
        assert peer in ("127.0.0.1", "*", "0.0.0.0", "::"), f"a socket off loopback: {line}"
    assert seen, "found no socket of the sweep's processes"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------------
# A 2-seed x 2-variant sweep on a private Ray instance
# ------------------------------------------------------------------------------------------
# The tests that share the grid run in one worker, so that it is swept once (pytest.ini), and
# so does the cluster test: one Ray at a time on the machine, as a person runs sweeps.
RAY_GROUP = pytest.mark.xdist_group("sweep_ray")


@pytest.fixture(scope="module")
def grid(tmp_path_factory, env):
    """The grid swept once, uninterrupted; its sockets checked while it runs."""
    data = tmp_path_factory.mktemp("grid")
    p = start_sweep(env, *GRID, "--data_dir", data)
    wait_for(lambda: rows_written(data) > 0, p)
    assert_loopback_only(process_tree(p.pid))
    out, err = p.communicate(timeout=600)
    return dict(data=data, code=p.returncode, out=out, err=err)


@RAY_GROUP
def test_sweep_finishes_every_run_as_td3_py_would(grid, env, tmp_path):
    assert grid["code"] == 0, grid["err"]
    for run in RUNS:
        files = set(os.listdir(grid["data"] / run))
        assert {"config.json", "progress.txt", "ckpt.pt", "best.pt", "sweep.log"} <= files
        assert [r[0] for r in progress(grid["data"] / run)] == ["Epoch", *map(str, range(1, EPOCHS + 1))]
    # Each run is what python td3.py writes for the same command, config and numbers alike.
    from conftest import run_cli  # here: td3.py imports this module for SweepExploding-v0
    code, _, err = run_cli(*TINY, "--seed", 1, "--no_twin", "--no_delay", "--no_smoothing",
                           "--data_dir", tmp_path, "--threads", 1, "--quiet")
    assert code == 0, err
    by_hand = tmp_path / RUNS[3]
    assert config(by_hand) == config(grid["data"] / RUNS[3])
    assert progress(by_hand) == progress(grid["data"] / RUNS[3])
    # What a person reads at the end: a table per variant and the plot command, which works.
    assert "| Pendulum-v1 | td3 | 2/2 | no threshold |" in grid["out"]
    assert "| Pendulum-v1 | ddpg | 2/2 | no threshold |" in grid["out"]
    plot = [ln for ln in grid["out"].splitlines() if ln.startswith("python plot.py")]
    assert len(plot) == 1 and str(grid["data"]) in plot[0]
    png = tmp_path / "grid.png"
    cmd = plot[0].replace("python", sys.executable, 1).rsplit("--out", 1)[0] + f"--out {png}"
    assert subprocess.run(cmd, shell=True, cwd=ROOT, env=env).returncode == 0
    assert png.stat().st_size > 0
    # The private Ray instance had a token of its own; none was written to ~/.ray.
    assert not os.path.exists(os.path.join(env["HOME"], ".ray"))


@RAY_GROUP
def test_rerun_of_a_finished_sweep_changes_nothing(grid, env):
    before = snapshot(grid["data"])
    code, out, err = run_sweep(env, *GRID, "--data_dir", grid["data"])
    assert code == 0, err
    assert "4 finished, 0 to resume, 0 to start" in out
    assert "Ray" not in out  # no Ray started, no run trained
    assert snapshot(grid["data"]) == before


@RAY_GROUP
def test_interrupted_and_killed_sweep_resumes_to_the_same_files(grid, env, tmp_path):
    data, sweep = tmp_path / "data", [*TINY, "--seeds", 0, 1, "--variants", "ddpg"]
    # The stopped sweeps ask for 25 times the epochs, so that a busy machine can't let them
    # finish before the stop lands; the last one asks for EPOCHS again, which a resume may.
    long = [*sweep, "--epochs", 25 * EPOCHS]
    # Ctrl-C in a terminal: SIGINT to the sweep's process group, once a run has a checkpoint;
    # it stops the sweep also where the sweep inherited SIGINT ignored (a script's `cmd &`).
    p = start_sweep(env, *long, "--data_dir", data, sigint_ignored=True)
    wait_for(lambda: glob.glob(str(data / "*" / "*" / "ckpt.pt")), p)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 130, err
    assert "run the same command again to continue" in err
    # A power cut, once the rerun has written a new table row: SIGKILL to the sweep's group
    # and to the runs. Ray's workers, each in a process group of its own, must then go by
    # themselves: nothing of the killed sweep may live on to race the rerun.
    rows = rows_written(data)
    p = start_sweep(env, *long, "--data_dir", data)
    wait_for(lambda: rows_written(data) > rows, p)
    tree = process_tree(p.pid)
    os.killpg(p.pid, signal.SIGKILL)
    for pid in tree:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"td3.py" in f.read():
                os.kill(pid, signal.SIGKILL)
    p.communicate(timeout=60)
    wait_for(lambda: not alive(tree), timeout=60)

    for run in RUNS[2:]:  # stopped while both runs had epochs to go
        table = data / run / "progress.txt"
        assert not table.exists() or len(table.read_text().splitlines()) - 1 < EPOCHS
    checkpointed = {run: (data / run / "ckpt.pt").exists() for run in RUNS[2:]}
    code, out, err = run_sweep(env, *sweep, "--data_dir", data)
    assert code == 0, err + out
    assert "2 finished" not in out.splitlines()[0]  # the kills did leave work to do
    for run in RUNS[2:]:  # the same runs as in the grid swept without a stop
        assert progress(data / run) == progress(grid["data"] / run)
        made = config(data / run)
        # config.json keeps the epochs the run began with: a run with a checkpoint began in a
        # stopped sweep (25 x EPOCHS); one that a stop caught while its td3.py was starting
        # (no checkpoint yet) began in the last sweep, afresh or again (its first files kept).
        assert made.pop("epochs") == (25 * EPOCHS if checkpointed[run] else EPOCHS)
        assert made == {k: v for k, v in config(grid["data"] / run).items() if k != "epochs"}
        a, b = actor(data / run), actor(grid["data"] / run)
        assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)


@RAY_GROUP
def test_the_ray_tests_run_in_one_worker(request):
    """pytest.ini's --dist loadgroup keeps this group in one worker (the grid swept once, one
    Ray at a time); with a pytest whose tests xdist can no longer mark, it would spread. It
    reads the mark xdist 3.8 (pinned) gives a grouped test: "@sweep_ray" after its node id."""
    if getattr(request.config.option, "loadgroup", False):  # a worker of --dist loadgroup
        assert request.node.nodeid.endswith("@sweep_ray"), request.node.nodeid


# ------------------------------------------------------------------------------------------
# The cluster path: a Ray head started here, on loopback, with a token
# ------------------------------------------------------------------------------------------
@RAY_GROUP
def test_sweep_on_a_ray_cluster(env, tmp_path):
    """What README tells a cluster user to do, on one machine: ray start --head, then
    sweep.py --address. The head gets its own port, temp dir and token; stopping it stops
    only what it started (never ray stop, which stops every Ray on the machine). A failing
    run is retried, then reported, while the others finish."""
    port, temp = free_port(), tempfile.mkdtemp(prefix="rh", dir="/tmp")
    cluster_env = {**env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
                   "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # head on 127.0.0.1 only
    head = subprocess.Popen(  # ray start, run by this very Python
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
         "--port", str(port), "--node-ip-address", "127.0.0.1", "--temp-dir", temp,
         "--num-cpus", "2", "--include-dashboard", "false", "--disable-usage-stats"],
        env=cluster_env, start_new_session=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        def gcs_up():
            assert head.poll() is None, head.communicate()[0]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                return False
        wait_for(gcs_up, timeout=120)
        data = tmp_path / "shared"  # on a real cluster: a path every node mounts
        # Beside a Pendulum run, one that fails: retried once, then reported; the other finishes.
        code, out, err = run_sweep(cluster_env, "--env", "Pendulum-v1", EXPLODING, *SMALL,
                                   "--seeds", 0, "--retries", 1,
                                   "--address", f"127.0.0.1:{port}", "--data_dir", data)
        assert code == 1, err
        assert f"cluster at 127.0.0.1:{port}" in out
        run = data / "td3-Pendulum-v1" / "td3-Pendulum-v1_s0"
        assert [r[0] for r in progress(run)] == ["Epoch", *map(str, range(1, EPOCHS + 1))]
        with open(run / "config.json") as f:
            assert json.load(f)["logger_kwargs"]["output_dir"] == str(run)
        failed = [ln for ln in out.splitlines() if ln.startswith("failed:")]
        assert len(failed) == 1 and "LossQ became NaN or inf" in failed[0]
        exp = "td3-SweepExploding-v0"  # named by its id
        with open(data / exp / f"{exp}_s0" / "sweep.log") as f:
            assert f.read().count("=== sweep.py") == 2  # the first try and one retry
        assert "| Pendulum-v1 | td3 | 1/1 |" in out and f"| {EXPLODING} | td3 | 0/1 |" in out
        assert not glob.glob(str(data / ".sweep-*"))  # the shared-path check cleaned up
        assert_loopback_only(process_tree(head.pid))
    finally:
        tree = process_tree(head.pid)
        head.send_signal(signal.SIGTERM)  # ray start --block then stops what it started
        try:
            head.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.communicate()
        wait_for(lambda: not alive(tree), timeout=60)
        shutil.rmtree(temp, ignore_errors=True)


# ------------------------------------------------------------------------------------------
# Bad input: one line, exit 2, before Ray starts; and the summary's arithmetic
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    (["--env", "Pendulum-v1", "--seeds", 0, "--variants", "td4"], "invalid choice: 'td4'"),
    (["--env", "Pendulm-v1", "--seeds", 0], "unknown env id 'Pendulm-v1'"),
    (["--env", "Pendulum-v1"], "the following arguments are required: --seeds"),
    (["--env", "Pendulum-v1", "--seeds"], "expected at least one argument"),
    (["--env", "Pendulum-v1", "--seeds", 0, "--exp_name", "x"], "--exp_name is set by sweep.py"),
    (["--env", "Pendulum-v1", "--seeds", 0, "--seed", 1], "give the seeds with --seeds"),
    (["--env", "Pendulum-v1", "--seeds", 0, "--epochs", 0], "epochs must be a positive integer"),
    (["--env", "Pendulum-v1", "--seeds", 0, "--retries", -1], "--retries must be zero or more"),
    (["--env", "Pendulum-v1", "--seeds", 0, "--num_cpus", 0], "--num_cpus must be a positive"),
    (["--env", "Pendulum-v1", "--seeds", 0, "--gamma", 1.5], "gamma must be in (0, 1]"),
    # What td3.py checks once it has the env, for every env of the grid:
    (["--env", "Pendulum-v1", "CartPole-v1", "--seeds", 0], "CartPole-v1 has a Discrete action "
                                                            "space; TD3 needs continuous (Box)"),
    (["--env", "Pendulum-v1", "--seeds", 0, "--device", "cuda:7"], "device 'cuda:7' is not available"),
    (["--env", "Pendulum-v1", "--seeds", 0, "--variants", "td3", "no_smoothing",
      "--target_noise", 0], "variants td3 and no_smoothing are the same run"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, capsys, tmp_path, monkeypatch):
    import sweep
    # Ray may not even be imported: an import of it here fails (another test's library, as
    # Tianshou, may have imported it in this process already)
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(SystemExit) as e:
        errors.run_main(lambda: sweep.main([*map(str, args), "--data_dir", str(tmp_path)]))
    code = e.value.code
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert not os.listdir(tmp_path)


@RAY_GROUP
def test_run_directory_of_another_configuration_is_refused(grid, env):
    code, out, err = run_sweep(env, *GRID, "--gamma", 0.9, "--data_dir", grid["data"])
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "was run with gamma=0.98, not 0.9; rerun with the options it was started with" in err


def test_ray_imports_without_building_an_iri_parser():
    """requirements.txt pins jsonschema below 4.25, whose extras bring rfc3987-syntax: Ray
    imports jsonschema in each of its processes, and that package builds a parser on import
    (1.4 s a process, most of a local Ray's start)."""
    code = "import sys, ray; print('rfc3987_syntax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_summary_counts_threshold_and_steps_to_it(tmp_path):
    import sweep

    def run(seed, returns, state="finished"):
        d = tmp_path / f"s{seed}"
        d.mkdir()
        rows = [f"{i + 1}\t{r}\t{(i + 1) * 10_000}\t{i + 1.0}" for i, r in enumerate(returns)]
        (d / "progress.txt").write_text(
            "Epoch\tAverageTestEpRet\tTotalEnvInteracts\tTime\n" + "\n".join(rows) + "\n")
        return dict(env="BipedalWalker-v3", variant="td3", seed=seed, run_dir=str(d),
                    total=100_000, state=state)

    runs = [run(0, [-100, 310, 290]), run(1, [-90, 100, 280, 305]), run(2, [0, 250], "new")]
    assert sweep.summarize(runs)[2] == (
        "| BipedalWalker-v3 | td3 | 2/3 | 2/3 (>= 300) | 30,000 | 281.7 ± 23.2 "
        "| 288.3 ± 27.2 |")
    plot = sweep.plot_command(runs, "data")
    assert plot.startswith("python plot.py data --value TestEpRet --hline 300")
    line = sweep.progress_line(runs, 30_000, 100.0)
    assert "runs: 2 done, 0 failed, 1 to go | 90,000 env steps | 600 env steps/s" in line
    assert "~2m13s left" in line  # the unfinished run's 80,000 steps left, at 600 a second


def test_a_run_made_before_a_setting_existed_is_compared_with_its_default(tmp_path):
    # A run directory whose config.json has no "noise" (made before --noise existed) used the
    # default; a sweep asking for --noise pink there must refuse, not count it as its run.
    import sweep
    args = ["--env", "Pendulum-v1", "--seeds", "0", "--data_dir", str(tmp_path), *map(str, SMALL)]
    plan = sweep.plan_runs(*sweep.parse_args(args))
    run = plan[0]["run_dir"]
    os.makedirs(run)
    config = dict(sweep.planned(plan[0]["argv"]).config)  # what td3.py would write
    del config["noise"]
    with open(os.path.join(run, "config.json"), "w") as f:
        json.dump(config, f)
    assert sweep.plan_runs(*sweep.parse_args(args))[0]["state"] == "new"  # the same run
    with pytest.raises(errors.UserError, match=r"was run with noise='gaussian', not 'pink'"):
        sweep.plan_runs(*sweep.parse_args([*args, "--noise", "pink"]))


def test_a_rerun_with_more_epochs_trains_the_finished_runs_on(tmp_path):
    # A finished run of 2 epochs, swept again with --epochs 3, is not "finished": it resumes
    # with --epochs 3 and ends as a 3-epoch run does (python td3.py, same seed), not skipped.
    import sweep
    args = ["--env", "Pendulum-v1", "--seeds", "0", "--data_dir", str(tmp_path / "sweep"),
            *map(str, SMALL)]

    def plan(epochs):
        return sweep.plan_runs(*sweep.parse_args([*args, "--epochs", str(epochs)]))[0]

    run = plan(2)
    assert run["state"] == "new"
    assert sweep.run_one(run["run_dir"], run["argv"], run["epochs"], None, ROOT, None) == "finished"
    assert plan(2)["state"] == "finished"
    run = plan(3)
    assert run["state"] == "unfinished"  # "finished" when the sweep read the run's own epochs
    assert sweep.run_one(run["run_dir"], run["argv"], run["epochs"], None, ROOT, None) == "finished"
    assert plan(3)["state"] == "finished" and plan(1)["state"] == "finished"  # 1: nothing to do
    # What a resume may change comes from the sweep's command; the rest from config.json.
    assert sweep.resume_argv("R", [*run["argv"], "--device", "cpu", "--quiet"], 4) == [
        "--resume", "R", "--epochs", "4", "--threads", "1", "--device", "cpu", "--quiet"]
    assert sweep.resume_argv("R", ["--device=cpu", "--gamma", "0.9"], 4)[-1] == "--device=cpu"
    from conftest import run_cli  # (as in the test of the grid)
    code, _, err = run_cli(*TINY, "--epochs", 3, "--seed", 0, "--data_dir", tmp_path / "hand",
                           "--threads", 1, "--quiet")
    assert code == 0, err
    rows = [progress(tmp_path / d / "td3-Pendulum-v1" / "td3-Pendulum-v1_s0") for d in ("sweep", "hand")]
    assert [r[0] for r in rows[0]] == ["Epoch", "1", "2", "3"]
    assert rows[0] == rows[1]  # (progress(): every column but Time)


def test_a_sweep_run_stopped_before_its_first_checkpoint_starts_again_keeping_its_files(tmp_path):
    """A run of a sweep killed during epoch 2 with --save_freq 2 (config.json and one row, no
    ckpt.pt): the sweep's task resumes it, td3.py starts it again, and what it wrote is kept."""
    import sweep
    args = ["--env", "Pendulum-v1", "--seeds", "0", "--data_dir", str(tmp_path / "s"),
            *map(str, SMALL), "--save_freq", "2"]
    run = sweep.plan_runs(*sweep.parse_args(args))[0]
    from conftest import run_cli  # (as in the test of the grid)
    code, _, err = run_cli(*run["argv"], "--quiet")  # what the sweep's task runs, in-process
    assert code == 0, err
    whole = progress(run["run_dir"])
    os.remove(os.path.join(run["run_dir"], "ckpt.pt"))
    table = os.path.join(run["run_dir"], "progress.txt")
    with open(table) as f:
        first = "".join(f.readlines()[:2])
    with open(table, "w") as f:
        f.write(first)
    assert sweep.plan_runs(*sweep.parse_args(args))[0]["state"] == "new"
    assert sweep.run_one(run["run_dir"], run["argv"], run["epochs"], None, ROOT, None) == "finished"
    assert progress(run["run_dir"]) == whole
    with open(os.path.join(run["run_dir"], "progress.before-restart.txt")) as f:
        assert f.read() == first
