"""The training loop on a machine that is doing something else too: env steps/s of td3.py's
default thread count, of --threads 1 and of --threads 2, on idle cores and with one core
kept busy by another process.

    python benchmarks/bench_shared.py [--env Pendulum-v1] [--steps 200] [--repeats 3]

Each measurement is a fresh ``python td3.py`` process (torch's threads are made when it
starts), timed from its progress.txt: the Time column over the epochs after the first,
``--steps`` env steps each, every one of them with an update (the first epoch is the random
warm-up). The competing process spins one Python loop, as a second training run or a
notebook would keep a core. Loads and settings are interleaved within each repeat, and the
medians of the repeats are printed. A run that has not finished after ``--timeout`` seconds
is stopped and counted from the epochs it finished (or as at most one epoch in that time).
On 2 cores the default was ``min(2, cores)`` threads before the busy-core rule; --threads 2
is that old default.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from logger import read_progress  # noqa: E402

SETTINGS = {"default": [], "--threads 1": ["--threads", "1"], "--threads 2": ["--threads", "2"]}


def steps_per_s(env_id, steps, extra, timeout):
    """One td3.py run: env steps/s over its epochs with updates, and the threads it used."""
    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, os.path.join(ROOT, "td3.py"), "--env", env_id, "--epochs", "3",
               "--steps_per_epoch", str(steps), "--start_steps", str(steps), "--update_after",
               str(steps), "--num_test_episodes", "1", "--quiet", "--data_dir", d, *extra]
        env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        start = time.time()
        try:
            out = p.communicate(timeout=timeout)[0]
        except subprocess.TimeoutExpired:
            p.kill()
            out = p.communicate()[0]
        threads = next((ln.split(", ")[-1] for ln in out.splitlines() if "torch thread" in ln), "?")
        path = next((os.path.join(r, "progress.txt") for r, _, f in os.walk(d) if "progress.txt" in f), None)
        rows = read_progress(path)[1] if path else []
        if len(rows) >= 2:
            header = read_progress(path)[0]
            t = [float(r[header.index("Time")]) for r in rows]
            return steps * (len(rows) - 1) / (t[-1] - t[0]), threads
        return steps / (time.time() - start), threads + " (timed out: at most)"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="Pendulum-v1")
    p.add_argument("--steps", type=int, default=200, help="env steps per timed epoch")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per run at most")
    args = p.parse_args()
    res, used = {}, {}
    for r in range(args.repeats):
        for load in ("idle", "one core busy"):
            busy = None if load == "idle" else subprocess.Popen(
                [sys.executable, "-c", "while True: pass"])
            try:
                time.sleep(1.0 if busy else 0.0)
                for name, extra in SETTINGS.items():
                    rate, threads = steps_per_s(args.env, args.steps, extra, args.timeout)
                    res.setdefault((load, name), []).append(rate)
                    used.setdefault((load, name), set()).add(threads)
                    print(f"repeat {r + 1}, {load}, {name}: {rate:.1f} env steps/s ({threads})",
                          flush=True)
            finally:
                if busy:
                    busy.kill()
                    busy.wait()
    med = {k: statistics.median(v) for k, v in res.items()}
    print(f"\n{args.env}, {os.cpu_count()} cores, {args.steps} env steps per timed epoch, median "
          f"of {args.repeats}")
    print("| load | setting | torch threads | env steps/s | ratio to --threads 1, same load |")
    print("|---|---|---|---|---|")
    for (load, name), v in med.items():
        print(f"| {load} | {name} | {', '.join(sorted(used[load, name]))} | {v:.1f} | "
              f"{v / med[load, '--threads 1']:.2f} |")
    print(f"busy_default_vs_threads1={med['one core busy', 'default'] / med['one core busy', '--threads 1']:.2f}")
    print(f"idle_default_vs_threads2={med['idle', 'default'] / med['idle', '--threads 2']:.2f}")


if __name__ == "__main__":
    main()
