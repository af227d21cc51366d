"""diagnose.py: the rule, the committed runs it names, Spinning Up's format, bad input."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, run_cli
import diagnose
import variants
import logger

WALKER = os.path.join(ROOT, "results", "BipedalWalker-v3")
PORTING = os.path.join(ROOT, "results", "porting")
COLUMN_S0 = os.path.join(PORTING, "td3-BipedalWalker-v3-column_critics",
                         "td3-BipedalWalker-v3-column_critics_s0")

ENV = "BipedalWalker-v3"


@pytest.fixture(scope="module")
def walker():
    """The 13 healthy runs the band rule and the consistency rule were chosen and first tested
    against (seeds 0-2, 10-19; docs/diagnose.md's figures), and the committed variants."""
    refs, others = diagnose.committed("BipedalWalker-v3")
    return [r for r in refs if r["seed"] < 30], others


@pytest.fixture(scope="module")
def references():
    """Every committed healthy run, seeds 30-39 included: what diagnose.py compares with now."""
    return diagnose.committed("BipedalWalker-v3")


def porting_run(mistake, seed):
    top = os.path.join(ROOT, "results", "defaults" if (mistake, seed) == ("authors_defaults", 0)
                       else "porting", f"td3-BipedalWalker-v3-{mistake}")
    return diagnose.load_run(os.path.join(top, f"td3-BipedalWalker-v3-{mistake}_s{seed}"))


def write_progress(path, header, rows):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "progress.txt"), "w") as f:
        f.write("\t".join(header) + "\n" + "".join("\t".join(r) + "\n" for r in rows))
    return path


def spinning_up_copy(src, dst, drop=lambda c: c.startswith("TestQ")):
    """A run's progress.txt without some columns and without config.json, as another project
    would write it."""
    header, rows = logger.read_progress(os.path.join(src, "progress.txt"))
    keep = [i for i, c in enumerate(header) if not drop(c)]
    return write_progress(dst, [header[i] for i in keep], [[r[i] for i in keep] for r in rows])


# ------------------------------------------------------------------------------------------
# The committed runs
# ------------------------------------------------------------------------------------------
def test_healthy_runs_are_found_once_each(walker):
    refs, others = walker
    # results/BipedalWalker-v3 and results/ablations hold the same three TD3 runs (the former
    # stopped early): each counts once, as its longer copy.
    assert len(refs) == len({r["path"] for r in refs}) >= 3
    for i, a in enumerate(refs):
        assert not any(diagnose.same_run(a, b) for b in refs[i + 1:])
    assert {diagnose.variant(r, "BipedalWalker-v3") for r in others} >= {
        "column_critics", "authors_defaults", "q2_own_target", "no_twin"}


def test_a_healthy_seed_is_consistent_and_names_no_mistake(references):
    code, out, err = run_cli(os.path.join(WALKER, "td3-BipedalWalker-v3_s10"),
                             script="diagnose.py")
    assert code == 0, err
    lines = out.splitlines()
    assert f"compared with {len(references[0]) - 1} healthy TD3 runs" in lines[1]  # not with itself
    assert lines[3].startswith("CONSISTENT with correct TD3")  # the verdict comes first
    assert "closest committed mistake" not in out and "the healthy band from" not in out
    # what "consistent" does not promise: the committed mistakes that look like TD3 too
    assert "truncation stored as death (2 of 2 runs)" in out


def test_a_slow_healthy_seed_flagged_by_the_band_is_consistent(walker):
    """Seed 17 learns late: the band rule, each healthy run against the others, flags it in
    five columns. Against the other 12 it is consistent with correct TD3."""
    refs = walker[0]
    s17 = next(r for r in refs if r["seed"] == 17)
    others = [r for r in refs if r is not s17]
    assert len({f["col"] for f in diagnose.findings(s17, others)}) >= 3
    assert diagnose.Consistency(others).judge(s17)["consistent"]


def test_the_false_alarms_in_docs_are_the_rules(walker):
    """docs/diagnose.md states the out-of-sample test's result: it must be what the rule
    gives on the committed runs (seeds 15-19 against the choosing seeds 0-2, 10-14)."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import check_diagnose
    refs, _ = walker
    choose = [r for r in refs if check_diagnose.seed(r) in check_diagnose.CHOOSE]
    test = [r for r in refs if check_diagnose.seed(r) in check_diagnose.TEST]
    assert len(choose) == 8 and len(test) == 5
    per_col, k, n = diagnose.false_alarms(test, against=choose)
    with open(os.path.join(ROOT, "docs", "diagnose.md")) as f:
        docs = f.read()
    assert f"false alarms {check_diagnose.rate(k, n)}" in docs


def named(run, refs, others):
    """(verdict, the consistency rule's list of (ratio, variant, runs)) with the committed runs
    of ``run``'s seed left out, as the command does."""
    check = diagnose.Consistency(refs)
    v = check.judge(run)
    mine = [o for o in others if o["seed"] != run["seed"] and not diagnose.same_run(o, run)]
    return v, check.resemblance(v, mine, "BipedalWalker-v3")


def test_the_broadcast_is_named_with_its_own_seed_left_out(walker):
    for seed in (0, 1):
        v, alike = named(porting_run("column_critics", seed), *walker)
        assert not v["consistent"]
        assert alike[0][1:] == ("column_critics", 1) and alike[0][0] < 0.5  # the other seed


def test_the_authors_settings_without_the_floor_are_named_with_their_seed_left_out(walker):
    for seed in (0, 1):
        v, alike = named(porting_run("authors_defaults", seed), *walker)
        assert not v["consistent"]
        assert alike[0][1:] == ("authors_defaults", 1) and alike[0][0] < 0.8


def test_command_says_not_consistent_then_names_the_broadcast(references):
    code, out, err = run_cli(COLUMN_S0, script="diagnose.py")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[3].startswith("NOT CONSISTENT with correct TD3") and "closer to the runs of a " \
        "committed mistake" in lines[3]
    at = {p: next(i for i, ln in enumerate(lines) if ln.startswith(p)) for p in
          ("farthest from it in: StdQ1Vals", "closest committed mistake: the (B, B) broadcast of "
           "(B, 1) critics: this run is 0.2", "A resemblance, not a cause: check that every tensor "
           "in the target is (B,), not (B, 1) (notebook 4).")}
    assert sorted(at.values()) == list(at.values())  # in this order, after the verdict
    first = next(i for i, ln in enumerate(lines) if ln.startswith("StdQ1Vals below the healthy band"))
    # Where: the band rule's earliest finding of this run against the committed healthy runs,
    # with the limit it crossed there.
    top = diagnose.findings(diagnose.load_run(COLUMN_S0), references[0])[0]
    assert (top["col"], top["side"]) == ("StdQ1Vals", "below") and top["start"] < top["known"]
    assert f"from {top['start']:,} steps (known at {top['known']:,})" in lines[first]
    assert f"where the band's lower limit was {diagnose._num(top['limit'])}" in lines[first]
    assert top["value"] < top["limit"]
    assert lines[-1].startswith("test episodes: falls at once")  # a walker falls


# ------------------------------------------------------------------------------------------
# The consistency rule: the committed runs
# ------------------------------------------------------------------------------------------
STOPPING = variants.STOPPING


def test_the_three_answers_on_the_committed_runs(references):
    """Each healthy run against the other 22 is never called not consistent, and one beyond the
    limit is told it is unusual, never that it holds a mistake; every seed of the mistakes that
    stop learning is not consistent."""
    refs, others = references
    assert len(refs) == 23
    said = {r["seed"]: diagnose.Consistency(refs[:i] + refs[i + 1:]).verdict(r, others, ENV)
            for i, r in enumerate(refs)}
    assert [s for s, v in said.items() if v["verdict"] == "not consistent"] == []
    odd = [s for s, v in said.items() if v["verdict"] == "unusual"]
    assert odd == [14]  # docs/diagnose.md says so
    i = next(k for k, r in enumerate(refs) if r["seed"] == 14)
    lines = diagnose.report(refs[i], refs[:i] + refs[i + 1:], others, ENV)
    assert lines[3].startswith("UNUSUAL, no mistake found")
    assert not any("a mistake not among" in ln or "NOT CONSISTENT" in ln for ln in lines)
    # docs/diagnose.md: the printed "0 unusual" rests on seed 14; without it, the held-out line
    # of seed 14's own report counts these as unusual.
    without = diagnose.heldout_verdicts(ENV, refs[:i] + refs[i + 1:], others)
    held_odd = sorted(s for s, v in without.items() if v == "unusual")
    assert held_odd and next(ln for ln in lines if ln.startswith("measured on")).endswith(
        f", {len(held_odd)} unusual")
    with open(os.path.join(ROOT, "docs", "diagnose.md")) as f:
        docs = " ".join(f.read().split())
    seeds = ", ".join(map(str, held_odd[:-1])) + f" and {held_odd[-1]}"
    assert f'reads "{len(held_odd)} unusual" (seeds {seeds})' in docs
    check = diagnose.Consistency(refs)
    for o in others:
        if diagnose.variant(o, ENV) in STOPPING:
            assert check.verdict(o, others, ENV)["verdict"] == "not consistent", o["path"]


def test_the_measured_rate_is_printed_with_its_bound(tmp_path, references):
    refs, others = references
    held = tmp_path / "heldout"
    for r in refs[:2]:
        shutil.copytree(r["path"], held / os.path.basename(r["path"]))
    line = diagnose.measured_rate(ENV, refs[2:], others, str(held))
    seeds = ", ".join(str(s) for s in sorted(r["seed"] for r in refs[:2]))
    assert line.startswith(f"measured on 2 held-out healthy runs (seeds {seeds}), never used to "
                           "choose the rule: 0 called not consistent (95% upper bound 78%)")
    assert diagnose.upper95(0, 10) == pytest.approx(0.259, abs=1e-3)


def test_the_mistakes_that_stop_learning_are_not_consistent_on_every_seed(walker):
    refs, others = walker
    check = diagnose.Consistency(refs)
    for mistake in STOPPING:
        for seed in (0, 1):
            v = check.judge(porting_run(mistake, seed))
            assert not v["consistent"], (mistake, seed)
            assert v["nearest"]["seed"] != seed  # its own seed's healthy run is left out


def test_q2_own_target_is_named_on_the_columns_each_pair_shares(walker):
    """Q2's own target is named on both seeds. One critic has no Q2 - Q1 column, so its
    distance is measured on one column fewer; divided by the distance to correct TD3 on the
    same columns, it no longer looks closer than Q2's own target does."""
    refs, others = walker
    check = diagnose.Consistency(refs)
    for seed in (0, 1):
        v = check.judge(porting_run("q2_own_target", seed))
        alike = check.resemblance(v, [o for o in others if o["seed"] != seed], "BipedalWalker-v3")
        assert not v["consistent"] and alike[0][1] == "q2_own_target" and alike[0][0] < 1


def test_the_rules_figures_in_docs_are_the_rules(walker, references):
    """docs/diagnose.md states both rules on the held-out seeds 30-39 (against the 13 references
    of seeds 0-2 and 10-19) and the verdicts on the committed mistakes (against all the
    references): the sentences must be what the code gives."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import check_diagnose
    refs, others = walker
    heldout = [r for r in diagnose.committed("BipedalWalker-v3")[0] if 30 <= r["seed"] < 40]
    assert len(heldout) == 10  # the second round's held-out runs, references since
    with open(os.path.join(ROOT, "docs", "diagnose.md")) as f:
        docs = " ".join(f.read().split())
    band = sum(bool(diagnose.findings(r, refs)) for r in heldout)
    new = sum(not diagnose.Consistency(refs).judge(r)["consistent"] for r in heldout)
    n = len(heldout)
    assert (f"The score and limit called {check_diagnose.rate(new, n)} not consistent. The band "
            f"rule alone flagged {check_diagnose.rate(band, n)}.") in docs
    # The committed mistakes against every reference, as the command judges them.
    check = diagnose.Consistency(references[0])
    said = [(o, check.verdict(o, references[1], ENV)) for o in references[1]]
    bad = [o for o, v in said if v["verdict"] == "not consistent"]
    own = sum(v["verdict"] == "not consistent" and v["alike"][0][0] < 1
              and v["alike"][0][1] == diagnose.variant(o, ENV) for o, v in said)
    fooled = sum(v["verdict"] == "consistent" for o, v in said)
    assert (f"Of the {len(said)} mistake and ablation runs, {len(bad)} are not consistent, and "
            f"{own} of {len(said)} get their own variant named.") in docs
    assert f"Against the {len(references[0])} references, {fooled} mistake runs are consistent" in docs
    named = 0
    check = diagnose.Consistency(refs)
    for o in others:
        v = check.judge(o)
        alike = check.resemblance(v, [x for x in others if x["seed"] != o["seed"]], "BipedalWalker-v3")
        named += (not v["consistent"] and alike[0][0] < 1
                  and alike[0][1] == diagnose.variant(o, "BipedalWalker-v3"))
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = " ".join(f.read().split())
    assert f"resembles most ({named} of {len(others)} committed mistakes and ablations named as their own" in readme


# ------------------------------------------------------------------------------------------
# The rule itself, on made-up runs
# ------------------------------------------------------------------------------------------
def fake(values, col="LossQ", steps=5000):
    x = np.arange(1, len(values) + 1) * steps
    return dict(path="fake", data={"TotalEnvInteracts": x.astype(float), col: np.asarray(
        values, float)}, env=None, exp_name=None, max_ep_len=None, missing=[])


def test_known_at_the_end_of_the_epochs_in_a_row_and_not_for_a_spike():
    refs = [fake(np.full(20, v)) for v in (1.0, 1.2, 0.9)]
    spike = np.ones(20)
    spike[5] = spike[12:14] = 1000.0  # one epoch, then two: fewer than IN_A_ROW
    assert diagnose.findings(fake(spike), refs) == []
    high = np.ones(20)
    high[8:] = 1000.0
    (f,) = diagnose.findings(fake(high), refs)
    assert (f["col"], f["side"], f["start"]) == ("LossQ", "above", 45_000)
    assert f["known"] == 45_000 + (diagnose.IN_A_ROW - 1) * 5000
    assert f["share"] == "outside in 12 of 12 epochs" and f["size"].endswith("x above")
    assert f["value"] == 1000.0 and 1.2 < f["limit"] < 2  # the upper limit, as a LossQ


def test_the_band_follows_the_step():
    """Three healthy runs that agree for 10 epochs, then spread apart: the same departure
    fires where they agree and not where they differ, and the band is drawn per step."""
    a, b, c = np.ones(20), np.ones(20), np.ones(20)
    a[:10], b[:10], c[:10] = 1.0, 1.05, 0.95
    a[10:], b[10:], c[10:] = 1.0, 10.0, 0.1
    refs = [fake(a), fake(b), fake(c)]
    lo, hi, n = diagnose.band(np.arange(1, 21) * 5000.0, refs, "LossQ")
    assert (n == 3).all() and hi[2] < 1.5 < 100 < hi[16]
    early = np.ones(20)
    early[2:6] = 3.0  # three times the healthy runs, where they agree: fires
    (f,) = diagnose.findings(fake(early), refs)
    assert (f["side"], f["start"]) == ("above", 15_000)
    late = np.ones(20)
    late[14:18] = 3.0  # the same, where they differ by 100 times: inside the band
    assert diagnose.findings(fake(late), refs) == []


def test_compared_only_where_enough_healthy_runs_have_data():
    refs = [fake(np.ones(10)), fake(np.ones(10)), fake(np.ones(4))]
    x = np.arange(1, 21) * 5000.0
    n = diagnose.band(x, refs, "LossQ")[2]
    assert n[0] == 3 and n[9] == 2 and n[-1] == 0 and diagnose.MIN_REFS == 3
    late = np.ones(20)
    late[5:] = 1000.0  # from step 30,000 on, two healthy runs have data (to 50,000), then none
    assert diagnose.findings(fake(late), refs) == []


def test_the_upper_bound_of_a_rate():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from check_diagnose import upper_bound
    assert upper_bound(0, 13) == pytest.approx(1 - 0.05 ** (1 / 13), abs=1e-6)  # 0.206
    assert upper_bound(2, 5) == pytest.approx(0.8107, abs=1e-3)
    assert upper_bound(5, 5) == 1.0


def curve(values, seed, col="AverageTestEpRet", steps=5000):
    return dict(fake(values, col, steps), seed=seed, path=f"fake_s{seed}")


def test_the_distance_is_in_healthy_spreads_and_capped():
    refs = [curve(np.full(10, v), s) for s, v in enumerate((1.0, 1.2, 0.9))]
    check = diagnose.Consistency(refs)
    spread = np.std([1.0, 1.2, 0.9], ddof=1)
    assert check.spread["AverageTestEpRet"] == pytest.approx(spread)
    v = check.judge(curve(np.full(10, 1.5), 7))
    assert v["score"] == pytest.approx(0.3 / spread) and v["nearest"] is refs[1]
    assert v["limit"] == pytest.approx(0.2 / spread)  # 1.2's nearest other is 1.0
    assert not v["consistent"]
    far = np.full(10, 1.0)
    far[0] = 1e6  # one epoch far out adds at most CAP
    assert check.judge(curve(far, 7))["score"] == pytest.approx(diagnose.CAP / 10)
    assert diagnose.Consistency(refs, cap=3).judge(curve(far, 7))["score"] == pytest.approx(0.3)


def test_a_healthy_run_of_the_runs_own_seed_is_left_out():
    refs = [curve(np.full(10, v), s) for s, v in enumerate((1.0, 1.2, 0.9))]
    check = diagnose.Consistency(refs)
    assert check.judge(curve(np.full(10, 1.2), None))["score"] == 0
    v = check.judge(curve(np.full(10, 1.2), 1))  # seed 1 shares seed 1's first random steps
    assert v["nearest"] is refs[0] and v["score"] > 0


def test_a_short_run_is_judged_on_its_own_steps():
    """A run stopped at 25,000 steps is scored on those 5 epochs, and so are the healthy runs
    that set its limit: their later epochs, where they spread apart, do not widen it."""
    a, b, c = np.ones(20), np.full(20, 1.1), np.full(20, 0.95)
    b[5:] = 5.0
    refs = [curve(x, s) for s, x in enumerate((a, b, c))]
    check = diagnose.Consistency(refs)
    short = check.judge(curve(np.full(5, 1.5), 9))
    assert list(short["steps"]) == [5000, 10000, 15000, 20000, 25000]
    assert short["limit"] == pytest.approx(0.1 / check.spread["AverageTestEpRet"])
    assert check.judge(curve(np.full(20, 1.5), 9))["limit"] > 5 * short["limit"]


def test_the_limit_uses_each_column_where_the_run_has_it():
    """A run without a column's first half: the healthy runs that set its limit are cut the
    same way, column by column, so their early differences in that column do not count."""
    refs = []
    for s, (a, b_early) in enumerate(((1.0, 0.0), (1.1, 5.0), (0.95, -5.0))):
        r = curve(np.full(10, a), s)
        r["data"]["LossQ"] = np.r_[np.full(5, 10 ** b_early), np.ones(5)]  # apart, then equal
        refs.append(r)
    check = diagnose.Consistency(refs)
    run = curve(np.full(10, 1.0), 9)
    run["data"]["LossQ"] = np.r_[np.full(5, np.nan), np.ones(5)]
    v = check.judge(run)
    spread = check.spread["AverageTestEpRet"]
    assert v["limit"] == pytest.approx((0.1 / spread + 0) / 2)  # 1.1's nearest, LossQ's late half


def test_another_epoch_length_is_compared_at_the_healthy_steps(walker):
    """A Spinning Up run logs every 4,000 steps: it is read at the healthy runs' steps,
    between its own epochs. Seed 10 resampled that way stays nearest to seed 10."""
    refs = walker[0]
    s10 = next(r for r in refs if r["seed"] == 10)
    x = np.arange(4000, 150_001, 4000, dtype=float)
    data = {c: np.interp(x, s10["data"]["TotalEnvInteracts"], v) for c, v in s10["data"].items()}
    v = diagnose.Consistency(refs).judge(dict(s10, data=data, seed=None))
    assert v["nearest"] is s10 and v["score"] < 0.2 and v["consistent"]
    assert v["steps"][0] == 5000 and v["steps"][-1] == 145_000  # within its own epochs


def test_words_for_the_test_episodes_are_the_envs():
    """The same episode lengths read as the env's failure: a walker that runs to the time
    limit stands there, a lander hovers; one that ends midway fell, or came down."""
    left = [dict(col="AverageTestEpRet", side="below", start=5000)]
    refs = [dict(fake(np.full(10, 300.0), "TestEpLen"), max_ep_len=1600)]

    def name(length, env, limit):
        run = fake(np.full(10, length), "TestEpLen")
        run["data"]["AverageTestEpRet"] = np.full(10, -100.0)
        return diagnose.pattern(dict(run, max_ep_len=limit), refs, left, env)[0]

    assert name(1600, "BipedalWalker-v3", 1600) == "stands to the time limit"
    assert name(800, "BipedalWalker-v3", 1600) == "falls midway"
    assert name(30, "BipedalWalker-v3", 1600) == "falls at once"
    assert name(1000, "LunarLanderContinuous-v3", 1000) == "hovers"
    assert name(500, "LunarLanderContinuous-v3", 1000) == "ends midway"
    assert name(500, "MyEnv-v0", 1000) == "ends midway"
    walks = fake(np.full(10, 800.0), "TestEpLen")
    walks["data"]["AverageTestEpRet"] = np.full(10, 150.0)  # ends midway with a good return
    assert diagnose.pattern(dict(walks, max_ep_len=1600), refs, left, "BipedalWalker-v3")[0] \
        == "walks, ends midway"


def test_a_logged_nan_stays_nan_and_other_steps_are_read_between_epochs():
    refs = [curve(np.full(10, v), s) for s, v in enumerate((1.0, 1.2, 0.9))]
    check = diagnose.Consistency(refs)
    values = np.full(10, 1.0)
    values[4] = np.nan  # logged at 25,000 steps as NaN: not filled in from its neighbours
    table = diagnose.curves(curve(values, 7), check.steps)["AverageTestEpRet"]
    assert np.isnan(table[4]) and not np.isnan(table[[3, 5]]).any()
    half = diagnose.curves(curve(np.arange(20.0), 7, steps=2500), check.steps)["AverageTestEpRet"]
    assert half[0] == 1.0 and half[-1] == 19.0  # 5,000 and 50,000: its own epochs 2 and 20


def test_a_column_the_same_in_every_healthy_run_is_left_out():
    """Pendulum-v1's episodes are always 200 steps: EpLen has no spread to measure in, and
    would turn every distance into NaN (and every run into 'not consistent')."""
    refs = [diagnose.load_run(os.path.join(ROOT, "results", "Pendulum-v1", f"td3-Pendulum-v1_s{s}"))
            for s in (0, 1, 2)]
    check = diagnose.Consistency(refs)
    assert "EpLen" not in check.spread and "TestEpLen" not in check.spread
    run = dict(refs[1], seed=None, data=dict(refs[1]["data"]))
    run["data"]["AverageTestEpRet"] = run["data"]["AverageTestEpRet"] * 1.01
    v = check.judge(run)
    assert np.isfinite(v["score"]) and np.isfinite(v["limit"]) and v["consistent"]


def test_the_report_says_why_a_column_was_not_compared(walker):
    """A single critic logs no Q2: its Q2 - Q1 is empty in the file, not 'the same in every
    healthy run' (that is Pendulum-v1's fixed episode length)."""
    one = next(o for o in walker[1] if diagnose.variant(o, "BipedalWalker-v3") == "no_twin")
    line = diagnose.report(one, walker[0], [], "BipedalWalker-v3")[1]
    assert line.endswith("on 9 columns (no value in this file: Q2 - Q1)")
    pendulum = [diagnose.load_run(os.path.join(ROOT, "results", "Pendulum-v1", f"td3-Pendulum-v1_s{s}"))
                for s in (0, 1, 2)]
    line = diagnose.report(dict(pendulum[0], seed=None), pendulum, [], "Pendulum-v1")[1]
    assert line.endswith("(the same in every healthy run, so not measurable: TestEpLen, EpLen)")


def test_healthy_runs_all_of_the_runs_seed_are_still_compared():
    refs = [curve(np.full(10, v), 3) for v in (1.0, 1.2, 0.9)]  # every one of seed 3
    v = diagnose.Consistency(refs).judge(curve(np.full(10, 1.1), 3))
    assert v["score"] == pytest.approx(0.1 / np.std([1.0, 1.2, 0.9], ddof=1))


def test_a_mistake_equal_to_a_healthy_run_on_its_columns_resembles_nothing_there():
    """A one-critic run has no Q2 - Q1: a run that differs from a healthy run only there is at
    distance 0 on the one-critic run's columns, which names nothing (and divides by nothing)."""
    a = dict(curve(np.full(10, 1.0), 0), env=None)
    a["data"]["Q2 - Q1"] = np.zeros(10)
    refs = [dict(a, seed=0), dict(curve(np.full(10, 1.2), 1), **{}), dict(curve(np.full(10, 0.9), 2))]
    for r, q in zip(refs[1:], (0.001, -0.001)):
        r["data"]["Q2 - Q1"] = np.full(10, q)
    check = diagnose.Consistency(refs)
    run = dict(curve(np.full(10, 1.0), 9))
    run["data"]["Q2 - Q1"] = np.full(10, 0.05)  # far out in one column only
    one_critic = dict(curve(np.full(10, 1.0), 5), exp_name="td3-X-no_twin")
    v = check.judge(run)
    assert check.resemblance(v, [one_critic], "X") == [(np.inf, "no_twin", 1)]


def test_reference_runs_with_no_step_in_common_are_one_line(tmp_path):
    refs = tmp_path / "refs"
    for s, steps in ((0, 5000), (1, 4000), (2, 3000)):
        write_progress(refs / f"s{s}", ["TotalEnvInteracts", "AverageTestEpRet"],
                       [[str(steps * k), "1.0"] for k in (1, 2)])
    run = write_progress(tmp_path / "run", ["TotalEnvInteracts", "AverageTestEpRet"],
                         [["5000", "2.0"], ["10000", "2.0"]])
    msg = one_line_error(*run_cli(run, "--env", "MyEnv-v0", "--reference", refs, script="diagnose.py"))
    assert "share no logged env step" in msg


def test_rows_that_do_not_rise_are_one_line(tmp_path):
    run = write_progress(tmp_path / "run", ["TotalEnvInteracts", "AverageTestEpRet"],
                         [["5000", "1.0"], ["10000", "1.0"], ["5000", "2.0"]])
    msg = one_line_error(*run_cli(run, "--env", "BipedalWalker-v3", script="diagnose.py"))
    assert "TotalEnvInteracts does not rise" in msg


def test_three_references_give_no_false_alarm_count(walker):
    """Each of three healthy runs against the other two has fewer than MIN_REFS at a step:
    the band's false alarms are not measurable, and the report says so."""
    refs = [r for r in walker[0] if r["seed"] in (10, 11, 12)]
    run = next(r for r in walker[0] if r["seed"] == 19)
    lines = diagnose.report(run, refs, [], "BipedalWalker-v3")
    assert lines[3].startswith("CONSISTENT") and "not measurable with 3 runs" in lines[-1]


def test_a_file_without_test_episode_lengths_says_so(tmp_path, walker):
    copy = spinning_up_copy(COLUMN_S0, tmp_path / "su", drop=lambda c: c.startswith(("TestQ", "TestEpLen")))
    code, out, err = run_cli(copy, "--env", "BipedalWalker-v3", script="diagnose.py")
    assert code == 0, err
    assert out.splitlines()[-1] == "test episodes: TestEpLen is not in this file"


# ------------------------------------------------------------------------------------------
# Spinning Up's format
# ------------------------------------------------------------------------------------------
def test_spinning_up_file_without_our_columns_has_the_same_top_finding(tmp_path, walker):
    refs, others = walker
    copy = spinning_up_copy(COLUMN_S0, tmp_path / "su")
    full = diagnose.findings(porting_run("column_critics", 0), refs)[0]
    code, out, err = run_cli(copy, "--env", "BipedalWalker-v3", script="diagnose.py")
    assert code == 0, err
    assert "on 9 columns (not in this file: TestQBias)" in out
    lines = out.splitlines()
    top = next(ln for ln in lines if " the healthy band from " in ln)
    assert top.startswith(f"{full['col']} {full['side']} the healthy band from "
                          f"{full['start']:,} steps")
    # Without config.json its seed is unknown, so the committed seed-0 runs stay in; the
    # committed copy of this very run does not.
    assert "NOT CONSISTENT with correct TD3" in out
    assert "closest committed mistake: the (B, B) broadcast of (B, 1) critics" in out
    assert "mean over 1 run;" in out


def test_spinning_up_names_without_average_or_std_columns(tmp_path, walker):
    refs, others = walker
    copy = spinning_up_copy(COLUMN_S0, tmp_path / "su",
                            drop=lambda c: c.startswith(("TestQ", "Std", "Min", "Max")))
    header, rows = logger.read_progress(copy / "progress.txt")
    write_progress(copy, [c.replace("Average", "") for c in header], rows)  # EpRet, Q1Vals, ...
    run = diagnose.load_run(str(copy))
    assert run["missing"] == ["StdQ1Vals", "TestQBias"]
    assert {"AverageTestEpRet", "AverageQ1Vals", "Q2 - Q1"} <= set(run["data"])
    v, alike = named(run, refs, others)  # no config.json: no seed; its committed copy left out
    assert v["columns"] == [c for c in diagnose.COLUMNS if c not in run["missing"]]
    assert not v["consistent"] and alike[0][1:] == ("column_critics", 1) and alike[0][0] < 0.5


# ------------------------------------------------------------------------------------------
# The figure, the imports, notebook 4, bad input
# ------------------------------------------------------------------------------------------
def test_plot_writes_a_png(tmp_path):
    code, out, err = run_cli(COLUMN_S0, "--plot", tmp_path / "why.png", script="diagnose.py")
    assert code == 0, err
    assert (tmp_path / "why.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_imports_neither_torch_nor_gymnasium():
    code = "import sys, diagnose; print(sorted({'torch', 'gymnasium'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def test_notebook_4_uses_this_rule_not_a_copy():
    with open(os.path.join(ROOT, "notebooks", "04_why_my_port_does_not_learn.ipynb")) as f:
        source = "".join("".join(c["source"]) for c in json.load(f)["cells"])
    assert "diagnose.Consistency(" in source and ".verdict(" in source
    assert "def first_sign" not in source and "np.convolve" not in source
    assert "WIDEN =" not in source and "IN_A_ROW =" not in source


def one_line_error(code, out, err):
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (code, out, err)
    assert err.startswith("error: ") and "Traceback" not in err
    return err


def test_no_such_file_is_one_line(tmp_path):
    err = one_line_error(*run_cli(tmp_path / "nope", script="diagnose.py"))
    assert "does not exist" in err
    (tmp_path / "empty").mkdir()
    assert "no progress.txt in" in one_line_error(*run_cli(tmp_path / "empty",
                                                           script="diagnose.py"))


def test_progress_without_a_known_column_is_one_line(tmp_path):
    d = write_progress(tmp_path / "run", ["Epoch", "Foo"], [["1", "2.0"]])
    err = one_line_error(*run_cli(d, "--env", "BipedalWalker-v3", script="diagnose.py"))
    assert "no TotalEnvInteracts column" in err
    d = write_progress(tmp_path / "ragged", ["TotalEnvInteracts", "LossQ"], [["5000"]])
    one_line_error(*run_cli(d, "--env", "BipedalWalker-v3", script="diagnose.py"))


def test_env_without_references_is_one_line(tmp_path):
    copy = spinning_up_copy(COLUMN_S0, tmp_path / "su")
    err = one_line_error(*run_cli(copy, "--env", "NoSuchEnv-v0", script="diagnose.py"))
    assert "0 healthy runs of NoSuchEnv-v0" in err and "--reference" in err
    assert "give --env" in one_line_error(*run_cli(copy, script="diagnose.py"))
    err = one_line_error(*run_cli(COLUMN_S0, "--env", "Pendulum-v1", script="diagnose.py"))
    assert "BipedalWalker-v3 run" in err


def test_reference_directories_replace_the_committed_runs(tmp_path):
    refs = tmp_path / "refs"
    for s in (0, 1, 2):  # made "MyEnv-v0" runs by their config.json
        shutil.copytree(os.path.join(WALKER, f"td3-BipedalWalker-v3_s{s}"), refs / f"s{s}")
        cfg = json.loads((refs / f"s{s}" / "config.json").read_text())
        (refs / f"s{s}" / "config.json").write_text(json.dumps(dict(cfg, env_id="MyEnv-v0")))
    copy = spinning_up_copy(COLUMN_S0, tmp_path / "su")
    code, out, err = run_cli(copy, "--env", "MyEnv-v0", "--reference", refs,
                             script="diagnose.py")
    assert code == 0, err
    assert "compared with 3 healthy TD3 runs" in out and "StdQ1Vals below" in out
    assert "NOT CONSISTENT" in out
    assert "no committed mistake or ablation run of MyEnv-v0 to compare with" in out.splitlines()
    one_line_error(*run_cli(copy, "--env", "MyEnv-v0", "--reference", tmp_path / "nope",
                            script="diagnose.py"))


def test_references_of_another_env_are_left_out_in_one_line(tmp_path):
    """Runs whose config.json names another env are no reference: they are dropped, and
    one line says so; with too few left, the usual one-line error."""
    both = [os.path.join(ROOT, "results", "Pendulum-v1"), WALKER]
    copy = spinning_up_copy(COLUMN_S0, tmp_path / "su")
    code, out, err = run_cli(copy, "--env", "BipedalWalker-v3", "--reference", *both,
                             script="diagnose.py")
    assert code == 0, err
    assert "left out 3 of the --reference runs: they are of Pendulum-v1, not BipedalWalker-v3" in out
    assert "compared with 13 healthy TD3 runs" in out
    code, out, err = run_cli(copy, "--env", "MountainCarContinuous-v0", "--reference", *both,
                             script="diagnose.py")
    assert code == 2 and "0 healthy runs of MountainCarContinuous-v0" in err
    assert len(err.strip().splitlines()) == 1


def test_screen_runs_are_not_healthy_references(tmp_path):
    # results/screen/ holds runs named td3-<env> made with other settings (a candidate default).
    shutil.copytree(os.path.join(ROOT, "results", "BipedalWalker-v3"), tmp_path / "BipedalWalker-v3")
    broken = os.path.join(ROOT, "results", "porting", "td3-BipedalWalker-v3-column_critics",
                          "td3-BipedalWalker-v3-column_critics_s0")
    planted = tmp_path / "screen" / "candidate" / "td3-BipedalWalker-v3_s10"
    shutil.copytree(broken, planted)
    cfg = json.loads((planted / "config.json").read_text())
    (planted / "config.json").write_text(json.dumps({**cfg, "exp_name": "td3-BipedalWalker-v3"}))
    healthy, _ = diagnose.committed("BipedalWalker-v3", str(tmp_path))
    assert len(healthy) == len(os.listdir(tmp_path / "BipedalWalker-v3")) - sum(
        n.endswith((".png", ".gif")) for n in os.listdir(tmp_path / "BipedalWalker-v3"))
    assert str(planted) not in [os.path.abspath(r["path"]) for r in healthy]


def test_a_plot_into_a_missing_directory_is_one_line(tmp_path):
    err = one_line_error(*run_cli(COLUMN_S0, "--plot", tmp_path / "nope" / "x.png", script="diagnose.py"))
    assert "does not exist" in err and not (tmp_path / "nope").exists()


def test_an_env_made_with_arguments_is_compared_only_with_its_own_env():
    """LunarLander-v3 with continuous=True is the continuous lander; the hardcore walker, or a
    lander with another episode limit, is no committed env: diagnose then asks for --reference."""
    from diagnose import registered_as
    known = ["BipedalWalker-v3", "LunarLanderContinuous-v3"]
    assert registered_as("LunarLander-v3", {"continuous": True}, known) == "LunarLanderContinuous-v3"
    assert registered_as("BipedalWalker-v3", {}, known) == "BipedalWalker-v3"
    assert registered_as("BipedalWalker-v3", {"hardcore": True}, known) == "BipedalWalker-v3(hardcore=True)"
    assert registered_as("LunarLander-v3", {"continuous": True, "max_episode_steps": 500}, known) == \
        "LunarLander-v3(continuous=True, max_episode_steps=500)"


def test_readme_and_docs_give_the_measured_rate_on_the_held_out_runs(references):
    """The false-alarm rate README and docs/diagnose.md state is the code's, on every held-out
    healthy run committed in results/heldout/, with its exact 95% bound and the seeds."""
    refs, others = references
    said = diagnose.heldout_verdicts(ENV, refs, others)
    assert said and all(s >= 50 for s in said)  # the third round's test: seeds 50 and on
    n, bad, odd = len(said), list(said.values()).count("not consistent"), list(said.values()).count("unusual")
    seeds = sorted(said)
    claim = (f"(seeds {seeds[0]}-{seeds[-1]}), it called "
             f"{bad} of {n} not consistent (95% upper bound {diagnose.upper95(bad, n):.0%}) and {odd} unusual")
    for page in ("README.md", os.path.join("docs", "diagnose.md")):
        with open(os.path.join(ROOT, page)) as f:
            assert claim in " ".join(f.read().split()), page
