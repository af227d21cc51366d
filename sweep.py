"""Many TD3 runs at once: every combination of envs x seeds x variants, on Ray.

    python sweep.py --env BipedalWalker-v3 --seeds 0 1 2 3 4 \\
        --variants td3 no_twin no_delay no_smoothing ddpg --epochs 40 --no_stop
    python sweep.py ... --address HEAD_IP:6379 --data_dir /shared/data   # on a Ray cluster

Each run is ``python td3.py --env ENV --seed S [ablation flags] [your options] --threads 1``,
started as a subprocess, so it writes the ordinary run directory
``<data_dir>/<exp_name>/<exp_name>_s<seed>/`` with the config.json that command writes, and
``plot.py``, ``td3.py --resume`` and ``watch.py`` work on it unchanged. The run's stdout and
stderr go to ``sweep.log`` in its run directory, one block per attempt.

Ray does the scheduling. By default sweep.py starts a private Ray instance on this machine,
on 127.0.0.1 only, with one CPU and one torch thread per run, so a 2-core machine trains two
runs at a time; ``--address`` sends the same sweep to a running Ray cluster. Each run is one
Ray task with retries. A task looks at its run directory when it starts and trains a new
run or resumes an unfinished one from its checkpoint (td3.py's exact resume), so a retry
after a crash carries on where the run stopped. The run directories are the record of what
finished: the same command run again after Ctrl-C, a kill or a reboot skips the finished
runs, resumes the unfinished ones and starts the rest.

Exit status: 0 when every run finished, 1 when a run did not (it failed after its retries),
2 for bad input (reported before Ray starts), 130 when interrupted.
"""
import argparse
import contextlib
import ctypes
import fcntl
import ipaddress
import json
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, fields

import gymnasium as gym
import numpy as np

import td3
from logger import read_progress
from notebooks.port_mistakes import RUNS as MISTAKES

HERE = os.path.dirname(os.path.abspath(__file__))

# The ablations of td3.py, by the names README and the plots use; ddpg is all three off.
VARIANTS = {
    "td3": [],
    "no_twin": ["--no_twin"],
    "no_delay": ["--no_delay"],
    "no_smoothing": ["--no_smoothing"],
    "ddpg": ["--no_twin", "--no_delay", "--no_smoothing"],
}
# The classic mistakes of a port (notebooks/port_mistakes.py), one per run, each under its
# own name: td3-<env>-<mistake>, so that none reads as TD3 in plots and summaries.
VARIANTS.update(MISTAKES)


def variant_options(variant, env_id):
    if variant in MISTAKES:
        return [*MISTAKES[variant], "--exp_name", f"td3-{env_id}-{variant}"]
    return VARIANTS[variant]


# td3.py options that sweep.py sets for each run itself, and what to do instead.
ABLATION_HINT = "pick ablations with --variants " + " ".join(VARIANTS)
OWN_OPTIONS = {
    "--seed": "give the seeds with --seeds", "-s": "give the seeds with --seeds",
    "--no_twin": ABLATION_HINT, "--no_delay": ABLATION_HINT, "--no_smoothing": ABLATION_HINT,
    "--exp_name": "each env and variant gets td3.py's default name, so that no two share one",
    "--threads": "each run gets one torch thread (and one CPU from Ray)",
    "--resume": "run the same sweep command again to resume its runs",
    "--watch": "watch a run with python watch.py RUN_DIR",
}

LOG = "sweep.log"  # in each run directory: td3.py's output, and the lock of the run

START_RUN = "--start_run"  # internal: how a task starts a run (see start_run)


class UsageError(Exception):
    """Bad input: printed as one line, exit 2, before Ray starts."""


class RunFailed(Exception):
    """td3.py ended with an error; Ray retries the task, which resumes from the checkpoint."""


# ------------------------------------------------------------------------------------------
# The plan: one entry per run, all checked before Ray starts
# ------------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Train every combination of envs x seeds x variants with td3.py, on Ray.",
        epilog="Every other option goes to each run's td3.py (python td3.py --help lists "
               "them), e.g. --epochs 40 --no_stop.", allow_abbrev=False)
    p.error = lambda msg: (print(f"error: {msg}", file=sys.stderr), sys.exit(2))  # one line
    p.add_argument("--env", nargs="+", required=True, help="Gymnasium env id(s)")
    p.add_argument("--seeds", nargs="+", type=int, required=True, help="e.g. 0 1 2 3 4")
    p.add_argument("--variants", nargs="+", default=["td3"], choices=list(VARIANTS),
                   help="td3 (the default), one trick off (no_twin, no_delay, no_smoothing), "
                        "all three off (ddpg), or one mistake of a port ("
                        + ", ".join(MISTAKES) + ")")
    p.add_argument("--data_dir", default="data", help="where the run directories go")
    p.add_argument("--address", help="a running Ray cluster, HOST:PORT or auto (default: a "
                                     "private Ray instance on this machine)")
    p.add_argument("--num_cpus", type=int, help="without --address: runs at once (default: "
                                                "the cores Ray finds)")
    p.add_argument("--retries", type=int, default=2, help="retries of a failed run (default 2)")
    p.add_argument("--report_every", type=float, default=10.0, help="seconds per progress line")
    args, td3_options = p.parse_known_args(argv)
    for opt in td3_options:
        name = opt.split("=", 1)[0]
        if name in OWN_OPTIONS:
            raise UsageError(f"{name} is set by sweep.py for each run; {OWN_OPTIONS[name]}")
    if args.num_cpus is not None and args.num_cpus < 1:
        raise UsageError(f"--num_cpus must be a positive integer, got {args.num_cpus}")
    if args.report_every <= 0:
        raise UsageError(f"--report_every must be positive, got {args.report_every}")
    if args.retries < 0:
        raise UsageError(f"--retries must be zero or more, got {args.retries}")
    if args.address and args.num_cpus:
        raise UsageError("--num_cpus is for the private Ray instance; a cluster has its own")
    # On a cluster every node must find the runs at the same path.
    args.data_dir = os.path.abspath(args.data_dir) if args.address else args.data_dir
    return args, td3_options


def plan_runs(args, td3_options):
    """Every run of the sweep, seed by seed (a sweep stopped early then has whole seeds),
    each with its td3.py arguments, run directory and status from td3.run_status."""
    envs = {}
    for env_id in dict.fromkeys(args.env):  # in order, each once
        try:
            envs[env_id] = td3.make_env(env_id)()  # an unknown id is a UserError
        except td3.UserError as e:
            raise UsageError(str(e)) from None
    runs, made_by = [], {}
    for seed in dict.fromkeys(args.seeds):
        for env_id, env in envs.items():
            for variant in dict.fromkeys(args.variants):
                # The variant's flags last: they win over an option that sets the same field.
                argv = ["--env", env_id, "--seed", str(seed), *td3_options,
                        *variant_options(variant, env_id),
                        "--data_dir", args.data_dir, "--threads", "1"]
                try:
                    _, kwargs, run_dir = td3.parse_cli(argv)
                    config = run_config(kwargs, env)
                    check_run_dir(run_dir, config)
                    state = td3.run_status(run_dir)
                except td3.UserError as e:
                    raise UsageError(str(e)) from None
                if run_dir in made_by:  # e.g. --target_noise 0 makes td3 the no_smoothing run
                    raise UsageError(f"variants {made_by[run_dir]} and {variant} are the same "
                                     f"run ({run_dir}): an option sets what a variant switches")
                made_by[run_dir] = variant
                runs.append(dict(env=env_id, variant=variant, seed=seed, argv=argv,
                                 run_dir=run_dir, state=state,
                                 total=config["epochs"] * config["steps_per_epoch"]))
    for env in envs.values():
        env.close()
    return runs


def run_config(kwargs, env):
    """The part of config.json that says which run it is: every hyperparameter as td3()
    resolves it for this env, the networks, the swap points. (parse_cli gives only the
    options given, with "auto" values unresolved and swap points as functions.)"""
    given = {f.name: kwargs[f.name] for f in fields(td3.Hyperparameters) if f.name in kwargs}
    hp = td3.resolve_env_defaults(td3.Hyperparameters(**given), env)
    config = dict(asdict(hp), env_id=env.spec.id, ac_kwargs=kwargs["ac_kwargs"],
                  **{name: td3.name_of(kwargs[name]) for name in td3.SWAP_POINTS})
    del config["device"]  # it may change on a resume (td3.MAY_CHANGE_ON_RESUME)
    return config


def check_run_dir(run_dir, expected):
    """A run directory that exists must hold this very run (it will be resumed), not one
    of another configuration, which a rerun with other options would otherwise mix in."""
    path = os.path.join(run_dir, "config.json")
    if not os.path.exists(path):
        if any(os.path.exists(os.path.join(run_dir, f)) for f in ("progress.txt", "ckpt.pt")):
            raise UsageError(f"{run_dir} holds a run without a config.json; move it away")
        return
    try:
        with open(path) as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError(f"{path} does not parse ({e})") from None
    for key, value in json.loads(json.dumps(expected)).items():
        if key in config and config[key] != value:
            raise UsageError(f"{run_dir} belongs to a different configuration ({key} is "
                             f"{config[key]!r} there, {value!r} here); rerun with the options "
                             f"it was started with, or pick another --data_dir")


# ------------------------------------------------------------------------------------------
# One run, as a Ray task
# ------------------------------------------------------------------------------------------
def run_one(run_dir, argv, cwd, code_dir, marker):
    """Train or resume one run, in a Ray worker. Returns "finished" or "interrupted";
    raises RunFailed, which Ray retries, when td3.py fails. The worker imports nothing of
    the project (torch would cost each worker some 200 MB beside its run): the child it
    starts, start_run below, looks at the run directory and becomes td3.py."""
    if marker and not os.path.exists(marker):
        raise RunFailed(f"{os.path.dirname(marker)} is not visible on node "
                        f"{socket.gethostname()}; a cluster sweep needs a --data_dir that "
                        f"every node mounts at the same path")
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, LOG), "a") as log:
        lock(log, run_dir)
        start = log.tell()
        # One torch thread per run: runs side by side fill the cores, not threads. The
        # worker's RAY_ variables (its auth token among them) are no business of td3.py.
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env["OMP_NUM_THREADS"] = "1"
        sweep_py = os.path.join(code_dir or os.getcwd(), "sweep.py")
        p = subprocess.Popen([sys.executable, sweep_py, START_RUN, str(os.getpid()), run_dir,
                              *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                             stderr=subprocess.STDOUT)
        try:
            while p.poll() is None:  # not p.wait(): ray.cancel() interrupts Python code only
                time.sleep(0.5)
        except KeyboardInterrupt:  # ray.cancel() after Ctrl-C: let td3.py write a checkpoint
            p.send_signal(signal.SIGINT)
            try:
                p.wait(timeout=300)
            except subprocess.TimeoutExpired:
                p.kill()
            raise
    if p.returncode == 0:
        return "finished"
    if p.returncode in (130, -signal.SIGINT):
        return "interrupted"
    why = (f"killed by {signal.Signals(-p.returncode).name}" if p.returncode < 0
           else f"exit {p.returncode}")
    raise RunFailed(f"{why}: {last_line(os.path.join(run_dir, LOG), start)}")


def start_run(worker_pid, run_dir, argv):
    """The child of run_one: train the run (td3.py's argv) or resume it from its checkpoint,
    by becoming ``python td3.py`` (exec: the same process, so the same config.json)."""
    # Stop with the worker: if it dies, Linux sends SIGINT, which td3.py takes as Ctrl-C
    # (checkpoint, exit 130). Ray kills a dead worker's children itself while its raylet
    # lives; this covers the rest, so that no run outlives its sweep.
    with contextlib.suppress(AttributeError):  # prctl is Linux's
        ctypes.CDLL(None).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG
    if os.getppid() != worker_pid:
        sys.exit(130)  # the worker died before that
    # Ray workers block SIGINT, and children inherit that; SIGINT is how run_one stops
    # td3.py when the sweep is interrupted.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    status = td3.run_status(run_dir)
    if status == "finished":
        sys.exit(0)
    if status == "new":
        # A start killed between its first table row and its first checkpoint leaves files
        # that make td3.py refuse the directory; nothing in them can be resumed.
        for name in ("progress.txt", "best.pt"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(run_dir, name))
    else:
        argv = ["--resume", run_dir, "--threads", "1"]
    print(f"=== sweep.py on {socket.gethostname()}, {time.strftime('%Y-%m-%d %H:%M:%S')}: "
          f"{'start' if status == 'new' else 'resume'}", flush=True)
    os.execv(sys.executable, [sys.executable, td3.__file__, *argv])


def lock(log, run_dir, wait=120):
    """Hold the log's lock for as long as this task or its td3.py lives (td3.py inherits the
    file as its stdout): a td3.py of a killed sweep may still be writing its checkpoint."""
    deadline = time.time() + wait
    while True:
        try:
            fcntl.flock(log, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.time() > deadline:
                raise RunFailed(f"{run_dir} is in use by another process (another sweep.py?)")
            time.sleep(0.5)


def is_running(run_dir):
    """Whether a task or its td3.py holds the run's lock."""
    try:
        with open(os.path.join(run_dir, LOG)) as f:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
    except FileNotFoundError:
        return False
    except BlockingIOError:
        return True


def last_line(path, start=0):
    with open(path, errors="replace") as f:
        f.seek(start)
        lines = [ln.strip() for ln in f.read().splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


# ------------------------------------------------------------------------------------------
# Ray: a private instance on 127.0.0.1, or a cluster
# ------------------------------------------------------------------------------------------
def start_ray(args):
    """Start or join Ray; returns where the tasks find the code and run td3.py, and the
    marker file by which each task checks that it sees the data directory."""
    # Token authentication stays on, as Ray has it by default; a driver that is given an
    # address must ask for it, or the cluster answers "Authentication token is missing".
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing leaves the machine
    quiet = dict(logging_level="warning", log_to_driver=False)
    if args.address is None:
        # Ray advertises the network interface's address, also when told 127.0.0.1; this
        # switch (Ray's single-machine mode of macOS and Windows) keeps every port of the
        # private instance on the loopback address.
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        if not (os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")):
            # A private instance gets a token of its own, in its processes' environment,
            # rather than a new ~/.ray/auth_token.
            os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
        import ray  # after the environment: Ray reads it once, when imported
        ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False,
                 _node_ip_address="127.0.0.1", object_store_memory=100 * 2**20,  # a few strings
                 **quiet)
        return dict(cwd=os.getcwd(), code_dir=HERE, marker=None)
    if is_loopback(args.address.rsplit(":", 1)[0]):  # a cluster on this machine only
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray
    # Ray ships this code to the nodes with each task (the code that runs is the code you
    # have), and the tasks write to data_dir, which must be a path every node shares.
    excludes = [".git/", "data/", "results/", "notebooks/"]
    inside = os.path.relpath(args.data_dir, HERE)
    if not inside.startswith(".."):
        excludes.append(inside + "/")
    try:
        ray.init(address=args.address, runtime_env=dict(working_dir=HERE, excludes=excludes),
                 **quiet)
    except (ConnectionError, RuntimeError, ray.exceptions.RayError) as e:
        raise UsageError(f"cannot join the Ray cluster at {args.address}: "
                         f"{str(e).strip().splitlines()[0]}") from None
    os.makedirs(args.data_dir, exist_ok=True)
    marker = os.path.join(args.data_dir, f".sweep-{uuid.uuid4().hex[:12]}")
    open(marker, "w").close()
    # None: the task's own working directory, where Ray unpacked the code
    return dict(cwd=None, code_dir=None, marker=marker)


def is_loopback(host):
    try:
        return host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run_sweep(args, runs):
    """Run the unfinished runs as Ray tasks and report until they end; each run's state
    becomes finished, failed or interrupted. Returns 130 when interrupted, else None."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a kill stops as Ctrl-C does
    where, pending = dict(marker=None), {}
    try:
        t0 = time.time()
        where = start_ray(args)
        import ray
        print(f"Ray {ray.__version__} started in {time.time() - t0:.1f} s: "
              f"{ray.cluster_resources().get('CPU', 0):.0f} CPUs, "
              f"{'cluster at ' + args.address if args.address else 'this machine, 127.0.0.1 only'}",
              flush=True)
        task = ray.remote(num_cpus=1, max_retries=args.retries,
                          retry_exceptions=[RunFailed])(run_one)
        pending = {task.remote(r["run_dir"], r["argv"], **where): r
                   for r in runs if r["state"] != "finished"}
        last = 0.0
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            for ref in ready:
                collect(pending.pop(ref), ref)
            if pending and time.time() - last >= args.report_every:
                print(progress_line(runs, pending.values()), flush=True)
                last = time.time()
        return None
    except KeyboardInterrupt:
        print("interrupted: stopping the runs (each writes a checkpoint); run the same "
              "command again to continue", file=sys.stderr, flush=True)
        if pending:
            import ray
            for ref in pending:
                ray.cancel(ref)  # the task passes SIGINT on to its td3.py
            ray.wait(list(pending), num_returns=len(pending), timeout=300)
        for r in pending.values():
            r["state"] = "finished" if td3.run_status(r["run_dir"]) == "finished" else "interrupted"
        return 130
    finally:
        if where["marker"] and os.path.exists(where["marker"]):
            os.remove(where["marker"])
        if "ray" in sys.modules:
            sys.modules["ray"].shutdown()


def collect(run, ref):
    """Record how a task ended and say so in a line."""
    import ray
    name = os.path.basename(run["run_dir"])
    try:
        run["state"] = ray.get(ref)
        print(f"{run['state']}: {name}", flush=True)
        return
    except ray.exceptions.RayTaskError as e:  # td3.py failed, also on its last retry
        error = str(e.cause if isinstance(e.cause, RunFailed) else e).strip().splitlines()[-1]
    except ray.exceptions.RayError as e:  # its worker or node died, also on the last retry
        error = f"{type(e).__name__}: {str(e).strip().splitlines()[0]}"
    run["state"], run["error"] = "failed", error
    print(f"failed: {name}: {error} (its output: {os.path.join(run['run_dir'], LOG)})",
          flush=True)


# ------------------------------------------------------------------------------------------
# What a person reads: progress lines and the summary
# ------------------------------------------------------------------------------------------
def read_run(run_dir):
    """``{column: float array}`` of a run's progress.txt ({} when there is none)."""
    try:
        header, rows = read_progress(os.path.join(run_dir, "progress.txt"))
        data = np.array(rows, dtype=float).reshape(len(rows), len(header))
    except (OSError, ValueError):
        return {}
    return {k: data[:, i] for i, k in enumerate(header)} if len(rows) else {}


def progress_line(runs, pending):
    """Runs done, running, failed and waiting; env steps so far, the running runs' env
    steps/s (each one's last epoch) and the time the steps left take at that rate."""
    pending = [id(r) for r in pending]
    done = sum(r["state"] == "finished" for r in runs)
    failed = sum(r["state"] == "failed" for r in runs)
    running = steps = left = rate = 0
    for r in runs:
        data = read_run(r["run_dir"])
        t = data.get("TotalEnvInteracts", [0])
        steps += t[-1]
        if id(r) not in pending:
            continue
        left += r["total"] - t[-1]
        if is_running(r["run_dir"]):
            running += 1
            if data:
                t_prev, time_prev = (t[-2], data["Time"][-2]) if len(t) > 1 else (0, 0)
                rate += (t[-1] - t_prev) / max(data["Time"][-1] - time_prev, 1e-9)
    speed = (f"{rate:,.0f} env steps/s | ~{td3.format_seconds(left / rate)} left" if rate
             else "env steps/s and time left: after the first epochs")
    return (f"[{time.strftime('%H:%M:%S')}] runs: {done} done, {running} running, {failed} "
            f"failed, {len(pending) - running} waiting | {steps:,.0f} env steps | {speed}")


def reward_threshold(env_id):
    try:
        return gym.spec(env_id.split(":")[-1]).reward_threshold  # "module:Env-v0" ids too
    except gym.error.Error:
        return None


def summarize(runs):
    """A table, a row per env and variant: seeds finished, seeds that reached the env's
    reward threshold, the median env steps to it, final and best test return over seeds."""
    groups = {}
    for r in runs:
        groups.setdefault((r["env"], r["variant"]), []).append(r)
    lines = ["| env | variant | seeds finished | reached threshold | median env steps to it "
             "| final test return | best test return |", "|---|---|---|---|---|---|---|"]
    for (env, variant), members in groups.items():
        threshold = reward_threshold(env)
        finals, bests, to_threshold = [], [], []
        for r in members:
            data = read_run(r["run_dir"])
            if not data:
                continue
            ret = data["AverageTestEpRet"]
            finals.append(ret[-1])
            bests.append(ret.max())
            if threshold is not None and (ret >= threshold).any():
                to_threshold.append(data["TotalEnvInteracts"][np.argmax(ret >= threshold)])
        n = len(members)
        reached = (f"{len(to_threshold)}/{n} (>= {threshold:g})" if threshold is not None
                   else "no threshold")
        median = f"{np.median(to_threshold):,.0f}" if to_threshold else "-"
        lines.append(f"| {env} | {variant} | {sum(r['state'] == 'finished' for r in members)}/"
                     f"{n} | {reached} | {median} | {mean_std(finals)} | {mean_std(bests)} |")
    return lines


def mean_std(x):
    if len(x) < 2:
        return f"{x[0]:.1f}" if x else "-"
    return f"{np.mean(x):.1f} ± {np.std(x):.1f}"


def plot_commands(runs, data_dir):
    """For each env, the plot.py command that draws its variants, mean ± std over seeds."""
    out = []
    for env in dict.fromkeys(r["env"] for r in runs):
        variants = {}  # exp_name directory -> variant, for those with a table row
        for r in runs:
            if r["env"] == env and read_run(r["run_dir"]):
                variants.setdefault(os.path.dirname(r["run_dir"]), r["variant"])
        if not variants:
            continue
        threshold = reward_threshold(env)
        seeds = sorted({r["seed"] for r in runs if r["env"] == env})
        title = (f"{env}, {len(seeds)} seeds (mean ± std)" if len(seeds) > 1
                 else f"{env}, seed {seeds[0]}")
        png = os.path.join(data_dir, f"sweep_{env.replace(':', '_').replace('/', '_')}.png")
        hline = ["--hline", f"{threshold:g}"] if threshold is not None else []
        cmd = ["python", os.path.relpath(os.path.join(HERE, "plot.py")), *variants,
               "--value", "TestEpRet", *hline, "--legend", *variants.values(),
               "--title", title, "--out", png]
        out.append(" ".join(shlex.quote(c) for c in cmd))
    return out


def main(argv=None):
    args, td3_options = parse_args(argv)
    runs = plan_runs(args, td3_options)
    todo = [r for r in runs if r["state"] != "finished"]
    sizes = [(len(set(args.seeds)), "seed"), (len(set(args.env)), "env"),
             (len(set(args.variants)), "variant")]
    grid = " x ".join(f"{n} {name}{'s' if n > 1 else ''}" for n, name in sizes)
    print(f"sweep: {len(runs)} run{'s' if len(runs) > 1 else ''} ({grid}) in {args.data_dir}: "
          f"{len(runs) - len(todo)} finished, "
          f"{sum(r['state'] == 'unfinished' for r in todo)} to resume, "
          f"{sum(r['state'] == 'new' for r in todo)} to start", flush=True)
    code = run_sweep(args, runs) if todo else None
    print("\n".join(["", *summarize(runs), ""]))
    for r in runs:
        if r["state"] == "failed":
            print(f"failed: {r['run_dir']}: {r['error']}")
    print("Plot the runs with:\n" + "\n".join(plot_commands(runs, args.data_dir)), flush=True)
    return code or (1 if any(r["state"] != "finished" for r in runs) else 0)


def cli(argv=None):
    """main() with bad input as one line on stderr and exit status 2."""
    try:
        return main(argv)
    except (UsageError, td3.UserError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before Ray started or after it stopped: nothing to stop
        return 130


if __name__ == "__main__":
    if sys.argv[1:2] == [START_RUN]:
        start_run(int(sys.argv[2]), sys.argv[3], sys.argv[4:])
    sys.exit(cli())
