"""Each fact of the project is defined in one place and read from there: a second definition
makes one of these tests fail (the variants' table has its own, in test_variants.py)."""
import ast
import glob
import os
from dataclasses import fields

import cli
import runs
import settings
import td3
import watch
from conftest import ROOT

PROJECT = sorted(glob.glob(os.path.join(ROOT, "*.py")))


def tree(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return ast.parse(f.read())


def strings(name):
    return {n.value for n in ast.walk(tree(name)) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)}


def test_the_per_env_values_live_only_in_env_defaults():
    """The help text's "auto: ..." is written from ENV_DEFAULTS, not by hand."""
    for f in fields(td3.Hyperparameters):
        if f.default == "auto" and f.name in td3.GENERAL_DEFAULTS:
            values = [td3.GENERAL_DEFAULTS[f.name]] + [v[f.name] for v in td3.ENV_DEFAULTS.values()
                                                      if f.name in v]
            doc = f.metadata["doc"]
            assert "auto:" not in doc and not any(isinstance(v, float) and f"{v:g}" in doc
                                                  for v in values), f.name
            said = settings.doc(td3.Hyperparameters, f)  # the help text, generated
            assert all(env_id in said for env_id, v in td3.ENV_DEFAULTS.items() if f.name in v)
    # notebooks and scripts get an env's settings from one function beside the table
    hp = td3.settings_for(__import__("gymnasium").make("BipedalWalker-v3"))
    assert hp.reward_floor == td3.ENV_DEFAULTS["BipedalWalker-v3"]["reward_floor"]


def test_what_a_resume_may_change_is_listed_once():
    literal = [(os.path.basename(p), n.targets[0].id) for p in PROJECT for n in ast.walk(tree(p))
               if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
               and "MAY_CHANGE" in n.targets[0].id and isinstance(n.value, ast.Tuple)
               and all(isinstance(e, ast.Constant) for e in n.value.elts)]
    assert literal == [("cli.py", "RESUME_MAY_CHANGE")]
    assert {runs.AS_CONFIG_KEY.get(o, o) for o in cli.RESUME_MAY_CHANGE} <= set(runs.MAY_CHANGE_ON_RESUME)


def test_sweeps_resume_reads_what_a_resume_may_change(monkeypatch):
    """sweep.py resumes a run with what cli.RESUME_MAY_CHANGE lists, not a list of its own."""
    import sweep
    argv = ["--env", "Pendulum-v1", "--device", "cpu", "--gamma", "0.9", "--quiet"]
    assert sweep.resume_argv("R", argv, 4)[6:] == ["--device", "cpu", "--quiet"]
    monkeypatch.setattr(cli, "RESUME_MAY_CHANGE", (*cli.RESUME_MAY_CHANGE, "gamma"))
    assert sweep.resume_argv("R", argv, 4)[6:] == ["--device", "cpu", "--gamma", "0.9", "--quiet"]


def test_check_port_names_every_done_flag_mistake_of_the_table(monkeypatch):
    """A done_flag mistake added to variants.py is named by check_port.py's done-flag piece."""
    import check_port
    assert check_port.DONE_FLAG_MISTAKES == [n for n, v in __import__("variants").TABLE.items()
                                             if v.options and v.options[0] == "--done_flag"]
    assert "truncation_as_death" in check_port.DONE_FLAG_MISTAKES


def test_config_json_is_parsed_in_one_place():
    readers = [os.path.basename(p) for p in PROJECT if any(
        isinstance(n, ast.Attribute) and n.attr == "load" and isinstance(n.value, ast.Name)
        and n.value.id == "json" for n in ast.walk(tree(p)))]
    assert readers == ["cli.py"]  # read_config; everything else asks it


def test_watch_plays_its_episodes_through_the_judging_module():
    calls = {n.func.attr for n in ast.walk(tree("watch.py")) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute)}
    assert "play" in calls and "step" not in calls
    assert watch.judging.play is __import__("judging").play


def test_the_action_bounds_are_computed_in_core_only():
    """core.Actor turns the env's Box into act_low, act_high, act_scale, act_bias once."""
    for p in PROJECT:
        src = open(p, encoding="utf-8").read()
        if os.path.basename(p) != "core.py":
            assert "act_bias -" not in src and "(high - low) / 2)" not in src.replace("act_", ""), p


def test_runs_knows_none_of_td3s_names():
    """td3.py hands runs.py the loss keys, the judged actor-critics and the progress phases."""
    names = {n.id for n in ast.walk(tree("runs.py")) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree("runs.py")) if isinstance(n, ast.Attribute)}
    said = strings("runs.py")
    for td3_name in ("LossQ", "LossPi", "ac_targ", "start_steps", "update_after", "replay_size",
                     "pi_optimizer", "q_optimizer"):
        assert td3_name not in names and td3_name not in said, td3_name
    assert not any("LossQ" in s or "replay_size" in s for s in said)


def test_each_one_line_refusal_is_written_once():
    src = open(os.path.join(ROOT, "runs.py"), encoding="utf-8").read()
    assert src.count("not a td3.py checkpoint") == 1
    assert src.count("check_same_run(") == 2  # its definition and its one call


def test_td3_takes_no_settings_rule_constants():
    """td3.py names each setting's rule by its words (settings.RULES), not by a constant."""
    imported = {a.asname or a.name for n in ast.walk(tree("td3.py")) if isinstance(n, ast.ImportFrom)
                and n.module == "settings" for a in n.names}
    assert imported == {"setting"}
    for f in fields(td3.Hyperparameters):
        assert f.metadata["rule"] in settings.RULES.values(), f.name
