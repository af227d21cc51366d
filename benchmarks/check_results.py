"""Re-check README's learning claims from the committed files in results/.

    python benchmarks/check_results.py

Reads every run's progress.txt and config.json under results/ and prints, per run: the env
steps and wall-clock minutes to the first epoch whose AverageTestEpRet reaches the threshold,
the best and the final test return, how many of the later epochs stayed at the threshold
(and the lowest return among them), and the critic's bias on the test states (TestQBias,
estimated minus true value) over the second half of the epochs: its median and in how many
epochs it was above 0. Then one summary line per group of seeds.

Thresholds: the env's reward_threshold (BipedalWalker-v3: 300) or, for Pendulum-v1, which has
none, -200. Comparison groups are cut to the length every seed of them was run to, so that
seeds run longer count only on the common part: results/ablations (each trick switched off)
at 200,000 env steps, results/porting (one porting mistake per run, plus the TD3 reference
from results/ablations and the authors' settings at seed 0 from results/defaults) at 150,000,
results/defaults (the TD3 authors' settings) at 200,000.

    python benchmarks/check_results.py --screen [--baseline DIR] [--seeds 10-19] [CANDIDATE_DIR ...]

The screen of new defaults (docs/defaults.md#screening-new-defaults) instead: per env
(BipedalWalker-v3 by 150,000 env steps, LunarLanderContinuous-v3 by 300,000; thresholds from
gymnasium's reward_threshold, 300 and 200) and per configuration (a directory of runs: the
baseline results/<env>/, or results/screen/baseline/ for an env whose defaults changed, each
candidate results/screen/<candidate>/, and then results/<env>/), each seed's first env step
at the threshold, the step at which the old early stop (3 epochs in a row at the threshold)
would have fired, the later epochs at the threshold, the final return and, on
LunarLanderContinuous-v3, the mean TestEpLen of the last 10 epochs (a lander that hovers shows
about 1000). A seed counts once its run reached the step limit, as the docs' rule asks;
before that, and also when its own early stop ended it sooner (the rule needs every epoch to
the limit: run screens with --no_stop), it is listed and left out of every count. Then, per
configuration and group of seeds, the counts and medians, and per candidate the docs' decision
rule applied to it and to the baseline on the same seeds.
"""
import argparse
import json
import os
import statistics
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from run.errors import UserError  # noqa: E402
from plot import read_table  # noqa: E402

THRESHOLDS = {"BipedalWalker-v3": 300.0, "Pendulum-v1": -200.0}
COMPARISONS = [("ablations", 200_000), ("defaults", 200_000), ("porting", 150_000)]


def runs_under(top):
    return sorted(root for root, _, files in os.walk(top) if "progress.txt" in files)


def load(run, xmax=None):
    data = read_table(os.path.join(run, "progress.txt"))
    if xmax is not None:
        keep = data["TotalEnvInteracts"] <= xmax
        data = {k: v[keep] for k, v in data.items()}
    with open(os.path.join(run, "config.json")) as f:
        return data, json.load(f)


def measure(data, thr):
    """The numbers of one run, as a dict (see the module docstring)."""
    ret, x = data["AverageTestEpRet"], data["TotalEnvInteracts"]
    hit = [i for i, v in enumerate(ret) if v >= thr]
    after = ret[hit[0] + 1:] if hit else ret[:0]
    half = data["TestQBias"][len(ret) // 2:]
    return dict(steps_to=int(x[hit[0]]) if hit else None,
                minutes_to=data["Time"][hit[0]] / 60 if hit else None,
                best=float(ret.max()), final=float(ret[-1]), end=int(x[-1]),
                held=int((after >= thr).sum()), after=len(after),
                lowest_after=float(after.min()) if len(after) else None,
                bias_median=float(np.median(half)), bias_above=int((half > 0).sum()),
                bias_epochs=len(half))


def run_line(name, seed, m, thr):
    where = (f"{m['steps_to']:>8,} env steps, {m['minutes_to']:5.1f} min to {thr:g}"
             if m["steps_to"] is not None else f"{'not reached':>33}")
    held = (f"; after it {m['held']} of {m['after']} epochs >= {thr:g}, lowest "
            f"{m['lowest_after']:.1f}" if m["after"] else "")
    return (f"  {name} seed {seed}: {where}; best {m['best']:7.1f}; final {m['final']:7.1f} at "
            f"{m['end']:,}; TestQBias (2nd half) median {m['bias_median']:+.1f}, above 0 in "
            f"{m['bias_above']} of {m['bias_epochs']}{held}")


def summary_line(name, ms, thr):
    reached = [m["steps_to"] for m in ms if m["steps_to"] is not None]
    med = f"{statistics.median(reached):,.0f}" if reached else "n/a"
    mean_sd = lambda v: f"{np.mean(v):.1f} ± {np.std(v):.1f}"
    biases = ", ".join(f"{m['bias_median']:+.1f}" for m in ms)
    return (f"  => {name}: {len(ms)} seeds; {len(reached)} reached {thr:g} (median env steps "
            f"{med}); best {mean_sd([m['best'] for m in ms])}; final "
            f"{mean_sd([m['final'] for m in ms])}; later epochs >= {thr:g}: "
            f"{sum(m['held'] for m in ms)} of {sum(m['after'] for m in ms)}; TestQBias 2nd-half "
            f"medians {biases}")


def report(runs, thr, xmax=None):
    """One line per run, then one summary line per exp_name."""
    groups = {}
    for run in runs:
        data, cfg = load(run, xmax)
        m = measure(data, thr)
        name = cfg.get("exp_name", "?")
        print(run_line(name, cfg["seed"], m, thr))
        groups.setdefault(name, []).append(m)
    for name, ms in groups.items():
        print(summary_line(name, ms, thr))


def main(results=os.path.join(ROOT, "results")):
    for env_id in sorted(os.listdir(results)):
        top = os.path.join(results, env_id)
        if env_id in THRESHOLDS and os.path.isdir(top):
            print(f"{env_id} (threshold {THRESHOLDS[env_id]:g}):")
            report(runs_under(top), THRESHOLDS[env_id])
    for name, xmax in COMPARISONS:
        top = os.path.join(results, name)
        if not os.path.isdir(top):
            continue
        runs = runs_under(top)
        if name == "porting":  # TD3's ablation runs are the reference; the authors' settings
            # at seed 0 are results/defaults' run, of which the first 150,000 steps count here
            runs = (runs_under(os.path.join(results, "ablations", "td3-BipedalWalker-v3")) + runs
                    + runs_under(os.path.join(results, "defaults")))
        print(f"{name}, BipedalWalker-v3, first {xmax:,} env steps (threshold 300):")
        report(runs, 300.0, xmax)


# ------------------------------------------------------------------------------------------
# The screen of new defaults (docs/defaults.md#screening-new-defaults): --screen
# ------------------------------------------------------------------------------------------
STEP_LIMITS = {"BipedalWalker-v3": 150_000, "LunarLanderContinuous-v3": 300_000}
# The screen's seeds per stage; seeds below 10 are kept for independent checks.
STAGES = {"BipedalWalker-v3": [range(10, 15), range(10, 20)],
          "LunarLanderContinuous-v3": [range(10, 13)]}
SCREEN_SEEDS_FROM = 10
STOP_EPOCHS = 3  # the old early stop: this many epochs in a row at the threshold
EP_LEN_EPOCHS = 10  # TestEpLen is averaged over this many last epochs (LunarLander: hovering)
# config.json keys that differ between runs of one configuration; not a difference of settings
NOT_SETTINGS = {"seed", "exp_name", "logger_kwargs", "git", "cpu", "versions", "torch_threads",
                "resume"}
# Settings added to td3.py after some committed runs were made, with the value those runs
# behaved as (their config.json lacks the key): before --noise, exploration was Gaussian.
ADDED_LATER = {"noise": "gaussian", "confirm_episodes": 0, "early_stop": True,
               "test_actor": "live", "compare_actors": False}


def threshold(env_id):
    """The env's reward_threshold from its gymnasium spec (no env is made), else THRESHOLDS."""
    import gymnasium
    thr = gymnasium.spec(env_id).reward_threshold
    return float(thr) if thr is not None else THRESHOLDS[env_id]


def first_run_of(ok, n):
    """Index of the row that ends the first n entries in a row where ok is True, or None."""
    streak = 0
    for i, v in enumerate(ok):
        streak = streak + 1 if v else 0
        if streak == n:
            return i
    return None


def screen_measure(data, cfg, thr, limit):
    """One seed's screen numbers, from its rows up to the step limit (see the docstring)."""
    x_all, ret_all = data["TotalEnvInteracts"], data["AverageTestEpRet"]
    keep = x_all <= limit
    x, ret = x_all[keep], ret_all[keep]
    ok = ret >= thr
    hit = np.flatnonzero(ok)
    stop = first_run_of(ok, STOP_EPOCHS)
    after = ok[hit[0] + 1:] if len(hit) else ok[:0]
    end = int(x_all[-1]) if len(x_all) else 0
    # A run whose own early stop ended it before the limit lacks the epochs the rule counts.
    own_stop, own_epochs = cfg.get("stop_return"), cfg.get("stop_epochs", STOP_EPOCHS)
    confirmed = data.get("TargConfirmEpRet" if cfg.get("test_actor") == "averaged" else "ConfirmEpRet")
    stopped = own_stop is not None and cfg.get("early_stop", True) and end < limit and (
        bool(confirmed[-1] >= own_stop) if cfg.get("confirm_episodes", 0) and confirmed is not None
        else first_run_of(ret_all[-own_epochs:] >= own_stop, own_epochs) is not None)
    status = ("finished" if end >= limit else "ended by its own early stop" if stopped
              else "unfinished")
    ep_len = data.get("TestEpLen")
    return dict(seed=cfg["seed"], rows=len(x_all), rows_in=len(x), end=end,
                planned=cfg.get("epochs", 0) * cfg.get("steps_per_epoch", 0),
                status=status, counted=status == "finished",
                first=int(x[hit[0]]) if len(hit) else None,
                stop=int(x[stop]) if stop is not None else None,
                after=len(after), held=int(after.sum()), final=float(ret[-1]) if len(ret) else None,
                ep_len=float(ep_len[keep][-EP_LEN_EPOCHS:].mean()) if ep_len is not None and len(x)
                else None)


def steps(v, limit):
    return f"{v:,.0f}" if v is not None and v != float("inf") else f"later than {limit:,}"


def screen_seed_line(m, thr, limit, env_id):
    if m["counted"]:
        where = (f"{m['rows']} rows to {m['end']:,}, {m['status']}"
                 + (f" (its first {m['rows_in']} count)" if m["rows_in"] < m["rows"] else "")
                 + ";")
    else:
        where = (f"{m['rows']} rows to {m['end']:,} of {limit:,}, {m['status']}, not counted"
                 + (" (the rule needs every epoch to the limit: --no_stop)"
                    if m["status"] != "unfinished" else
                    f" (planned to {m['planned']:,} only)" if m["planned"] < limit else "")
                 + "; so far:")
    by = f" by {min(m['end'], limit):,}"
    first = (f"first >= {thr:g} at {m['first']:,}" if m["first"] is not None
             else f"not at {thr:g}{by}")
    stop = (f"{STOP_EPOCHS} in a row (the old early stop) at {m['stop']:,}"
            if m["stop"] is not None else f"never {STOP_EPOCHS} in a row{by}")
    held = (f"; after the first, {m['held']} of {m['after']} epochs >= {thr:g}"
            if m["first"] is not None else "")
    final = (f"; {'final' if m['counted'] else 'latest'} (at {min(m['end'], limit):,}) "
             f"{m['final']:.1f}" if m["final"] is not None else "")
    ep_len = (f"; TestEpLen, last {min(m['rows_in'], EP_LEN_EPOCHS)} epochs: {m['ep_len']:.0f}"
              if env_id == "LunarLanderContinuous-v3" and m["ep_len"] is not None else "")
    return f"    seed {m['seed']}{m['note']}: {where} {first}; {stop}{held}{final}{ep_len}"


def tally(ms):
    """The counts and medians of counted seeds; unreached seeds count as later than the limit."""
    inf = float("inf")
    reached = [m for m in ms if m["first"] is not None]
    after = sum(m["after"] for m in reached)
    lost = sum(m["after"] - m["held"] for m in reached)
    return dict(n=len(ms), reached=len(reached),
                median_first=statistics.median([m["first"] if m["first"] is not None else inf
                                                for m in ms]) if ms else inf,
                stopped=sum(m["stop"] is not None for m in ms),
                median_stop=statistics.median([m["stop"] if m["stop"] is not None else inf
                                               for m in ms]) if ms else inf,
                after=after, lost=lost, lost_share=lost / after if after else 0.0,
                finals=[m["final"] for m in ms], ep_lens=[m["ep_len"] for m in ms])


def seed_list(seeds):
    """[10, 11, 12, 14] -> '10-12, 14'."""
    seeds, parts = sorted(seeds), []
    for s in seeds:
        if parts and s == parts[-1][1] + 1:
            parts[-1][1] = s
        else:
            parts.append([s, s])
    return ", ".join(f"{a}-{b}" if b > a + 1 else f"{a}, {b}" if b > a else f"{a}"
                     for a, b in parts)


def summary(label, ms, thr, limit, env_id):
    counted = [m for m in ms if m["counted"]]
    if not counted:
        return (f"    => {label} ({seed_list(m['seed'] for m in ms)}): none counted yet, "
                f"{len(ms)} not run to the limit")
    t = tally(counted)
    firsts = ", ".join(steps(m["first"], limit).replace("later than", "not by") for m in counted)
    text = (f"    => {label} ({seed_list(m['seed'] for m in ms)}): {t['n']} counted, "
            f"{len(ms) - t['n']} not run to the limit; {t['reached']} of {t['n']} at {thr:g} by {limit:,} "
            f"(first: {firsts or '-'}; median {steps(t['median_first'], limit)}, unreached seeds "
            f"counted as later than {limit:,}); the old early stop would fire on "
            f"{t['stopped']} of {t['n']} (median {steps(t['median_stop'], limit)}); after the "
            f"first, {t['lost']} of {t['after']} epochs below {thr:g} "
            f"({100 * t['lost_share']:.0f}%)")
    text += (f"; final median {statistics.median(t['finals']):.1f}, mean "
             f"{np.mean(t['finals']):.1f} ± {np.std(t['finals']):.1f}")
    if env_id == "LunarLanderContinuous-v3":
        text += (f"; TestEpLen, last {EP_LEN_EPOCHS} epochs: "
                 + ", ".join(f"{v:.0f}" for v in t["ep_lens"]))
    return text


def beats(cand, base):
    """The screen's decision rule (docs/defaults.md), on tallies of the same seeds."""
    if cand["reached"] != base["reached"]:
        return cand["reached"] > base["reached"], (
            f"{'more' if cand['reached'] > base['reached'] else 'fewer'} seeds at the threshold")
    if not cand["median_first"] < base["median_first"]:
        return False, "as many seeds at the threshold, median first step not earlier"
    if cand["lost_share"] > base["lost_share"]:
        return False, ("as many seeds, earlier median first step, but a larger share of "
                       "epochs below the threshold after it")
    return True, ("as many seeds, earlier median first step, no larger share of epochs below "
                  "the threshold after it")


def gate(env_id, cand, base):
    """What makes a default (docs/defaults.md): per env, on that env's last stage's seeds."""
    if env_id == "BipedalWalker-v3":
        return (cand["reached"] >= base["reached"] and cand["median_first"] <= base["median_first"],
                "at least as many seeds at the threshold and a median first step no later")
    return cand["reached"] > base["reached"], "more seeds at the threshold"


def compare(env_id, cand_ms, base_ms, thr, limit):
    """The decision rule per stage of the env, and the default gate at its last stage."""
    cand, base = ({m["seed"]: m for m in ms} for ms in (cand_ms, base_ms))
    stages, lines = STAGES[env_id], []
    for k, stage in enumerate(stages):
        new = set(stage) - (set(stages[k - 1]) if k else set())
        if k and not new & set(cand):
            break
        both = [s for s in stage if s in cand and s in base and cand[s]["counted"]
                and base[s]["counted"]]
        c_n, b_n = (sum(s in d and d[s]["counted"] for s in stage) for d in (cand, base))
        tc, tb = tally([cand[s] for s in both]), tally([base[s] for s in both])
        ok, why = beats(tc, tb)
        done = len(both) == len(stage)
        numbers = (f"{tc['reached']} vs {tb['reached']} of {len(both)} at {thr:g} by {limit:,}; "
                   f"median first {steps(tc['median_first'], limit)} vs "
                   f"{steps(tb['median_first'], limit)}; after it below {thr:g}: "
                   f"{tc['lost']} of {tc['after']} ({100 * tc['lost_share']:.0f}%) vs {tb['lost']} "
                   f"of {tb['after']} ({100 * tb['lost_share']:.0f}%)")
        head = f"    vs the baseline, stage {k + 1} (seeds {seed_list(stage)}): "
        if not both:
            lines.append(head + f"undecided: no seed counted in both yet (candidate {c_n}, "
                         f"baseline {b_n} of {len(stage)})")
            continue
        verdict = ("BEATS the baseline" if ok else "does not beat the baseline") + f" ({why})"
        lines.append(head + numbers + (" -> " + verdict if done else
                     f" -> undecided: candidate {c_n}, baseline {b_n} of {len(stage)} seeds "
                     f"counted (so far: {verdict})"))
        if k == len(stages) - 1:
            ok, why = gate(env_id, tc, tb)
            lines.append(f"    default gate (seeds {seed_list(stage)}, {why}): "
                         + (("passes" if ok else "fails") if done else
                            f"undecided ({len(both)} of {len(stage)} seeds counted in both)"))
    return lines


def config_runs(top, env_id, seeds):
    """The runs of one env under a configuration directory: [(cfg, measure)] by seed."""
    thr, limit, found = threshold(env_id), STEP_LIMITS[env_id], []
    for run in runs_under(top):
        data, cfg = load(run)
        if cfg.get("env_id") == env_id and (seeds is None or cfg["seed"] in seeds):
            found.append((cfg, dict(screen_measure(data, cfg, thr, limit), path=run, note="")))
    return sorted(found, key=lambda f: f[1]["seed"])


def one_per_seed(runs):
    """A configuration holds one run per seed; of two, the one with more rows is used."""
    by_seed = {}
    for cfg, m in runs:
        other = by_seed.get(m["seed"])
        if other is None:
            by_seed[m["seed"]] = (cfg, m)
            continue
        keep, drop = ((cfg, m), other) if m["rows"] > other[1]["rows"] else (other, (cfg, m))
        keep[1]["note"] += (f" (a second run, {label_of(drop[1]['path'])}, {drop[1]['rows']} "
                            f"rows, not used)")
        by_seed[m["seed"]] = keep
    return [by_seed[s] for s in sorted(by_seed)]


def differences(cfg, base_cfgs):
    """What a candidate's config.json sets otherwise than the baseline's (same seed if any)."""
    ref = next((c for c in base_cfgs if c["seed"] == cfg["seed"]), base_cfgs[-1])
    keys = sorted((set(cfg) | set(ref)) - NOT_SETTINGS)
    get = lambda c, k: c.get(k, ADDED_LATER.get(k))  # noqa: E731
    diff = [f"{k} {get(cfg, k)!r} (baseline {get(ref, k)!r})" for k in keys
            if get(cfg, k) != get(ref, k)]
    return ", ".join(diff) or "nothing besides the seed, the names and the machine"


def seed_set(text):
    """'0-2,10-19' -> {0, 1, 2, 10, ..., 19} (the --seeds option)."""
    seeds = set()
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        if not a.isdigit() or (b and not b.isdigit()):
            raise argparse.ArgumentTypeError(f"{text!r}: seeds are like 10-14 or 0-2,10-19")
        seeds.update(range(int(a), int(b or a) + 1))
    return seeds


def label_of(path):
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    return path if rel.startswith("..") else rel


def screen(baselines, candidates, seeds=None):
    """Print the screen: per env, the baseline and each candidate, then the rule's verdicts."""
    print("Screen of new defaults: each run cut to its env's step limit; a seed counts once it "
          "reached the step limit (docs/defaults.md).")
    for env_id, limit in STEP_LIMITS.items():
        thr = threshold(env_id)
        per_dir = [(top, config_runs(top, env_id, seeds)) for top in baselines]
        base = one_per_seed([r for _, runs in per_dir for r in runs])
        cands = [(top, one_per_seed(config_runs(top, env_id, seeds))) for top in candidates]
        if not base and not any(runs for _, runs in cands):
            continue
        print(f"{env_id}: threshold {thr:g} (gymnasium reward_threshold) by {limit:,} env steps")
        base_screen = [m for _, m in base if m["seed"] >= SCREEN_SEEDS_FROM]
        for kind, label, runs in ([("baseline", ", ".join(label_of(t) for t, r in per_dir if r), base)]
                                  + [("candidate", label_of(top), runs) for top, runs in cands]):
            if not runs:
                continue
            names = sorted({cfg.get("exp_name", "?") for cfg, _ in runs})
            print(f"  {kind} {label} ({', '.join(names)})")
            if kind == "candidate" and base:
                base_cfgs = ([c for c, _ in base if c["seed"] >= SCREEN_SEEDS_FROM]
                             or [c for c, _ in base])
                print(f"    config.json differs from the baseline's in: "
                      f"{differences(runs[0][0], base_cfgs)}")
            ms = [m for _, m in runs]
            for m in ms:
                print(screen_seed_line(m, thr, limit, env_id))
            low = [m for m in ms if m["seed"] < SCREEN_SEEDS_FROM]
            high = [m for m in ms if m["seed"] >= SCREEN_SEEDS_FROM]
            groups = [("all seeds", ms)] + ([("seeds below 10", low), ("seeds 10 and up", high)]
                                            if low and high else [])
            for name, group in groups:
                print(summary(name, group, thr, limit, env_id))
            if kind == "candidate":
                if not base_screen:
                    print(f"    vs the baseline: no baseline run of seed {SCREEN_SEEDS_FROM} "
                          "or above")
                    continue
                for line in compare(env_id, high, base_screen, thr, limit):
                    print(line)


# ------------------------------------------------------------------------------------------
# Judging a run: the confirmation and the averaged actor (docs/defaults.md): --judging DIR
# ------------------------------------------------------------------------------------------
ACTORS = dict(live=("AverageTestEpRet", "ConfirmEpRet"), averaged=("TargTestEpRet", "TargConfirmEpRet"))
# docs/defaults.md: the seeds each env's rule decides on, and how many of them a stop must serve
JUDGING_SEEDS = {"BipedalWalker-v3": 10, "LunarLanderContinuous-v3": 5}
LANDER_NEEDS = 4  # LunarLanderContinuous-v3 gets a stop at 200 if it serves 4 of its 5 seeds


def fresh_score(run, name, epoch):
    """The 100-episode average that watch.py printed for run/<name>.pt into fresh_<name>.txt,
    if that file held the actor of ``epoch`` (its line ends "(epoch N)")."""
    try:
        with open(os.path.join(run, f"fresh_{name}.txt")) as f:
            line = [ln for ln in f if ln.startswith("average return over")]
    except OSError:
        return None
    if not line or not line[-1].rstrip().endswith(f"(epoch {epoch})"):
        return None
    return float(line[-1].split(":")[1].split()[0])


def judging(top, results=os.path.join(ROOT, "results")):
    """Each env's measuring runs under top, against its committed runs in results/<env>/."""
    by_env = {}
    for run in runs_under(top):
        if not os.path.exists(os.path.join(run, "config.json")):
            continue  # a progress.txt without its run's settings (not a td3.py run directory)
        data, cfg = load(run)
        if "TargTestEpRet" in data and "ConfirmEpRet" in data:
            by_env.setdefault(cfg["env_id"], []).append((run, data, cfg))
    if not by_env:
        return print(f"no run with the judging columns (--compare_actors) under {top}")
    chosen = None
    for env_id in sorted(by_env, key=lambda e: e != "BipedalWalker-v3"):  # the walker decides first
        chosen = judging_env(env_id, by_env[env_id], os.path.join(results, env_id), chosen)


def judging_env(env_id, found, reference, walker_actor=None):
    """Per seed: whether every training column equals the committed run's, where the old stop
    (3 epochs in a row) and the confirmed stop of each actor fire, the confirmations' scores,
    the fresh 100 episodes of best.pt and best_averaged.pt, and the share of later epochs at
    the threshold; then the rule of docs/defaults.md for this env. Returns the actor chosen."""
    thr, limit = found[0][2]["stop_return"], STEP_LIMITS.get(env_id, 150_000)
    rows, fired, served = [], {a: [] for a in ACTORS}, {a: 0 for a in ACTORS}
    held = {a: [0, 0] for a in ACTORS}  # epochs at the threshold after the first, and all of them
    old = []
    for run, data, cfg in found:
        keep = data["TotalEnvInteracts"] <= limit
        d = {k: v[keep] for k, v in data.items()}
        x, seed = d["TotalEnvInteracts"], cfg["seed"]
        ref = os.path.join(reference, f"td3-{env_id}_s{seed}", "progress.txt")
        same = "no committed run"
        if os.path.exists(ref):
            r = read_table(ref)
            cols = [c for c in r if c != "Time"]
            n = min(len(r["Epoch"]), len(d["Epoch"]))
            same = "equal" if all(np.array_equal(r[c][:n], data[c][:n], equal_nan=True)
                                  for c in cols) else "DIFFERENT"
            same += f" ({n} rows)"
        i_old = first_run_of(d["AverageTestEpRet"] >= thr, STOP_EPOCHS)
        old.append(int(x[i_old]) if i_old is not None else None)
        line = [f"seed {seed}: training columns vs committed: {same}; old stop: "
                + (f"{int(x[i_old]):,}" if i_old is not None else "never")]
        for actor, (test, confirm) in ACTORS.items():
            ok = (d[test] >= thr) & (d[confirm] >= thr)
            i = int(np.argmax(ok)) if ok.any() else None
            fired[actor].append(int(x[i]) if i is not None else None)
            tried = [f"{int(x[j]) // 1000}k {d[confirm][j]:.0f}" for j in np.flatnonzero(
                ~np.isnan(d[confirm]))]
            hit = np.flatnonzero(d[test] >= thr)
            after = d[test][hit[0] + 1:] >= thr if len(hit) else np.array([])
            held[actor] = [held[actor][0] + int(after.sum()), held[actor][1] + len(after)]
            judged = cfg.get("test_actor", "live")
            fresh = fresh_score(run, "best" if actor == judged else f"best_{actor}",
                                int(d["Epoch"][i]) if i is not None else None)
            served[actor] += i is not None and fresh is not None and fresh >= thr
            line.append(f"    {actor:>8}: confirmed stop at " + (f"{int(x[i]):,} ({d[confirm][i]:.1f} "
                        f"over 100 episodes)" if i is not None else f"never by {limit:,}")
                        + f"; confirmations (step, 100-episode mean): {', '.join(tried) or 'none'}"
                        + f"; after its first 10-episode {thr:g}: {int(after.sum())} of {len(after)} "
                        f"epochs at it" + (f"; its best.pt-style file on 100 fresh episodes: {fresh:.1f}"
                                           if fresh is not None and i is not None else ""))
        rows.append("\n".join(line))
    print(f"judging {env_id}, {len(rows)} runs, first {limit:,} env steps, threshold {thr:g}:")
    print("\n".join(rows))
    never = limit + 5000  # a seed that never fires counts as later than the limit, and finite
    med = lambda v: statistics.median([s if s is not None else never for s in v])  # noqa
    count = {a: sum(s is not None for s in v) for a, v in fired.items()}
    print(f"  (medians count a seed that never fires as {never:,})")
    for actor, v in fired.items():
        print(f"  {actor}: the confirmed stop fires on {count[actor]} of {len(v)} seeds by {limit:,}, "
              f"median {steps(med(v) if med(v) <= limit else None, limit)}; with a file at "
              f"{thr:g} or more on 100 fresh episodes on {served[actor]}; after each seed's first "
              f"10-episode {thr:g}, {held[actor][0]} of {held[actor][1]} later epochs at it")
    n_old = sum(s is not None for s in old)
    print(f"  old stop (3 in a row): fires on {n_old} of {len(old)}, "
          f"median {steps(med(old) if med(old) <= limit else None, limit)}")
    need = JUDGING_SEEDS.get(env_id)
    late = "" if need is None or len(rows) >= need else \
        f"; provisional: the rule decides on {need} seeds, {len(rows)} are in"
    if env_id == "BipedalWalker-v3":
        avg = count["averaged"] > count["live"] or (count["averaged"] == count["live"] and
                                                    med(fired["averaged"]) + 5000 <= med(fired["live"]))
        chosen = "averaged" if avg else "live"
        stays = "stays" if count[chosen] >= n_old else "does not stay"
        print(f"  rule: test_actor {chosen}; the confirmation {stays} the default stop ({count[chosen]} against the old stop's {n_old}); goal (a stop by "
              f"{limit:,} with a file at {thr:g}+ on 100 fresh episodes on 8 of 10): {served[chosen]} "
              f"of {len(rows)}" + late)
        return chosen
    if env_id == "LunarLanderContinuous-v3":
        actor = walker_actor or "live"
        verdict = ("is supported" if served[actor] >= LANDER_NEEDS else "is not supported"
                   if served[actor] + need - len(rows) < LANDER_NEEDS else "is undecided")
        print(f"  rule ({actor} actor{'' if walker_actor else ', no walker runs here to choose it'}):"
              f" a stop at {thr:g} {verdict} ({served[actor]} of {len(rows)} seeds served, "
              f"{LANDER_NEEDS} of {need} needed)" + late)
    return walker_actor


# ------------------------------------------------------------------------------------------
# How long the bare command takes (README's quickstart): --times
# ------------------------------------------------------------------------------------------
def newcomer_times(results=os.path.join(ROOT, "results")):
    """README's minutes, from the committed files: BipedalWalker-v3 seeds 10-19's minutes (the
    Time column) to their first epoch at 300 (results/<env>/) and to the judged stop
    (results/judging/<env>/: the first epoch whose live actor's test and confirmation both
    held 300), their env steps/s, seed 0's first step at 300, and one run alone at the
    loop rate bench_devices.py measured with 2 threads (results/benchmarks/)."""
    env, first, solved, rates = "BipedalWalker-v3", [], [], []
    for seed in range(10, 20):
        data, _ = load(os.path.join(results, env, f"td3-{env}_s{seed}"))
        m = measure(data, 300.0)
        rates.append(data["TotalEnvInteracts"][-1] / data["Time"][-1])
        if m["minutes_to"] is not None:
            first.append(m["minutes_to"])
        data, _ = load(os.path.join(results, "judging", f"td3-{env}", f"td3-{env}_s{seed}"))
        held = np.minimum(data["AverageTestEpRet"], data["ConfirmEpRet"]) >= 300  # NaN: False
        if held.any():
            solved.append(data["Time"][np.argmax(held)] / 60)
    seed0_data = load(os.path.join(results, env, f"td3-{env}_s0"))[0]
    seed0 = measure(seed0_data, 300.0)["steps_to"]
    seed0_log = seed0_data["Time"][np.argmax(seed0_data["TotalEnvInteracts"] >= seed0)] / 60
    with open(os.path.join(results, "benchmarks", "bench_devices_2cores.txt")) as f:
        loop = f.read().split("\nloop:")[-1]
    alone = float(loop.split("cpu, 2 threads:")[1].split()[0])
    return dict(first=first, solved=solved, rate=float(np.median(rates)), seed0=seed0,
                alone=alone, seed0_minutes=seed0 / alone / 60, worst_minutes=500_000 / alone / 60,
                seed0_log_minutes=seed0_log)


def print_times():
    t = newcomer_times()
    span = lambda v: f"{min(v):.1f}-{max(v):.1f} minutes, median {statistics.median(v):.1f}"
    print(f"BipedalWalker-v3 seeds 10-19 (two runs at a time, 1 torch thread each, median "
          f"{t['rate']:.0f} env steps/s over a run):")
    print(f"  first epoch at 300: {len(t['first'])} of 10, after {span(t['first'])}")
    print(f"  solved (the live actor's test and 100-episode confirmation at 300, results/"
          f"judging): {len(t['solved'])} of 10, after {span(t['solved'])}")
    print(f"one run alone, 2 threads (bench_devices.py): {t['alone']:.0f} env steps/s; seed 0's "
          f"first 300 at {t['seed0']:,} env steps: {t['seed0_minutes']:.1f} minutes; 500,000 "
          f"env steps: {t['worst_minutes']:.1f} minutes")


if __name__ == "__main__":
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Without --screen it prints the report of every committed result described above "
               "and takes no other option.\n\n" + __doc__.split("\n\n", 1)[1])
    p.add_argument("--screen", action="store_true", help="print the screen of new defaults "
                   "instead of the full report")
    p.add_argument("candidates", nargs="*", metavar="CANDIDATE_DIR",
                   help="with --screen: candidate configurations, one directory each "
                        "(default: every directory in results/screen/)")
    p.add_argument("--baseline", action="append", metavar="DIR",
                   help="with --screen: a directory of the baseline's runs, once per directory "
                        "(default: results/<env>/ of each screened env, or results/screen/"
                        "baseline/ where it holds the env's runs)")
    p.add_argument("--judging", metavar="DIR", help="print the measuring runs of the confirmation "
                   "and the averaged actor under DIR against the committed runs in results/<env>/ instead")
    p.add_argument("--seeds", type=seed_set, metavar="S",
                   help="with --screen: only these seeds, e.g. 10-14 or 0-2,10-19 (default: "
                        "every seed found)")
    p.add_argument("--times", action="store_true", help="print how long README says the bare "
                   "command takes, from the committed runs and benchmark printout, instead")
    args = p.parse_args()
    if args.times:
        print_times()
        sys.exit()
    if args.judging:
        if not os.path.isdir(args.judging):
            p.error(f"{args.judging} is not a directory")
        try:
            judging(args.judging)
        except UserError as e:
            p.error(str(e))
        sys.exit()
    if not args.screen:
        if args.candidates or args.baseline or args.seeds:
            p.error("CANDIDATE_DIR, --baseline and --seeds go with --screen")
        main()
        sys.exit()
    for d in args.candidates + (args.baseline or []):
        if not os.path.isdir(d):
            p.error(f"{d} is not a directory")
    results = os.path.join(ROOT, "results")
    top = os.path.join(results, "screen")
    # The baseline is the defaults the screen started from: results/<env>/, or, for an env whose
    # defaults changed, results/screen/baseline/, and then results/<env>/ holds the final
    # defaults' runs, shown as one more configuration.
    moved = {e for e in STEP_LIMITS if config_runs(os.path.join(top, "baseline"), e, None)}
    envs = [os.path.join(results, e) for e in STEP_LIMITS if os.path.isdir(os.path.join(results, e))]
    baselines = args.baseline or ([d for d in envs if os.path.basename(d) not in moved]
                                  + ([os.path.join(top, "baseline")] if moved else []))
    candidates = args.candidates or (
        (sorted(os.path.join(top, d) for d in os.listdir(top)
                if os.path.isdir(os.path.join(top, d)) and d != "baseline")
         if os.path.isdir(top) else [])
        + [d for d in envs if os.path.basename(d) in moved])
    same = lambda a, b: os.path.realpath(a) == os.path.realpath(b)  # noqa: E731
    candidates = [c for c in candidates if not any(same(c, b) for b in baselines)]
    if not candidates and args.candidates:
        p.error("every CANDIDATE_DIR is also a --baseline")
    screen(baselines, candidates, args.seeds)
