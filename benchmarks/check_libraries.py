"""Four installable TD3s through check_port.py: their reports, and the table docs/check_port.md
shows.

    pip install -r requirements-ports.txt
    python benchmarks/check_libraries.py          # writes results/porting/libraries/

Each adapter of notebooks/ (SB3, skrl, Tianshou, TorchRL) drives its library's own update code
on the checker's batch and weights. Each is checked on BipedalWalker-v3 (bounds +-1, as SB3 and
Tianshou need) and, where the adapter takes other bounds, on Pendulum-v1 (bounds +-2, where a
noise given in action units shows). Every report goes to results/porting/libraries/<name>.txt
as check_port.py printed it, and the table to results/porting/libraries/table.md, all at the
end. A library that cannot be imported stops it, in one line, before anything is written.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "results", "porting", "libraries")

# (module to import, adapter, what its settings are, the envs it is checked on)
CHECKS = [
    ("stable_baselines3", "sb3_port:Adapter", "td3.py's defaults", ["BipedalWalker-v3"]),
    ("skrl", "skrl_port:Defaults", "TD3_CFG's defaults", ["BipedalWalker-v3"]),
    ("skrl", "skrl_port:Paper", "the paper's target smoothing",
     ["BipedalWalker-v3", "Pendulum-v1"]),
    ("tianshou", "tianshou_port:Defaults", "TD3's defaults (the paper's)", ["BipedalWalker-v3"]),
    ("tianshou", "tianshou_port:Clipped", "one method overridden: a' clipped",
     ["BipedalWalker-v3"]),
    ("torchrl", "torchrl_port:Defaults", "TD3Loss's defaults, the example's loop",
     ["BipedalWalker-v3", "Pendulum-v1"]),
    ("torchrl", "torchrl_port:Paper", "loss l2, noise per half-range", ["BipedalWalker-v3",
                                                                        "Pendulum-v1"]),
]


def report_name(adapter, env):
    return f"{adapter.replace('_port:', '_')}_{env}.txt"


def summary(report):
    """The last line's verdict, without its time: '0 piece(s) differ' or what was named."""
    last = [line for line in report.splitlines() if "piece(s) differ" in line][-1]
    return re.sub(r" \(\d+\.\d s\)$", "", last)


def main():
    rows = ["| library | adapter | settings | env | exit | what the checker says |",
            "|---|---|---|---|---:|---|"]
    reports = {}
    for module, adapter, settings, envs in CHECKS:
        try:
            version = __import__(module).__version__
        except ImportError as e:  # the committed table needs every library: none is left out
            sys.exit(f"check_libraries: cannot import {module} ({e}); "
                     "pip install -r requirements-ports.txt")
        for env in envs:
            p = subprocess.run([sys.executable, "check_port.py", f"notebooks.{adapter}", "--env",
                                env], cwd=ROOT, capture_output=True, text=True)
            if p.returncode not in (0, 1):
                sys.exit(f"check_libraries: {adapter} on {env} exited {p.returncode}: "
                         f"{(p.stderr or p.stdout).strip().splitlines()[-1:]}")
            reports[report_name(adapter, env)] = p.stdout
            said = summary(p.stdout)
            print(f"{adapter} on {env}: exit {p.returncode}, {said}", flush=True)
            rows.append(f"| {module} {version} | `{adapter}` | {settings} | {env} | "
                        f"{p.returncode} | {said} |")
    # every check ran: the reports and the table written together, old reports gone
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        if name.endswith(".txt") and name not in reports:
            os.remove(os.path.join(OUT, name))
    for name, text in reports.items():
        with open(os.path.join(OUT, name), "w") as f:
            f.write(text)
    with open(os.path.join(OUT, "table.md"), "w") as f:
        f.write("\n".join(rows) + "\n")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
