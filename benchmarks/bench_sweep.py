"""Throughput of sweep.py: two BipedalWalker-v3 runs side by side on Ray, against the same
two runs one after another at 2 threads each.

    python benchmarks/bench_sweep.py [--epochs 4] [--steps_per_epoch 5000]
    python benchmarks/bench_sweep.py --smoke   # tiny runs: shows the script works, no more

Side by side: ``python sweep.py --env BipedalWalker-v3 --seeds 0 1 --num_cpus 2`` (a private
Ray instance, one torch thread per run). One after another: ``python td3.py --env
BipedalWalker-v3 --seed S --threads 2`` for seed 0, then seed 1. Both arms train the same
runs with the same options (``--no_stop``, ``--start_steps 1000``, one test episode per
epoch). Throughput is the env steps of both runs over the arm's wall time, from starting
the first command to the exit of the last, so Ray's start-up and every import count
against the sweep. Also printed: each arm's training-only rate (progress.txt's Time
column), Ray's start-up seconds (sweep.py's own line) and the memory of Ray's processes
beside the runs: the peak, over one-second samples, of the summed RSS (and PSS, which
counts shared pages once) of every process of the sweep that is neither sweep.py itself
nor a run.
The default size, 2 x 20,000 env steps an arm, takes a few minutes per arm on 2 cores, so
Ray's start-up (about 10 s) is a small part of the side-by-side arm.
The last two lines are ``throughput_ratio=X`` (side by side over one after another, wall
time) and ``training_ratio=Y`` (the same, counting only the runs' training time).
Run it on an otherwise idle machine: anything else on the cores changes both arms.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from logger import read_progress  # noqa: E402

ENV = "BipedalWalker-v3"
SMOKE = ["--epochs", "1", "--steps_per_epoch", "300", "--start_steps", "100",
         "--update_after", "100", "--batch_size", "32", "--hid", "32", "--replay_size", "10000",
         "--max_ep_len", "200"]


def run_steps(data_dir):
    """(env steps, seconds of training) of every run below data_dir, from progress.txt."""
    steps = secs = 0.0
    for root, _, files in os.walk(data_dir):
        if "progress.txt" in files:
            header, rows = read_progress(os.path.join(root, "progress.txt"))
            steps += float(rows[-1][header.index("TotalEnvInteracts")])
            secs += float(rows[-1][header.index("Time")])
    return steps, secs


def processes():
    """{pid: (ppid, cmdline)} of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
                out[int(d)] = (ppid, cmd)
            except (OSError, IndexError, ValueError):
                pass
    return out


def memory_kb(pid):
    """(RSS, PSS) in kB, from /proc/PID/smaps_rollup."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def label(cmd):
    """A short name for a process: ray::run_one, gcs_server, raylet, dashboard.py, ..."""
    words = cmd.split() or ["?"]
    if not os.path.basename(words[0]).startswith("python"):
        return os.path.basename(words[0])  # ray::IDLE, ray::run_one, gcs_server, raylet
    return os.path.basename(next((w for w in words[1:] if w.endswith(".py")), words[0]))


def ray_memory(driver):
    """Summed RSS and PSS (kB) of the driver's descendants other than td3.py runs, the RSS
    of each kind of them, and the driver's own RSS."""
    procs = processes()
    tree, todo = set(), [driver]
    while todo:
        p = todo.pop()
        tree.add(p)
        todo += [c for c, (pp, _) in procs.items() if pp == p]
    rss = pss = 0
    kinds = {}
    for p in tree - {driver}:
        cmd = procs.get(p, (0, ""))[1]
        if "td3.py" in cmd:
            continue
        r, s = memory_kb(p)
        rss, pss = rss + r, pss + s
        kinds[label(cmd)] = kinds.get(label(cmd), 0) + r
    return rss, pss, kinds, memory_kb(driver)[0]


def side_by_side(opts, data_dir):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    t0 = time.time()
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "sweep.py"), "--env", ENV,
                          "--seeds", "0", "1", "--num_cpus", "2", *opts, "--data_dir", data_dir,
                          "--report_every", "60"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = (0, 0, {}, 0)
    while p.poll() is None:
        sample = ray_memory(p.pid)
        peak = max(peak, sample, key=lambda m: m[0])
        time.sleep(1.0)
    out = p.communicate()[0]
    wall = time.time() - t0
    if p.returncode != 0:
        sys.exit(f"sweep.py failed ({p.returncode}):\n{out}")
    m = re.search(r"started in ([\d.]+) s", out)
    return wall, float(m.group(1)) if m else float("nan"), peak


def one_after_another(opts, data_dir):
    env = dict(os.environ, OMP_NUM_THREADS="2")
    t0 = time.time()
    for seed in ("0", "1"):
        subprocess.run([sys.executable, os.path.join(ROOT, "td3.py"), "--env", ENV, "--seed", seed,
                        *opts, "--data_dir", data_dir, "--threads", "2"], cwd=ROOT, env=env,
                       check=True, stdout=subprocess.DEVNULL)
    return time.time() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--steps_per_epoch", type=int, default=5000)
    p.add_argument("--smoke", action="store_true", help="tiny runs, to check the script")
    args = p.parse_args()
    opts = ["--no_stop", "--num_test_episodes", "1"]
    # Policy actions after the first 1,000 steps, as in most of a real run.
    opts += SMOKE if args.smoke else ["--epochs", str(args.epochs), "--start_steps", "1000",
                                      "--steps_per_epoch", str(args.steps_per_epoch)]
    load = os.getloadavg()[0]
    print(f"{ENV}, 2 runs, options: {' '.join(opts)}; {os.cpu_count()} cores, load {load:.1f}"
          f"{' (busy: the numbers will be off)' if load > 0.5 else ''}", flush=True)
    with tempfile.TemporaryDirectory() as d:
        wall_a, ray_start, (rss, pss, kinds, driver_rss) = side_by_side(opts, os.path.join(d, "a"))
        steps_a, secs_a = run_steps(os.path.join(d, "a"))
        wall_b = one_after_another(opts, os.path.join(d, "b"))
        steps_b, secs_b = run_steps(os.path.join(d, "b"))
    assert steps_a == steps_b, (steps_a, steps_b)
    rate_a, rate_b = steps_a / wall_a, steps_b / wall_b
    print(f"side by side, sweep.py on Ray, 1 thread each: {steps_a:,.0f} env steps in "
          f"{wall_a:.1f} s = {rate_a:.1f} env steps/s (training only: "
          f"{steps_a / secs_a * 2:.1f}, each run {steps_a / secs_a:.1f})")
    print(f"one after another, td3.py, 2 threads each:     {steps_b:,.0f} env steps in "
          f"{wall_b:.1f} s = {rate_b:.1f} env steps/s (training only: {steps_b / secs_b:.1f})")
    print(f"Ray start-up: {ray_start:.1f} s; Ray's processes beside the runs (peak): RSS "
          f"{rss / 1024:.0f} MB, PSS {pss / 1024:.0f} MB; sweep.py itself: RSS "
          f"{driver_rss / 1024:.0f} MB")
    print("  RSS by process: " + ", ".join(f"{k} {v / 1024:.0f} MB" for k, v in
                                          sorted(kinds.items(), key=lambda kv: -kv[1])))
    if args.smoke:
        print("smoke run: tiny runs, so the ratio below says nothing about speed")
    print(f"throughput_ratio={rate_a / rate_b:.2f}")
    print(f"training_ratio={(steps_a / secs_a * 2) / (steps_b / secs_b):.2f}")


if __name__ == "__main__":
    main()
