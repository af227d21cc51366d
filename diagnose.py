"""Why does my TD3 not learn? A run's own progress.txt against the committed healthy runs.

    python diagnose.py data/td3-BipedalWalker-v3/td3-BipedalWalker-v3_s0
    python diagnose.py my_port/progress.txt --env BipedalWalker-v3 --plot why.png
    python diagnose.py my_run --reference runs_that_learned/   # an env with no committed runs

The rule, per column at the run's own env steps: the healthy band is the mean of the healthy
runs' values within WINDOW epochs of the step, plus and minus K of their standard deviations
(LossQ and StdQ1Vals as log10, AverageQ1Vals and LossPi as sign(v) log10(1 + |v|), whose spread
grows with their size), so it is wide where the seeds differ and narrow where they agree. A
column has left it when it stays beyond one side for IN_A_ROW epochs, known at the last of
them. Healthy runs: the committed runs named td3-<env>, or --reference; each against the
others gives the false-alarm rate shown. The env's other committed runs (porting mistakes,
ablations) get the same rule, to say which did the same. See
docs/diagnose.md for what it measured and what it cannot see.
"""
import json
import math
import os

import numpy as np

import logger  # progress.txt's one parser
from cli import ArgumentParser, UserError, run_main

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
# Chosen on healthy seeds 0-2 and 10-14, tested on 15-19: benchmarks/check_diagnose.py
WINDOW, K, IN_A_ROW = 1, 3.5, 3
MIN_REFS = 3  # healthy runs with data at a step, for the step to be compared
COLUMNS = ["AverageTestEpRet", "TestEpLen", "AverageEpRet", "EpLen", "AverageQ1Vals",
           "StdQ1Vals", "Q2 - Q1", "LossQ", "LossPi", "TestQBias"]
LOG, SYMLOG = ("LossQ", "StdQ1Vals"), ("AverageQ1Vals", "LossPi")
# The committed variants (exp_name td3-<env>-KEY): what each is, and where to read about it.
VARIANTS = {
    "q2_own_target": ("Q2 regressing onto its own target",
                      "check that both critics regress onto one target (notebook 4)"),
    "column_critics": ("the (B, B) broadcast of (B, 1) critics",
                       "check that every tensor in the target is (B,), not (B, 1) (notebook 4)"),
    "shared_noise": ("one smoothing-noise vector per batch",
                     "check that the target noise is drawn per sample, (B, act_dim) (notebook 4)"),
    "truncation_as_death": ("truncation stored as death",
                            "check that done is terminated, never truncated (notebook 4)"),
    "polyak_as_tau": ("tau passed as --polyak", "check that polyak is 1 - tau (notebook 4)"),
    "authors_defaults": ("the TD3 authors' settings without the reward floor",
                         "check the discount, the learning rates and the reward floor (notebook 4)"),
    "no_twin": ("one critic (trick 1 off)", "check that the target takes the smaller of two critics (notebook 2, trick 1)"),
    "no_delay": ("no policy delay (trick 2 off)", "check that the actor updates once per policy_delay critic updates (notebook 2, trick 2)"),
    "no_smoothing": ("no target smoothing (trick 3 off)", "check that clipped noise is added to the target action (notebook 2, trick 3)"),
    "no_twin-no_delay-no_smoothing": ("DDPG (all three tricks off)", "check each of the three tricks (notebook 2)"),
}


def load_run(path):
    """A run directory or its progress.txt: the COLUMNS it has (Spinning Up's names too) and
    TotalEnvInteracts, the ones it lacks, and config.json's env, exp_name and max_ep_len."""
    f = os.path.join(path, "progress.txt") if os.path.isdir(path) else path
    if not os.path.isfile(f):
        raise UserError(f"{path} does not exist" if not os.path.exists(path)
                        else f"no progress.txt in {path}")
    try:
        raw = logger.read_table(f)
    except ValueError as e:
        raise UserError(str(e)) from None
    data = {k: raw.get(k, raw.get(k.replace("Average", ""))) for k in
            ["TotalEnvInteracts", "AverageQ2Vals"] + COLUMNS}
    if data["AverageQ1Vals"] is not None and data["AverageQ2Vals"] is not None:
        data["Q2 - Q1"] = data["AverageQ2Vals"] - data["AverageQ1Vals"]
    data = {k: v for k, v in data.items() if v is not None and k != "AverageQ2Vals"}
    if "TotalEnvInteracts" not in data or len(data) == 1:
        raise UserError(f"{f} has no TotalEnvInteracts column or none of {', '.join(COLUMNS)}")
    if not len(data["TotalEnvInteracts"]):
        raise UserError(f"{f} has no rows")
    try:
        with open(os.path.join(os.path.dirname(f), "config.json")) as fh:
            cfg = json.load(fh)
    except (OSError, ValueError):
        cfg = {}
    env = cfg.get("env_id")
    if cfg.get("env_kwargs"):  # gym.make("LunarLander-v3", continuous=True): the lander's runs
        from cli import registered_as
        env = registered_as(env, cfg["env_kwargs"], sorted(os.listdir(RESULTS))
                            if os.path.isdir(RESULTS) else [])
    return dict(path=os.path.dirname(f) or ".", data=data, env=env,
                exp_name=cfg.get("exp_name"), max_ep_len=cfg.get("max_ep_len"),
                missing=[c for c in COLUMNS if c not in data])


def same_run(a, b):
    """The same training run (committed twice, one copy stopped early): equal first rows."""
    n = min(len(a["data"]["TotalEnvInteracts"]), len(b["data"]["TotalEnvInteracts"]), 3)
    return all(np.array_equal(a["data"][c][:n], b["data"][c][:n], equal_nan=True)
               for c in a["data"] if c in b["data"])


def runs_under(dirs, env=None):
    """Every run below ``dirs`` (of ``env`` if given), each training run once: its longest copy."""
    for d in dirs:
        if not os.path.isdir(d):
            raise UserError(f"{d} is not a directory")
    runs = sorted((load_run(root) for top in dirs for root, _, files in sorted(os.walk(top))
                   if "progress.txt" in files), key=lambda r: -len(r["data"]["TotalEnvInteracts"]))
    out = []
    for r in runs:
        if (env is None or r["env"] == env) and not any(same_run(r, o) for o in out):
            out.append(r)
    return sorted(out, key=lambda r: r["path"])


def variant(run, env):
    """'TD3' for a run named td3-<env>, KEY for td3-<env>-KEY, else the run's name."""
    name = run["exp_name"] or os.path.basename(run["path"])
    return "TD3" if name == f"td3-{env}" else name.replace(f"td3-{env}-", "")


def committed(env, results=RESULTS):
    """The committed runs of ``env``: (the healthy TD3 runs, the mistakes and ablations).
    results/screen/ is left out (its runs are named td3-<env> but try other defaults), and so are
    results/judging/ (the same runs as results/<env>/, with the judging columns) and
    results/heldout/ (healthy runs kept out of the references, to test the rule on)."""
    apart = [os.path.abspath(os.path.join(results, d)) for d in ("screen", "judging", "heldout")]
    runs = [r for r in runs_under([results], env)
            if not any(os.path.commonpath([os.path.abspath(r["path"]), d]) == d for d in apart)]
    return ([r for r in runs if variant(r, env) == "TD3"],
            [r for r in runs if variant(r, env) != "TD3"])


# ------------------------------------------------------------------------------------------
# The rule (notebook 4 and benchmarks/check_diagnose.py import it from here)
# ------------------------------------------------------------------------------------------
def _scale(col, v):
    if col in SYMLOG:
        return np.sign(v) * np.log10(1 + np.abs(v))
    return np.log10(np.maximum(v, 1e-12)) if col in LOG else v


def _unscale(col, v):
    if col in SYMLOG:
        return np.sign(v) * (10 ** np.abs(v) - 1)
    return 10.0 ** v if col in LOG else v


def _num(v):
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def band(x, refs, col):
    """At each env step of ``x``: the healthy band's low and high limits (as the column's own
    values) and how many healthy runs have data there. The band is the mean of the healthy
    values within WINDOW epochs of the step, +- K standard deviations, on the column's scale."""
    n, total, total2, count = np.zeros(len(x), int), np.zeros(len(x)), np.zeros(len(x)), np.zeros(len(x))
    for r in (r for r in refs if col in r["data"]):
        xr, v = r["data"]["TotalEnvInteracts"], _scale(col, r["data"][col])
        w = np.median(np.diff(xr)) if len(xr) > 1 else xr[0]
        near = (np.abs(xr[None, :] - x[:, None]) <= WINDOW * w + 1e-9) & \
            (x <= xr[-1] + w / 2)[:, None] & ~np.isnan(v)[None, :]
        vals = np.where(near, v, 0.0)
        total, total2, count = total + vals.sum(1), total2 + (vals ** 2).sum(1), count + near.sum(1)
        n += near.any(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / count
        sd = np.sqrt(np.maximum(total2 - count * mean ** 2, 0) / (count - 1))
    lo, hi = mean - K * sd, mean + K * sd
    return _unscale(col, lo), _unscale(col, hi), n


def findings(run, refs):
    """The columns of ``run`` that left the healthy band, earliest known first: dicts with
    col, side ('above'/'below'), start and known (env steps), limit (the crossed limit at the
    start), size and share (words)."""
    x, out = run["data"]["TotalEnvInteracts"], []
    for col in [c for c in COLUMNS if c in run["data"]]:
        lo, hi, n = band(x, refs, col)
        raw, ok = run["data"][col], n >= MIN_REFS
        v = _scale(col, raw)
        with np.errstate(invalid="ignore"):
            sides = (("above", ok & (v > _scale(col, hi)), hi), ("below", ok & (v < _scale(col, lo)), lo))
        for side, beyond, edge in sides:
            row = np.convolve(beyond, np.ones(IN_A_ROW), "valid") == IN_A_ROW
            if not row.any():
                continue
            i = int(np.argmax(row))
            j, r, e = i + IN_A_ROW, raw[i:i + IN_A_ROW], edge[i:i + IN_A_ROW]
            size = (f"{_num(np.median(np.maximum(r / e, e / r)))}x " if col in LOG else
                    f"{_num(np.median(np.abs(r - e)))} ") + side
            later = beyond[i:][ok[i:]]
            out.append(dict(col=col, side=side, start=int(x[i]), known=int(x[j - 1]),
                            limit=float(edge[i]), value=float(raw[i]), size=size,
                            share=f"outside in {later.sum()} of {len(later)} epochs"))
    return sorted(out, key=lambda f: (f["known"], COLUMNS.index(f["col"])))


def upper_bound(k, n, confidence=0.95):
    """The exact one-sided upper bound on a rate seen k times in n (Clopper-Pearson)."""
    if k >= n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(60):  # bisection on P(X <= k | p) = 1 - confidence
        p = (lo + hi) / 2
        cdf = sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k + 1))
        lo, hi = (p, hi) if cdf > 1 - confidence else (lo, p)
    return hi


def false_alarms(refs, against=None):
    """Each healthy run against the others (or, given ``against``, each of ``refs`` against
    those): ({column: runs it fired on}, runs that fired in any column, runs)."""
    fired = [{f["col"] for f in findings(r, against if against is not None
                                          else refs[:i] + refs[i + 1:])}
             for i, r in enumerate(refs)]
    return {c: sum(c in f for f in fired) for c in COLUMNS}, sum(map(bool, fired)), len(refs)


def pattern(run, refs, fs):
    """(name, words) for the test episodes from the step the test return left the band
    below: most of them 'falls at once' (under a tenth of the time limit), 'stands to the time
    limit' (95% of it or more) or 'hovers' (in between). (None, '') if it did not leave."""
    ret = [f for f in fs if f["col"] == "AverageTestEpRet" and f["side"] == "below"]
    if not ret or "TestEpLen" not in run["data"]:
        return None, ""
    d, last = run["data"], max(r["data"]["TotalEnvInteracts"][-1] for r in refs)
    keep = (d["TotalEnvInteracts"] >= ret[0]["start"]) & (d["TotalEnvInteracts"] <= last)
    ln, ret_ = d["TestEpLen"][keep], f"{np.median(d['AverageTestEpRet'][keep]):.1f}"
    lens = np.concatenate([r["data"].get("TestEpLen", []) for r in refs])
    limit = run["max_ep_len"] or max(lens.max(initial=0), d["TestEpLen"].max())
    if lens.size and lens.min() >= 0.95 * limit:  # every healthy episode runs to the limit
        return "stays low", f"stays low, test return {ret_} (median); no episode ends early here"
    kinds = np.where(ln < 0.1 * limit, 0, np.where(ln >= 0.95 * limit, 2, 1))
    k = int(np.bincount(kinds, minlength=3).argmax())
    name = ["falls at once", "hovers", "stands to the time limit"][k]
    return name, (f"{name}: from {ret[0]['start']:,} steps, in {(kinds == k).sum()} of {len(ln)} "
                  f"epochs; test episodes last {np.median(ln):.0f} of {limit:.0f} steps, test "
                  f"return {ret_} (medians)")


def diagnose(run, refs):
    """Findings, pattern (name, words) and signature: the set of (column, side) and pattern."""
    fs = findings(run, refs)
    pat = pattern(run, refs, fs)
    return dict(findings=fs, pattern=pat, signature={(f["col"], f["side"]) for f in fs}
                | ({("pattern", pat[0])} if pat[0] else set()))


def compare(run, refs, others, env):
    """The run's diagnosis, the signatures of the other committed runs by variant (the run
    itself left out; only the columns the run has), the variant whose seeds overlap its
    signature most (intersection over union, averaged over its seeds) or None, and every
    variant's overlap."""
    me, groups = diagnose(run, refs), {}
    for o in others:
        if not same_run(o, run):
            groups.setdefault(variant(o, env), []).append({s for s in diagnose(o, refs)[
                "signature"] if s[0] in run["data"] or s[0] == "pattern"})
    score = {v: np.mean([len(me["signature"] & s) / len(me["signature"] | s) for s in sigs])
             for v, sigs in groups.items() if me["signature"]}
    best = max(score, key=lambda v: (score[v], len(groups[v])), default=None)
    return me, groups, (best if best and score[best] > 0 else None), score


# ------------------------------------------------------------------------------------------
# The report, the figure, the command line
# ------------------------------------------------------------------------------------------
def report(run, refs, others, env, shown=4):
    """The lines diagnose prints: the first ``shown`` findings in full, then the rest briefly."""
    me, groups, best, score = compare(run, refs, others, env)
    x = run["data"]["TotalEnvInteracts"].astype(int)
    seen = x[band(x, refs, next(c for c in COLUMNS if c in run["data"]))[2] >= MIN_REFS]
    if not len(seen):
        raise UserError(f"no step of {run['path']} has data in {MIN_REFS} healthy runs")
    per_col, any_col, n = false_alarms(refs) if len(refs) > MIN_REFS else ({}, None, len(refs))
    rate = lambda k: (f"{k} of {n} (95% upper bound {upper_bound(k, n):.0%})"
                      if any_col is not None else f"not measurable with {n} runs")
    name = lambda v: VARIANTS.get(v, (v,))[0]
    out = [f"{run['path']}: {env}, {len(x)} epochs, {x[0]:,} to {x[-1]:,} env steps",
           f"compared with {n} healthy TD3 runs at {seen[0]:,} to {seen[-1]:,} env steps (band: "
           f"mean +- {K:g} sd within {WINDOW} epochs); false alarms on them, each against the "
           f"others: {rate(any_col)}"]
    if run["missing"]:
        out.append(f"not in this file, so not compared: {', '.join(run['missing'])}")
    if not me["findings"]:
        return out + [f"every column inside the healthy band "
                      f"({len(COLUMNS) - len(run['missing'])} columns, {len(seen)} epochs)"]
    for f in me["findings"][:shown]:
        who = sorted(((sum((f["col"], f["side"]) in s for s in sigs), len(sigs), v)
                      for v, sigs in groups.items()), key=lambda t: (-t[0] / t[1], -t[1]))
        who = [f"{name(v)} ({k} of {m} seeds)" for k, m, v in who if k]
        word = "upper" if f["side"] == "above" else "lower"
        out += [f"{f['col']} {f['side']} the healthy band from {f['start']:,} steps (known at "
                f"{f['known']:,}): {_num(f['value'])} where the band's {word} limit was "
                f"{_num(f['limit'])}, {f['size']} it at first; {f['share']} from then on",
                "    committed runs that did this: " + (", ".join(who) or "none")]
    if me["findings"][shown:]:
        out.append("also left: " + "; ".join(f"{f['col']} {f['side']} (known at {f['known']:,})"
                                              for f in me["findings"][shown:]))
    out.append("test episodes: " + (me["pattern"][1] or "the test return stayed in the band"))
    if best:
        k = sum(s == me["signature"] for s in groups[best])
        out.append(f"closest committed pattern: {name(best)}, matching {score[best]:.0%} of this "
                   f"run's signs (averaged over its {len(groups[best])} seeds; {k} with exactly "
                   f"these). A resemblance, not a cause"
                   + (f": {VARIANTS[best][1]}." if best in VARIANTS else "."))
    else:
        out.append("no committed run shows these signs" if groups else
                   f"no committed mistake or ablation run of {env} to compare with")
    return out


def draw(run, refs, fs, out):
    """The run's test return and each column that left the band (dashed: where it is known),
    over the healthy band (grey), the run's line drawn by plot.py."""
    import matplotlib  # here, not at the top: only --plot draws, and it needs the Agg backend
    matplotlib.use("Agg")  # chosen before pyplot (and plot.py) are imported
    import matplotlib.pyplot as plt
    import plot
    cols = list(dict.fromkeys(["AverageTestEpRet"] + [f["col"] for f in fs]))
    x = run["data"]["TotalEnvInteracts"]
    rows, per_row = (len(cols) + 2) // 3, min(3, len(cols))
    fig, axes = plt.subplots(rows, per_row, figsize=(5.5 * per_row, 4 * rows), squeeze=False)
    for ax, col in zip(axes.flat, cols):
        lo, hi, n = band(x, refs, col)
        ok = n >= MIN_REFS
        ax.fill_between(x[ok], lo[ok], hi[ok], color="0.8", label=f"healthy band ({len(refs)} runs)")
        plot.plot_value(ax, [dict(path=run["path"], exp_name="this run", data=run["data"])], col)
        for f in fs:
            if f["col"] == col:
                ax.axvline(f["known"], color="k", linestyle="--", linewidth=1)
        ax.set_yscale("log" if col in LOG else "linear")
        ax.set_title(col)
    for ax in axes.flat[len(cols):]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main(argv=None):
    p = ArgumentParser(description="Which progress.txt columns of a TD3 run left the band of "
                       "the committed healthy runs, and which committed runs did the same.")
    p.add_argument("run", help="a run directory or its progress.txt")
    p.add_argument("--env", help="the env id, when the run has no config.json that names it")
    p.add_argument("--reference", nargs="+", metavar="DIR",
                   help="healthy runs to compare with, instead of the committed ones")
    p.add_argument("--plot", metavar="OUT.png", help="draw the columns that left the band, over it")
    args = p.parse_args(argv)
    if args.plot and not os.path.isdir(os.path.dirname(os.path.abspath(args.plot))):
        raise UserError(f"--plot {args.plot}: the directory {os.path.dirname(args.plot)} does not exist")
    run = load_run(args.run)
    if run["env"] and args.env and run["env"] != args.env:
        raise UserError(f"{args.run} is a {run['env']} run (its config.json), not {args.env}")
    env = run["env"] or args.env
    if not env:
        raise UserError(f"{args.run} has no config.json naming its env; give --env ENV_ID")
    refs, others = committed(env) if os.path.isdir(RESULTS) else ([], [])
    if args.reference:
        given = runs_under(args.reference)
        refs = [r for r in given if r["env"] in (None, env)]
        if len(refs) < len(given):  # another env's runs are no reference for this one
            other = sorted({r["env"] for r in given} - {None, env})
            print(f"left out {len(given) - len(refs)} of the --reference runs: they are of "
                  f"{', '.join(other)}, not {env}")
    refs = [r for r in refs if not same_run(r, run)]
    if len(refs) < MIN_REFS:
        raise UserError(f"{len(refs)} healthy runs of {env} to compare with; {MIN_REFS} or "
                        f"more are needed: give --reference DIR ...")
    print("\n".join(report(run, refs, others, env)))
    if args.plot:
        draw(run, refs, findings(run, refs), args.plot)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    run_main(main)
