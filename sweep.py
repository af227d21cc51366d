"""Many TD3 runs at once: every combination of envs x seeds x variants, on Ray.

    python sweep.py --env BipedalWalker-v3 --seeds 0 1 2 --variants td3 no_twin ddpg --epochs 40
    python sweep.py ... --address HEAD_IP:6379 --data_dir /mnt/shared/data   # a Ray cluster

A variant is an ablation or a port's mistake (notebooks/port_mistakes.py, run as
``td3-<env>-<mistake>``). Every run is checked as td3.py checks it before Ray starts, then
is a Ray task with one CPU that runs ``td3.py ... --threads 1`` into ``sweep.log`` in its
run directory, resuming from the checkpoint if there is one: retries resume, and the same
command run again after Ctrl-C or a kill skips finished runs and resumes the others (with
a larger --epochs, finished runs train on to it).
Exit status: 0 all finished, 1 a run failed after its retries, 2 bad input, 130 interrupted.
"""
import contextlib
import fcntl
import os
import secrets
import shlex
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import torch

import core
import td3
import variants
from plot import read_table
from run.command import command_line
from run import directory
from run.directory import RunDirInUse, check_same_run, hold_run_dir, read_config
from run.door import Run
from run.envs import make_env
from run.errors import ArgumentParser, UserError, run_main
from run.judging import NOT_SOLVED, stopped_early
from run.progress import format_seconds

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = {name: v.options for name, v in variants.runnable().items()}  # variants.py's table
# td3.py options that sweep.py sets for each run itself, and what to do instead.
OWN_OPTIONS = {"--seed": "give the seeds with --seeds", "-s": "give the seeds with --seeds",
               **dict.fromkeys((o for v in variants.TABLE.values() if v.kind == "ablation"
                                for o in v.options), "pick them with --variants"),
               "--exp_name": "each run is named by its env and variant",
               "--threads": "each run gets one torch thread (and one CPU from Ray)",
               "--resume": "run the same sweep command again to resume its runs"}
LOG = "sweep.log"  # in each run directory: td3.py's output, locked while a td3.py runs there
# How a task starts td3.py: the child stops with the task's worker (Linux sends it SIGINT,
# which td3.py takes as Ctrl-C: checkpoint, exit) and takes SIGINT, which Ray workers block.
CHILD = ("import ctypes, os, signal, sys; "
         "getattr(ctypes.CDLL(None), 'prctl', lambda *a: 0)(1, signal.SIGINT); "
         "signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT]); "
         "signal.signal(signal.SIGINT, signal.SIG_DFL); "
         "os.getppid() == int(sys.argv[1]) or sys.exit(130); "
         "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])")


def parse_args(argv=None):
    p = ArgumentParser(
        description="Train every combination of envs x seeds x variants with td3.py, on Ray.",
        epilog="Every other option goes to each run's td3.py (python td3.py --help lists "
               "them), e.g. --epochs 40 --no_stop.", allow_abbrev=False)
    p.add_argument("--env", nargs="+", required=True, help="Gymnasium env id(s)")
    p.add_argument("--seeds", nargs="+", type=int, required=True, help="e.g. 0 1 2 3 4")
    p.add_argument("--variants", nargs="+", default=["td3"], choices=list(VARIANTS),
                   help="td3, one trick off (no_twin, no_delay, no_smoothing), all off "
                        "(ddpg), or a port's mistake: " + ", ".join(
                        n for n, v in variants.runnable().items() if v.kind in ("mistake", "setting")))
    p.add_argument("--data_dir", default=directory.DATA_DIR, help="where the run directories go")
    p.add_argument("--address", help="a running Ray cluster, HOST:PORT or auto (default: a "
                                     "private Ray instance on this machine)")
    p.add_argument("--num_cpus", type=int, help="without --address: runs at once (default: "
                                                "the cores Ray finds)")
    p.add_argument("--retries", type=int, default=2, help="retries of a failed run (default 2)")
    p.add_argument("--report_every", type=float, default=30.0, help="seconds per progress line")
    args, td3_options = p.parse_known_args(argv)
    for opt in (o.split("=", 1)[0] for o in td3_options):
        if opt in OWN_OPTIONS:
            raise UserError(f"{opt} is set by sweep.py for each run; {OWN_OPTIONS[opt]}")
    for name, ok, says in [("num_cpus", args.num_cpus is None or args.num_cpus >= 1, "a positive integer"),
                           ("retries", args.retries >= 0, "zero or more"),
                           ("report_every", args.report_every > 0, "positive")]:
        if not ok:
            raise UserError(f"--{name} must be {says}, got {getattr(args, name)}")
    if args.address and args.num_cpus:
        raise UserError("--num_cpus is for the private Ray instance; a cluster has its own")
    # On a cluster every node must find the runs at the same path.
    args.data_dir = os.path.abspath(args.data_dir) if args.address else args.data_dir
    return args, td3_options


def plan_runs(args, td3_options):
    """Every run, seed by seed (a sweep stopped early then has whole seeds), checked as
    td3.py checks it before training, with its arguments, directory and status."""
    for env_id in dict.fromkeys(args.env):
        make_env(env_id)  # an unknown id: one line before any run is planned
    plan, made_by = [], {}
    for seed in dict.fromkeys(args.seeds):
        for env_id in dict.fromkeys(args.env):
            for variant in dict.fromkeys(args.variants):
                kind = variants.TABLE[variant].kind
                name = ["--exp_name", f"td3-{env_id}-{variant}"] if kind in ("mistake", "setting") else []
                argv = ["--env", env_id, "--seed", str(seed), *td3_options, *VARIANTS[variant],
                        *name, "--data_dir", args.data_dir, "--threads", "1"]
                run = planned(argv)  # checked as td3() checks it; nothing written
                config, run_dir = run.config, run.output_dir
                if run_dir in made_by:  # e.g. --target_noise 0 makes td3 the no_smoothing run
                    raise UserError(f"variants {made_by[run_dir]} and {variant} are the "
                                    f"same run ({run_dir}): an option sets what a variant switches")
                made_by[run_dir] = variant
                plan.append(dict(env=env_id, variant=variant, seed=seed, argv=argv,
                                 run_dir=run_dir, state=check_run_dir(run),
                                 epochs=config["epochs"],
                                 total=config["epochs"] * config["steps_per_epoch"]))
                for env in run.envs:
                    env.close()
    return plan


def planned(argv):
    """The Run td3.py's command line ``argv`` would train (td3() with its arguments): its
    settings checked and resolved, its config and directory; nothing is written."""
    settings = command_line(argv, td3.Hyperparameters, td3.SWAP_POINTS)
    swaps = {k: settings.pop(k, fn) for k, fn in td3.SWAP_POINTS.items()}
    env_fn, ac_kwargs, logger_kwargs = (settings.pop(k) for k in ("env_fn", "ac_kwargs", "logger_kwargs"))
    return Run(env_fn, td3.Hyperparameters, settings, core.MLPActorCritic, ac_kwargs, swaps,
               logger_kwargs=logger_kwargs, resume=settings.pop("resume", False))


def check_run_dir(run):
    """The run's status (run_status) at the sweep's --epochs, refusing a directory that
    holds another configuration's run (a rerun with other options would mix the two) or a
    run without a config.json. A run made with fewer epochs is unfinished: it trains on."""
    run_dir, config = run.output_dir, run.config
    if os.path.exists(os.path.join(run_dir, "config.json")):
        check_same_run(run_dir, config, "rerun with the options it was started with, "
                                        "or pick another --data_dir", run.settings_classes)
    elif any(os.path.exists(os.path.join(run_dir, f)) for f in ("progress.txt", "ckpt.pt")):
        raise UserError(f"{run_dir} holds a run without a config.json; move it away")
    return run_status(run_dir, config["epochs"])


def run_status(run_dir, epochs=None):
    """"new" (no checkpoint yet), "unfinished" (steps left) or "finished" (its last epoch,
    or ``epochs`` when given, reached, or stopped early), from the checkpoint and
    config.json; the sweep asks this with its own --epochs."""
    path = os.path.join(run_dir, "ckpt.pt")
    if not os.path.exists(path):
        return "new"
    config = read_config(run_dir)
    try:  # mmap: the counters are read without loading the replay buffer
        ckpt = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:
        return "unfinished"  # a broken checkpoint: --resume will say what is wrong with it
    done = ckpt["t"] >= config["steps_per_epoch"] * (epochs or config["epochs"])
    solved = ckpt.get("solved", NOT_SOLVED)
    stopped = stopped_early(config, ckpt["epochs_at_goal"], solved)
    return "finished" if done or stopped else "unfinished"


class RunFailed(Exception):
    """td3.py ended with an error; Ray retries the task, which resumes from the checkpoint."""


def run_one(run_dir, argv, epochs, cwd, code_dir, marker):
    """Train or resume one run in a Ray worker: "finished" or "interrupted", "skipped: ..."
    when another process holds its directory, or RunFailed.
    The worker imports nothing of the project (torch would cost each worker ~200 MB)."""
    if marker and not os.path.exists(marker):
        raise RunFailed(f"{os.path.dirname(marker)} is not visible on node "
                        f"{os.uname().nodename}; a cluster sweep needs a --data_dir that "
                        f"every node mounts at the same path")
    path = os.path.join(cwd or "", run_dir)  # run_dir is relative to the driver's cwd
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, LOG), "a") as log:
        for _ in range(240):  # 2 min: a td3.py of a killed sweep may be writing its checkpoint
            with contextlib.suppress(BlockingIOError):  # td3.py inherits the lock: it is
                fcntl.flock(log, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held as long as it lives
                break
            time.sleep(0.5)
        else:
            raise RunFailed(f"{run_dir} is in use by another process")
        try:  # a td3.py started by hand, or by another sweep, holds it: left to that one
            hold_run_dir(path).close()
        except RunDirInUse as e:
            return f"skipped: in use by {e.holder}"
        # A run that wrote its config.json is resumed: td3.py goes on from its checkpoint,
        # or, if it cannot have written one yet, starts it again, keeping what it wrote (a
        # lost checkpoint is refused, and the run is reported failed with that line).
        resume = os.path.exists(os.path.join(path, "config.json"))

        log.write(f"=== sweep.py on {os.uname().nodename}, {time.strftime('%Y-%m-%d %H:%M:%S')}:"
                  f" {'resume' if resume else 'start'}\n")
        log.flush()
        td3_py = os.path.join(code_dir or os.getcwd(), "td3.py")
        argv = resume_argv(run_dir, argv, epochs) if resume else argv
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        p = subprocess.Popen([sys.executable, "-c", CHILD, str(os.getpid()), td3_py, *argv],
                             cwd=cwd, env=dict(env, OMP_NUM_THREADS="1"), stdin=subprocess.DEVNULL,
                             stdout=log, stderr=subprocess.STDOUT)
        try:
            while p.poll() is None:  # not p.wait(): ray.cancel() interrupts Python code only
                time.sleep(0.5)
        except KeyboardInterrupt:  # ray.cancel() after Ctrl-C: td3.py writes a checkpoint
            p.send_signal(signal.SIGINT)
            p.wait()
            raise
    if p.returncode in (0, 130, -signal.SIGINT):
        return "finished" if p.returncode == 0 else "interrupted"
    with open(os.path.join(path, LOG), errors="replace") as f:
        last = ([ln.strip() for ln in f if ln.strip()] or ["no output"])[-1]
    raise RunFailed(f"exit {p.returncode}: {last}")


def resume_argv(run_dir, argv, epochs):
    """td3.py's command that resumes a run: the settings come from its config.json, and what a
    resume may change (RESUME_MAY_CHANGE) from the sweep's command (``argv``), but for
    --epochs (the sweep's: more trains a finished run on) and --threads (1 a run)."""
    out = ["--resume", run_dir, "--epochs", str(epochs), "--threads", "1"]
    for i, a in enumerate(argv):
        name = a[2:].split("=", 1)[0] if a.startswith("--") else None
        if name in directory.RESUME_MAY_CHANGE and name not in ("epochs", "threads"):
            value = "=" not in a and i + 1 < len(argv) and not argv[i + 1].startswith("-")
            out += argv[i:i + 1 + value]  # --device cpu, --device=cpu, --quiet
    return out


def start_ray(args):
    """Start or join Ray; returns where tasks find td3.py and the marker file by which each
    task checks that it sees the data directory (on a cluster)."""
    os.environ.setdefault("RAY_AUTH_MODE", "token")  # a cluster's driver must ask for it
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing leaves the machine
    # Ray advertises the network interface's address, also when told 127.0.0.1; this switch
    # (its single-machine mode of macOS and Windows) keeps a local instance on loopback.
    host = (args.address or "127.0.0.1").rsplit(":", 1)[0]
    if host in ("127.0.0.1", "localhost"):
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    quiet = dict(logging_level="warning", log_to_driver=False)
    if args.address is None:
        # A token of its own, in its processes' environment, not a new ~/.ray/auth_token.
        if not (os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")):
            os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
        import ray  # after the environment: Ray reads it once, when imported
        ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False,
                 _node_ip_address="127.0.0.1", object_store_memory=100 * 2**20, **quiet)
        return dict(cwd=os.getcwd(), code_dir=HERE, marker=None)
    import ray  # here, not at the top: bad input is refused without loading Ray (seconds)
    # Ray ships this code to the nodes with each task; the runs go to the shared data_dir.
    excludes = [".git/", "data/", "results/", "notebooks/*.ipynb"]
    if not os.path.relpath(args.data_dir, HERE).startswith(".."):
        excludes.append(os.path.relpath(args.data_dir, HERE) + "/")
    try:
        ray.init(address=args.address, runtime_env=dict(working_dir=HERE, excludes=excludes),
                 **quiet)
    except (ConnectionError, RuntimeError, ray.exceptions.RayError) as e:
        raise UserError(f"cannot join the Ray cluster at {args.address}: "
                             f"{str(e).strip().splitlines()[0]}") from None
    os.makedirs(args.data_dir, exist_ok=True)
    marker = os.path.join(args.data_dir, f".sweep-{secrets.token_hex(6)}")
    open(marker, "w").close()
    return dict(cwd=None, code_dir=None, marker=marker)  # None: where Ray unpacked the code


def run_sweep(args, plan):
    """Run the unfinished runs as Ray tasks and report until they end; each run's state
    becomes finished, failed or interrupted. Returns 130 when interrupted, else None."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a kill stops as Ctrl-C does
    where, pending, t0 = dict(marker=None), {}, time.time()
    try:
        where = start_ray(args)
        import ray  # (start_ray imported it)
        on = f"cluster at {args.address}" if args.address else "this machine, 127.0.0.1 only"
        print(f"Ray {ray.__version__} started in {time.time() - t0:.1f} s: "
              f"{ray.cluster_resources().get('CPU', 0):.0f} CPUs, {on}", flush=True)
        task = ray.remote(num_cpus=1, max_retries=args.retries, retry_exceptions=[RunFailed])(run_one)
        pending = {task.remote(r["run_dir"], r["argv"], r["epochs"], **where): r
                   for r in plan if r["state"] != "finished"}
        start_steps, t0, last = steps_done(plan), time.time(), time.time()
        while pending:
            for ref in ray.wait(list(pending), num_returns=1, timeout=1.0)[0]:
                collect(pending.pop(ref), ref)
            if pending and time.time() - last >= args.report_every:
                print(progress_line(plan, start_steps, time.time() - t0), flush=True)
                last = time.time()
    except KeyboardInterrupt:
        print("interrupted: stopping the runs (each writes a checkpoint); run the same "
              "command again to continue", file=sys.stderr, flush=True)
        for ref in pending:
            ray.cancel(ref)  # the task passes SIGINT on to its td3.py
        if pending:
            ray.wait(list(pending), num_returns=len(pending), timeout=300)
        for r in pending.values():
            r["state"] = "finished" if run_status(r["run_dir"], r["epochs"]) == "finished" \
                else "interrupted"
        return 130
    finally:
        if where["marker"] and os.path.exists(where["marker"]):
            os.remove(where["marker"])
        if "ray" in sys.modules:
            sys.modules["ray"].shutdown()


def collect(run, ref):
    """Record how a task ended and say so in a line."""
    import ray  # (start_ray imported it)
    try:
        run["state"] = ray.get(ref)
        if run["state"].startswith("skipped: "):  # another process runs there: left to it
            run["state"], run["error"] = "skipped", run["state"][len("skipped: "):]
    except ray.exceptions.RayTaskError as e:  # td3.py failed, also on its last retry
        run["state"], run["error"] = "failed", str(e.cause).strip().splitlines()[-1]
    except ray.exceptions.RayError as e:  # its worker or node died, also on the last retry
        run["state"], run["error"] = "failed", f"{type(e).__name__}: {str(e).strip().splitlines()[0]}"
    why = f": {run['error']} (its output: {os.path.join(run['run_dir'], LOG)})" if "error" in run else ""
    print(f"{run['state']}: {os.path.basename(run['run_dir'])}{why}", flush=True)


def table(run):
    try:
        return read_table(os.path.join(run["run_dir"], "progress.txt"))
    except (OSError, UserError):
        return {}


def steps_done(plan):
    return sum(table(r).get("TotalEnvInteracts", [0])[-1] for r in plan)


def progress_line(plan, start_steps, seconds):
    """Runs by state; env steps so far, and the time left at this sweep's rate so far."""
    count = lambda state: sum(r["state"] == state for r in plan)
    steps, todo = steps_done(plan), [r for r in plan if r["state"] not in ("finished", "failed", "skipped")]
    left = sum(r["total"] for r in todo) - steps_done(todo)
    rate = (steps - start_steps) / max(seconds, 1e-9)
    eta = f"~{format_seconds(left / rate)} left" if rate > 0 else "time left: after the first epochs"
    return (f"[{time.strftime('%H:%M:%S')}] runs: {count('finished')} done, {count('failed')} "
            f"failed, {len(plan) - count('finished') - count('failed')} to go | {steps:,.0f} "
            f"env steps | {rate:,.0f} env steps/s | {eta}")


def summarize(plan):
    """A row per env and variant: seeds finished, seeds that reached the env's reward
    threshold, the median env steps to it, final and best test return over seeds."""
    mean_std = lambda x: "-" if not x else f"{np.mean(x):.1f}" + (f" ± {np.std(x):.1f}" if len(x) > 1 else "")
    lines = ["| env | variant | seeds finished | reached threshold | median env steps to it "
             "| final test return | best test return |", "|---|---|---|---|---|---|---|"]
    for env, variant in dict.fromkeys((r["env"], r["variant"]) for r in plan):
        members = [r for r in plan if (r["env"], r["variant"]) == (env, variant)]
        thr, n = reward_threshold(env), len(members)
        rets = [(d["AverageTestEpRet"], d["TotalEnvInteracts"]) for d in map(table, members) if d]
        reached = [t[np.argmax(ret >= thr)] for ret, t in rets if thr is not None and (ret >= thr).any()]
        lines.append(f"| {env} | {variant} | {sum(r['state'] == 'finished' for r in members)}/{n} "
                     f"| {f'{len(reached)}/{n} (>= {thr:g})' if thr is not None else 'no threshold'} "
                     f"| {f'{np.median(reached):,.0f}' if reached else '-'} "
                     f"| {mean_std([ret[-1] for ret, _ in rets])} | {mean_std([ret.max() for ret, _ in rets])} |")
    return lines


def reward_threshold(env_id):
    try:
        return gym.spec(env_id.split(":")[-1]).reward_threshold  # "module:Env-v0" ids too
    except gym.error.Error:
        return None


def plot_command(plan, data_dir):
    """The plot.py command that draws every variant (grouped by exp_name), mean ± std."""
    thresholds = {reward_threshold(r["env"]) for r in plan} - {None}
    hline = f" --hline {thresholds.pop():g}" if len(thresholds) == 1 else ""
    return (f"python {os.path.relpath(os.path.join(HERE, 'plot.py'))} {shlex.quote(data_dir)} "
            f"--value TestEpRet{hline} --out {shlex.quote(os.path.join(data_dir, 'sweep.png'))}")


def main(argv=None):
    args, td3_options = parse_args(argv)
    plan = plan_runs(args, td3_options)
    count = lambda state: sum(r["state"] == state for r in plan)
    print(f"sweep: {len(plan)} run(s) in {args.data_dir}: {count('finished')} finished, "
          f"{count('unfinished')} to resume, {count('new')} to start", flush=True)
    code = run_sweep(args, plan) if count("finished") < len(plan) else None
    print("\n".join(["", *summarize(plan), ""]))
    print(f"Plot the runs with:\n{plot_command(plan, args.data_dir)}", flush=True)
    return code or (1 if any(r["state"] != "finished" for r in plan) else 0)


if __name__ == "__main__":
    run_main(main)
