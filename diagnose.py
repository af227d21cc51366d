"""Why does my TD3 not learn? A run's own progress.txt against the committed healthy runs.

    python diagnose.py data/td3-BipedalWalker-v3/td3-BipedalWalker-v3_s0
    python diagnose.py my_port/progress.txt --env BipedalWalker-v3 --plot why.png
    python diagnose.py my_run --reference runs_that_learned/   # an env with no committed runs

First: is this run consistent with correct TD3? Its distance to the nearest healthy run (the
whole curve, every column at once, in healthy spreads) against the largest such distance among
the healthy runs, each against the others (class Consistency). Only for a run that is not:
which committed mistake or ablation it resembles, as a share of its distance to correct TD3;
where it differs, by the band rule: per column at the run's own env steps, the mean of the
healthy runs' values within WINDOW epochs, plus and minus K of their standard deviations
(LossQ and StdQ1Vals as log10, AverageQ1Vals and LossPi as sign(v) log10(1 + |v|), whose spread
grows with their size); a column has left it when it stays beyond one side for IN_A_ROW
epochs, known at the last of them; and what its test episodes did, in the env's words.
Healthy runs: the committed runs named td3-<env>, or --reference. See docs/diagnose.md for what
each rule measured and what it cannot see.
"""
import math
import os
import warnings

import numpy as np

import variants
from run.directory import read_config
from run.errors import ArgumentParser, UserError, run_main

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
# Chosen on healthy seeds 0-2 and 10-14, tested on 15-19: benchmarks/check_diagnose.py
WINDOW, K, IN_A_ROW = 1, 3.5, 3
MIN_REFS = 3  # healthy runs with data at a step, for the step to be compared
COLUMNS = ["AverageTestEpRet", "TestEpLen", "AverageEpRet", "EpLen", "AverageQ1Vals",
           "StdQ1Vals", "Q2 - Q1", "LossQ", "LossPi", "TestQBias"]
LOG, SYMLOG = ("LossQ", "StdQ1Vals"), ("AverageQ1Vals", "LossPi")
# The committed variants by their run names' suffix (td3-<env>-KEY): words from variants.py.
VARIANTS = {variants.run_suffix(name): (v.label, variants.advice(name))
            for name, v in variants.TABLE.items() if v.kind != "td3"}


def load_run(path):
    """A run directory or its progress.txt: the COLUMNS it has (Spinning Up's names too) and
    TotalEnvInteracts, the ones it lacks, and config.json's env, exp_name and max_ep_len."""
    f = os.path.join(path, "progress.txt") if os.path.isdir(path) else path
    if not os.path.isfile(f):
        raise UserError(f"{path} does not exist" if not os.path.exists(path)
                        else f"no progress.txt in {path}")
    from plot import read_table  # here: matplotlib only once a run is read (fast --help)
    raw = read_table(f)
    data = {k: raw.get(k, raw.get(k.replace("Average", ""))) for k in
            ["TotalEnvInteracts", "AverageQ2Vals"] + COLUMNS}
    if data["AverageQ1Vals"] is not None and data["AverageQ2Vals"] is not None:
        data["Q2 - Q1"] = data["AverageQ2Vals"] - data["AverageQ1Vals"]
    data = {k: v for k, v in data.items() if v is not None and k != "AverageQ2Vals"}
    if "TotalEnvInteracts" not in data or len(data) == 1:
        raise UserError(f"{f} has no TotalEnvInteracts column or none of {', '.join(COLUMNS)}")
    if not len(data["TotalEnvInteracts"]):
        raise UserError(f"{f} has no rows")
    if np.any(np.diff(data["TotalEnvInteracts"]) <= 0):
        raise UserError(f"{f}: TotalEnvInteracts does not rise from row to row (rows appended "
                        f"twice?); diagnose reads one run's epochs in order")
    cfg = read_config(os.path.dirname(f) or ".", required=False)
    env = cfg.get("env_id")
    if cfg.get("env_kwargs"):  # gym.make("LunarLander-v3", continuous=True): the lander's runs
        env = registered_as(env, cfg["env_kwargs"], sorted(os.listdir(RESULTS))
                            if os.path.isdir(RESULTS) else [])
    return dict(path=os.path.dirname(f) or ".", data=data, env=env,
                exp_name=cfg.get("exp_name"), max_ep_len=cfg.get("max_ep_len"),
                seed=cfg.get("seed"), missing=[c for c in COLUMNS if c not in data])


def registered_as(env_id, env_kwargs, known):
    """The id among ``known`` that a config.json's env (its id and arguments) is, as run/envs.py's
    env_key finds it, with the same episode limit: LunarLander-v3 with continuous=True is
    LunarLanderContinuous-v3. An env whose arguments make no known env gets a name of its
    own, ``BipedalWalker-v3(hardcore=True)``, so that no other env's runs stand for it."""
    if not env_kwargs:
        return env_id
    import dataclasses
    import gymnasium as gym  # here: diagnose.py starts without gymnasium
    from run.envs import spec_key
    own = f"{env_id}({', '.join(f'{k}={v!r}' for k, v in sorted(env_kwargs.items()))})"
    try:
        spec = gym.spec(env_id)
    except gym.error.Error:
        return own
    kwargs = {k: v for k, v in env_kwargs.items() if k != "max_episode_steps"}
    match = spec_key(dataclasses.replace(spec, kwargs={**spec.kwargs, **kwargs}), known)
    limit = env_kwargs.get("max_episode_steps", spec.max_episode_steps)
    return match if match and gym.registry[match].max_episode_steps == limit else own


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


def false_alarms(refs, against=None):
    """Each healthy run against the others (or, given ``against``, each of ``refs`` against
    those): ({column: runs it fired on}, runs that fired in any column, runs)."""
    fired = [{f["col"] for f in findings(r, against if against is not None
                                          else refs[:i] + refs[i + 1:])}
             for i, r in enumerate(refs)]
    return {c: sum(c in f for f in fired) for c in COLUMNS}, sum(map(bool, fired)), len(refs)


# What a low-return test episode's length says, per env: (ends within a tenth of the time
# limit, ends in between, runs to 95% of it or more), each with what it means; a walker whose
# episodes end in between with a return of 0 or more walks (WALKS), else it fell.
EPISODES = {
    "BipedalWalker": (("falls at once", "the walker falls within its first steps: no balance learned"),
                      ("falls midway", "the walker moves but falls before the end of the course"),
                      ("stands to the time limit", "the walker stays up but does not reach the "
                       "end: it learned not to fall (-100), not to walk")),
    "LunarLander": (("crashes at once", "the lander crashes within its first steps"),
                    ("ends midway", "the lander comes down before the time limit, with a low "
                     "return: it crashes, or lands badly"),
                    ("hovers", "the lander stays up to the time limit: it learned to avoid the "
                     "crash's -100, not to land")),
}
WALKS = ("walks, ends midway", "the walker walks and its episodes end before the time limit: it "
         "reaches the end of the course, or falls late (the return says how often)")
ANY_ENV = (("ends at once", "test episodes end within their first steps"),
           ("ends midway", "test episodes end before the time limit, with a low return"),
           ("runs to the time limit", "test episodes run to the time limit with a low return"))


def pattern(run, refs, fs, env=None):
    """(name, words, kind) for the test episodes from the step the test return left the band
    below, up to the last step the band compares: most of them ending within a tenth of the
    time limit (kind 0), running to 95% of it or more (2), or in between (1), named in the
    words of ``env``'s EPISODES; kind 'low' where every healthy episode runs to the limit.
    (None, '', None) if the return did not leave, or the file has no TestEpLen."""
    ret = [f for f in fs if f["col"] == "AverageTestEpRet" and f["side"] == "below"]
    if not ret or "TestEpLen" not in run["data"]:
        return None, "", None
    d = run["data"]
    last = sorted(r["data"]["TotalEnvInteracts"][-1] for r in refs)[-min(MIN_REFS, len(refs))]
    keep = (d["TotalEnvInteracts"] >= ret[0]["start"]) & (d["TotalEnvInteracts"] <= last)
    ln, median_ret = d["TestEpLen"][keep], float(np.median(d["AverageTestEpRet"][keep]))
    lens = np.concatenate([r["data"].get("TestEpLen", []) for r in refs])
    limit = run["max_ep_len"] or max(lens.max(initial=0), d["TestEpLen"].max())
    if lens.size and lens.min() >= 0.95 * limit:  # every healthy episode runs to the limit
        return ("stays low", f"stays low, test return {median_ret:.1f} (median); no episode "
                "ends early here", "low")
    kinds = np.where(ln < 0.1 * limit, 0, np.where(ln >= 0.95 * limit, 2, 1))
    k = int(np.bincount(kinds, minlength=3).argmax())
    env = env or run["env"] or ""
    name, meaning = next((w for key, w in EPISODES.items() if env.startswith(key)), ANY_ENV)[k]
    if env.startswith("BipedalWalker") and k == 1 and median_ret >= 0:
        name, meaning = WALKS
    return name, (f"{name}: from {ret[0]['start']:,} steps, in {(kinds == k).sum()} of {len(ln)} "
                  f"epochs; test episodes last {np.median(ln):.0f} of {limit:.0f} steps, test "
                  f"return {median_ret:.1f} (medians): {meaning}"), k


def diagnose(run, refs, env=None):
    """The band rule's findings on ``run`` and its test episodes' pattern (name, words, kind)."""
    fs = findings(run, refs)
    return dict(findings=fs, pattern=pattern(run, refs, fs, env))


# ------------------------------------------------------------------------------------------
# The first question: is this run consistent with correct TD3? (docs/diagnose.md, "The
# consistency rule"). The whole curve and every column at once, against how far each healthy
# run lies from the others, so that a slow healthy seed reads as the healthy run it resembles.
# ------------------------------------------------------------------------------------------
CAP = 10.0  # the most one step of one column adds to a distance, in healthy spreads


def curves(run, steps):
    """{column: the run's values at ``steps`` on the column's scale}: its own value where it
    logged that step, else interpolated between its neighbouring epochs (a run with another
    epoch length), NaN outside its range; a column with no value at ``steps`` is left out."""
    d, out = run["data"], {}
    x = d["TotalEnvInteracts"]
    for c in (c for c in COLUMNS if c in d):
        v = _scale(c, d[c].astype(float))
        ok = ~np.isnan(v)
        if not ok.any():
            continue
        at = np.interp(steps, x[ok], v[ok], left=np.nan, right=np.nan)
        own = np.searchsorted(x, steps).clip(0, len(x) - 1)
        at = np.where(x[own] == steps, v[own], at)  # exactly what it logged, NaN included
        if not np.all(np.isnan(at)):
            out[c] = at
    return out


class Consistency:
    """The healthy runs ``refs`` of one env, ready to score a run. ``steps``: the env steps
    every healthy run logged; ``spread``: per column, the median over those steps of the
    healthy runs' standard deviation across runs (a column whose spread is 0, as a fixed
    episode length's, is left out: it cannot be measured in spreads); ``cap``: the most one
    step of one column adds to a distance."""

    def __init__(self, refs, cap=CAP):
        self.refs, self.cap = refs, cap
        steps = set.intersection(*(set(r["data"]["TotalEnvInteracts"]) for r in refs))
        if not steps:
            raise UserError("the healthy runs share no logged env step (other epoch lengths?): "
                            "give --reference runs logged at the same steps")
        self.steps = np.array(sorted(steps), float)
        self.tables = [curves(r, self.steps) for r in refs]
        self.spread = {}
        for c in COLUMNS:
            vals = [t[c] for t in self.tables if c in t]
            if len(vals) >= 2:
                with np.errstate(invalid="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # a step all NaN
                    spread = float(np.nanmedian(np.nanstd(vals, axis=0, ddof=1)))
                if np.isfinite(spread) and spread > 0:
                    self.spread[c] = spread

    def per_column(self, a, b, columns=None):
        """{column: the mean over the steps both tables have of |a - b| / spread, each step's
        term capped}, for the columns both have (and in ``columns`` if given)."""
        out = {}
        for c in COLUMNS:
            if c in a and c in b and c in self.spread and (columns is None or c in columns):
                terms = np.minimum(np.abs(a[c] - b[c]) / self.spread[c], self.cap)
                missing = np.isnan(terms)  # a step one of the two did not log
                n = missing.size - np.count_nonzero(missing)
                if n:
                    # np.nanmean's own sum and count, without its overhead: a check of the
                    # held-out runs takes ~10^5 of these
                    terms[missing] = 0.0
                    out[c] = float(terms.sum() / n)
        return out

    def distance(self, a, b, columns=None):
        """Two tables' distance: the mean over their columns of per_column. NaN when they
        share no column."""
        per = self.per_column(a, b, columns)
        return float(np.mean(list(per.values()))) if per else float("nan")

    def nearest(self, table, seed=None, columns=None):
        """(distance, healthy run) to the nearest healthy run not of ``seed`` (a run and a
        healthy run of one seed share their first random steps); if every healthy run is of
        that seed, the nearest of them all."""
        pairs = [(t, r) for t, r in zip(self.tables, self.refs)
                 if seed is None or r.get("seed") != seed] or list(zip(self.tables, self.refs))
        return min(((self.distance(table, t, columns), r) for t, r in pairs), key=lambda p: p[0])

    def judge(self, run):
        """The verdict on ``run``: its score (distance to the nearest healthy run), that run,
        the limit (the largest score among the healthy runs, each against the others, on the
        steps and columns ``run`` has), the healthy run at the limit, every healthy score,
        the steps and columns compared, and whether it is consistent (score <= limit)."""
        me = {c: v for c, v in curves(run, self.steps).items() if c in self.spread}
        if not me:
            raise UserError(f"{run['path']} shares no compared column with the healthy runs")
        have = ~np.all([np.isnan(v) for v in me.values()], axis=0)
        cut = [{c: np.where(np.isnan(me[c]), np.nan, t[c]) for c in me if c in t}
               for t in self.tables]  # the healthy runs where the run has each column
        seed = run.get("seed")
        score, near = self.nearest(me, seed)
        pairs = [[self.distance(cut[i], t) if j != i else np.inf for j, t in enumerate(self.tables)]
                 for i in range(len(self.refs))]
        healthy = [min(row) for row in pairs]
        i = int(np.argmax(healthy))
        diameter = max(d for row in pairs for d in row if np.isfinite(d))
        return dict(score=score, nearest=near, limit=healthy[i], at_limit=self.refs[i],
                    healthy=healthy, diameter=diameter, steps=self.steps[have], columns=list(me),
                    table=me, consistent=score <= healthy[i], seed=seed)

    def verdict(self, run, others, env):
        """judge(run), with the verdict of docs/diagnose.md's registered rule: "consistent"
        (no farther from its nearest healthy run than the limit); else "not consistent" when
        it is closer to the runs of a committed mistake or ablation than to correct TD3, or
        farther from its nearest healthy run than the two most different healthy runs lie
        apart (the diameter); else "unusual": beyond the limit, like no committed mistake,
        within the healthy runs' own spread, which is where slow healthy seeds land."""
        v = self.judge(run)
        v["alike"] = self.resemblance(v, [o for o in others if not same_run(o, run)], env)
        near_mistake = bool(v["alike"]) and v["alike"][0][0] < 1
        v["verdict"] = ("consistent" if v["consistent"] else "not consistent"
                        if near_mistake or v["score"] > v["diameter"] else "unusual")
        return v

    def resemblance(self, verdict, others, env):
        """How much ``verdict``'s run resembles each committed mistake or ablation: for each
        variant, the mean over its runs (of other seeds than the run's) of the distance to
        that run divided by the distance to the nearest healthy run on the same columns; below
        1 means closer to that mistake than to correct TD3 (a run equal to a healthy one on
        those columns resembles nothing there: inf). Sorted, closest first: a list of (ratio,
        variant, number of its runs)."""
        me, seed, out = verdict["table"], verdict["seed"], {}
        for o in others:
            if seed is not None and o.get("seed") == seed:
                continue
            t = {c: v for c, v in curves(o, self.steps).items() if c in me}
            d = self.distance(me, t)
            if np.isnan(d):
                continue
            h = self.nearest(me, seed, list(t))[0]
            out.setdefault(variant(o, env), []).append(d / h if h > 0 else np.inf)
        return sorted((float(np.mean(v)), k, len(v)) for k, v in out.items())


HELDOUT = os.path.join(RESULTS, "heldout")


def heldout_verdicts(env, refs, others, heldout=HELDOUT):
    """{seed: verdict} on the held-out healthy runs of ``env`` (results/heldout/: correct runs
    the rule was not chosen on)."""
    runs = runs_under([heldout], env) if os.path.isdir(heldout) else []
    check = Consistency(refs) if runs else None
    return {r["seed"]: check.verdict(r, others, env)["verdict"] for r in runs}


def measured_rate(env, refs, others, heldout=HELDOUT):
    """The verdicts on the held-out healthy runs, as a line: how often a correct run gets the
    verdicts above."""
    said = heldout_verdicts(env, refs, others, heldout)
    if not said:
        return None
    n, bad = len(said), list(said.values()).count("not consistent")
    return (f"measured on {n} held-out healthy runs (seeds {', '.join(map(str, sorted(said)))}), "
            f"never used to choose the rule: {bad} called not consistent (95% upper bound "
            f"{upper95(bad, n):.0%}), {list(said.values()).count('unusual')} unusual")


def upper95(k, n):
    """The one-sided 95% upper bound on a rate seen k times in n (Clopper-Pearson)."""
    if k >= n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(60):  # bisection on the binomial tail P(X <= k | p) = 0.05
        p = (lo + hi) / 2
        tail = sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k + 1))
        lo, hi = (p, hi) if tail > 0.05 else (lo, p)
    return hi


# ------------------------------------------------------------------------------------------
# The report, the figure, the command line
# ------------------------------------------------------------------------------------------
def report(run, refs, others, env, shown=4):
    """The lines diagnose prints: first whether the run is consistent with correct TD3; then,
    only for a run that is not, the committed mistake it resembles most, where it differs,
    which columns left the band (the first ``shown`` in full) and what its test episodes did."""
    x = run["data"]["TotalEnvInteracts"].astype(int)
    head = f"{run['path']}: {env}, {len(x)} epochs, {x[0]:,} to {x[-1]:,} env steps"
    check = Consistency(refs)
    if not any(np.any(~np.isnan(v)) for v in curves(run, check.steps).values()):
        return [head, f"not judged yet: the healthy runs are compared at their logged steps "
                      f"({check.steps[0]:,.0f} to {check.steps[-1]:,.0f} env steps), and this run "
                      f"has no value at any of them, nor epochs on both sides of one"]
    v = check.verdict(run, others, env)
    name = lambda k: VARIANTS.get(k, (k,))[0]
    seed = lambda r: f"seed {r['seed']}" if r.get("seed") is not None else os.path.basename(r["path"])
    empty = [c for c in COLUMNS if c in run["data"] and np.all(np.isnan(run["data"][c]))]
    flat = [c for c in COLUMNS if c in run["data"] and c not in check.spread and c not in empty]
    out = [head, f"compared with {len(refs)} healthy TD3 runs at {v['steps'][0]:,.0f} to "
                 f"{v['steps'][-1]:,.0f} env steps, on {len(v['columns'])} columns"
           + (f" (not in this file: {', '.join(run['missing'])})" if run["missing"] else "")
           + (f" (no value in this file: {', '.join(empty)})" if empty else "")
           + (f" (the same in every healthy run, so not measurable: {', '.join(flat)})"
              if flat else ""),
           f"distance to the nearest healthy run ({seed(v['nearest'])}): {v['score']:.2f} healthy "
           f"spreads; the limit: {v['limit']:.2f}, the farthest any healthy run lies from its "
           f"nearest other ({seed(v['at_limit'])}; they lie {min(v['healthy']):.2f} to "
           f"{v['limit']:.2f}); the two most different healthy runs lie {v['diameter']:.2f} apart"]
    if v["verdict"] == "consistent":
        fooled = {}
        for o in (o for o in others if not same_run(o, run)):
            fooled.setdefault(variant(o, env), []).append(check.judge(o)["consistent"])
        fired = [f["col"] for f in findings(run, refs)]
        out.append("CONSISTENT with correct TD3: no farther from its nearest healthy run than "
                   "the healthy runs lie from theirs")
        fooled = [f"{name(k)} ({sum(c)} of {len(c)} runs)" for k, c in fooled.items() if any(c)]
        if fooled:
            out.append("consistent is not correct: by this measure these committed mistakes "
                       "and ablations look like correct TD3 too: " + ", ".join(fooled)
                       + "; check_port.py checks a port's update for them in seconds")
        if fired:
            k = (f"{false_alarms(refs)[1]} of {len(refs)}, each against the others"
                 if len(refs) > MIN_REFS else f"not measurable with {len(refs)} runs")
            out.append(f"outside the single-column band at some epochs: "
                       f"{', '.join(dict.fromkeys(fired))}; healthy runs do that too ({k})")
        return out
    alike = v["alike"]
    if v["verdict"] == "unusual":
        out.append(f"UNUSUAL, no mistake found: unlike each of the {len(refs)} healthy runs on "
                   f"these columns (farther than the limit), yet no farther than healthy runs lie "
                   f"from each other ({v['diameter']:.2f}), and closer to correct TD3 than to any "
                   "committed mistake or ablation"
                   + (f" (closest: {name(alike[0][1])}, {alike[0][0]:.2f} times as far)"
                      if alike and np.isfinite(alike[0][0]) else ""))
        out.append("slow healthy seeds land here: a late first 300, or a walker that stands to the "
                   "time limit for a while before it walks. Train on, or compare with more runs "
                   "of your own settings (--reference)")
    else:
        why = ("closer to the runs of a committed mistake or ablation than to correct TD3"
               if alike and alike[0][0] < 1 else
               f"farther than the two most different healthy runs lie apart ({v['diameter']:.2f})")
        out.append(f"NOT CONSISTENT with correct TD3: unlike each of the {len(refs)} healthy runs "
                   f"on these columns (farther than the limit), and {why}")
    rate = measured_rate(env, refs, others)
    if rate:
        out.append(rate)
    near = check.tables[next(i for i, r in enumerate(refs) if r is v["nearest"])]
    per = sorted(((d, c) for c, d in check.per_column(v["table"], near).items()), reverse=True)
    out.append("farthest from it in: " + ", ".join(
        f"{c} ({'10 or more, capped' if d >= check.cap else f'{d:.1f}'} healthy spreads)"
        for d, c in per[:3]))
    if not others:
        out.append(f"no committed mistake or ablation run of {env} to compare with")
    elif alike and alike[0][0] < 1:
        r, k, n = alike[0]
        strength = "strong" if r < 0.5 else "clear" if r < 0.8 else "weak, nearly as close to TD3"
        out.append(f"closest committed mistake: {name(k)}: this run is {r:.2f} times as far from "
                   f"its runs as from the nearest healthy run ({strength}; mean over {n} "
                   f"run{'s' * (n > 1)}; 1 = no closer than to correct TD3)"
                   + "".join(f"; then {name(k2)} {r2:.2f}" for r2, k2, _ in alike[1:3] if r2 < 1))
        out.append("A resemblance, not a cause" + (f": {VARIANTS[k][1]}." if k in VARIANTS else "."))
    elif v["verdict"] == "not consistent":
        out.append("no committed mistake or ablation is closer to it than correct TD3 is"
                   + (f" (closest: {name(alike[0][1])}, {alike[0][0]:.2f})"
                      if alike and np.isfinite(alike[0][0]) else "")
                   + ": what it is, these runs cannot say; check the update with check_port.py")
    me = diagnose(run, refs, env)
    for f in me["findings"][:shown]:
        word = "upper" if f["side"] == "above" else "lower"
        out.append(f"{f['col']} {f['side']} the healthy band from {f['start']:,} steps (known at "
                   f"{f['known']:,}): {_num(f['value'])} where the band's {word} limit was "
                   f"{_num(f['limit'])}, {f['size']} it at first; {f['share']} from then on")
    if me["findings"][shown:]:
        out.append("also left: " + "; ".join(f"{f['col']} {f['side']} (known at {f['known']:,})"
                                              for f in me["findings"][shown:]))
    out.append("test episodes: " + (me["pattern"][1] if me["pattern"][0] else
                                    "TestEpLen is not in this file" if "TestEpLen" in run["missing"]
                                    else "the test return stayed in the band"))
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
    p = ArgumentParser(description="Is a TD3 run consistent with correct TD3, the committed "
                       "healthy runs of its env? If not, which committed mistake it resembles, "
                       "and where it differs.")
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
