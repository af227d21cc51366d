"""Each fact of the project is defined in one place and read from there: a second definition
makes one of these tests fail (the variants' table has its own, in test_variants.py)."""
import ast
import glob
import os
from dataclasses import fields

import td3
import watch
from conftest import ROOT
from run import directory, judging, settings

PROJECT = sorted(glob.glob(os.path.join(ROOT, "*.py")) + glob.glob(os.path.join(ROOT, "run", "*.py")))
RUN_PACKAGE = sorted(glob.glob(os.path.join(ROOT, "run", "*.py")))


def tree(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return ast.parse(f.read())


def strings(name):
    return {n.value for n in ast.walk(tree(name)) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)}


def rel(path):
    return os.path.relpath(path, ROOT)


def test_the_per_env_values_live_only_in_env_defaults():
    """The help text's "auto: ..." is written from ENV_DEFAULTS, not by hand."""
    for f in fields(td3.Hyperparameters):
        if f.default == "auto" and f.name in td3.GENERAL_DEFAULTS:
            values = [td3.GENERAL_DEFAULTS[f.name]] + [v[f.name] for v in td3.ENV_DEFAULTS.values()
                                                      if f.name in v]
            doc = f.metadata["doc"]
            assert "auto:" not in doc and not any(isinstance(v, float) and f"{v:g}" in doc
                                                  for v in values), f.name
            said = settings.doc(f, td3.Hyperparameters.AUTO)  # the help text, generated
            assert all(env_id in said for env_id, v in td3.ENV_DEFAULTS.items() if f.name in v)
    # notebooks and scripts get an env's settings from one function beside the table
    hp = td3.settings_for(__import__("gymnasium").make("BipedalWalker-v3"))
    assert hp.reward_floor == td3.ENV_DEFAULTS["BipedalWalker-v3"]["reward_floor"]


def test_what_a_resume_may_change_is_listed_once():
    literal = [(rel(p), n.targets[0].id) for p in PROJECT for n in ast.walk(tree(p))
               if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
               and "MAY_CHANGE" in n.targets[0].id and isinstance(n.value, ast.Tuple)
               and all(isinstance(e, ast.Constant) for e in n.value.elts)]
    assert literal == [("run/directory.py", "RESUME_MAY_CHANGE")]
    assert {directory.AS_CONFIG_KEY.get(o, o) for o in directory.RESUME_MAY_CHANGE} <= \
        set(directory.MAY_CHANGE_ON_RESUME)


def test_sweeps_resume_reads_what_a_resume_may_change(monkeypatch):
    """sweep.py resumes a run with what RESUME_MAY_CHANGE lists, not a list of its own."""
    import sweep
    argv = ["--env", "Pendulum-v1", "--device", "cpu", "--gamma", "0.9", "--quiet"]
    assert sweep.resume_argv("R", argv, 4)[6:] == ["--device", "cpu", "--quiet"]
    monkeypatch.setattr(directory, "RESUME_MAY_CHANGE", (*directory.RESUME_MAY_CHANGE, "gamma"))
    assert sweep.resume_argv("R", argv, 4)[6:] == ["--device", "cpu", "--gamma", "0.9", "--quiet"]


def test_check_port_names_every_done_flag_mistake_of_the_table(monkeypatch):
    """A done_flag mistake added to variants.py is named by check_port.py's done-flag piece."""
    import check_port
    assert check_port.DONE_FLAG_MISTAKES == [n for n, v in __import__("variants").TABLE.items()
                                             if v.options and v.options[0] == "--done_flag"]
    assert "truncation_as_death" in check_port.DONE_FLAG_MISTAKES


def test_config_json_is_parsed_in_one_place():
    readers = [rel(p) for p in PROJECT if any(
        isinstance(n, ast.Attribute) and n.attr == "load" and isinstance(n.value, ast.Name)
        and n.value.id == "json" for n in ast.walk(tree(p)))]
    assert readers == ["run/directory.py"]  # read_config; everything else asks it


def test_watch_plays_its_episodes_through_the_judging_module():
    calls = {n.func.attr for n in ast.walk(tree("watch.py")) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute)}
    assert "play" in calls and "step" not in calls
    assert watch.judging.play is judging.play


def test_the_action_bounds_are_computed_in_core_only():
    """core.Actor turns the env's Box into act_low, act_high, act_scale, act_bias once, and
    td3.py takes them from the actor once."""
    for p in PROJECT:
        src = open(p, encoding="utf-8").read()
        if os.path.basename(p) != "core.py":
            assert "act_bias -" not in src and "(high - low) / 2)" not in src.replace("act_", ""), p
    assert open(os.path.join(ROOT, "td3.py")).read().count("act_low, act_high, act_scale =") == 1


def test_the_run_package_knows_none_of_td3s_names():
    """td3.py hands the run the loss keys, the judged actor-critics, the progress phases and
    the settings that name a run (TRICKS)."""
    for p in RUN_PACKAGE:
        names = {n.id for n in ast.walk(tree(p)) if isinstance(n, ast.Name)} | {
            n.attr for n in ast.walk(tree(p)) if isinstance(n, ast.Attribute)}
        said = strings(p)
        for td3_name in ("LossQ", "LossPi", "ac_targ", "start_steps", "update_after", "replay_size",
                         "pi_optimizer", "q_optimizer", "twin", "policy_delay", "target_noise"):
            assert td3_name not in names and td3_name not in said, (p, td3_name)
        assert not any("LossQ" in s or "replay_size" in s for s in said), p


def test_each_one_line_refusal_is_written_once():
    src = open(os.path.join(ROOT, "run", "directory.py"), encoding="utf-8").read()
    assert src.count("not a td3.py checkpoint") == 1
    assert src.count("check_same_run(") == 2  # its definition and its one call


def test_td3_takes_no_settings_rule_constants():
    """td3.py names each setting's rule by its words (settings.RULES), not by a constant."""
    imported = {a.asname or a.name for n in ast.walk(tree("td3.py")) if isinstance(n, ast.ImportFrom)
                and n.module.startswith("run") for a in n.names}
    assert "setting" in imported and not imported & set(settings.RULES)
    for f in fields(td3.Hyperparameters):
        assert f.metadata["rule"] in settings.RULES.values(), f.name


def test_td3_imports_only_core_buffer_and_the_run_packages_door():
    project = {os.path.splitext(os.path.basename(p))[0] for p in PROJECT} | {"run"}
    imported = {(n.module if isinstance(n, ast.ImportFrom) else a.name)
                for n in ast.walk(tree("td3.py")) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
    assert {m for m in imported if m.split(".")[0] in project} == {"core", "buffer", "run.door"}


def test_one_draw_of_a_reset_seed_and_one_default_data_dir():
    """Exact resume needs every reset seed drawn the same way: one function draws them. The
    default data directory and the default experiment name are each written once."""
    sources = {rel(p): open(p, encoding="utf-8").read() for p in PROJECT}
    assert [p for p, s in sources.items() if "integers(2**31))" in s] == ["td3.py"]
    assert sources["td3.py"].count("integers(2**31)") == 1
    assert [p for p, s in sources.items() if '= "data"' in s or "'data'" in s] == ["run/directory.py"]
    assert [p for p, s in sources.items() if '"-".join(["td3"' in s] == ["run/door.py"]


def test_no_settings_object_is_built_outside_the_one_check():
    """td3() and the command line hand the settings on as they are: Hyperparameters is built
    from given values only where they are checked (run/config.py's resolve)."""
    for p in PROJECT:
        if rel(p) in ("run/config.py", "td3.py"):
            continue
        calls = {n.func.attr for n in ast.walk(tree(p)) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Attribute)}
        assert "Hyperparameters" not in calls and "settings_class" not in strings(p), rel(p)
