"""variants.py is the one table of variants: sweep, plot, diagnose and check_port read it, and
no other file of the project lists them again."""
import ast
import glob
import os

import check_port
import diagnose
import plot
import sweep
import variants
from conftest import ROOT
from notebooks import port_mistakes

# Names that only a variant has (the ablations' names are td3.py's switches too).
OWN = {n for n, v in variants.TABLE.items() if v.kind in ("mistake", "setting")} | {"ddpg"}


def lists_of_variants(path):
    """Literal lists, tuples, sets and dicts in a file that hold 3 or more variant names."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = []
    # an adapter's ``advice`` (check_port.py) keys sentences in a library's own terms by
    # variant name: words of its own, not a second list of the variants
    advice = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == "advice" for t in n.targets)}
    for node in ast.walk(tree):
        if id(node) in advice:
            continue
        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None) \
            if isinstance(node, (ast.List, ast.Tuple, ast.Set)) else None
        if items:
            names = {i.value for i in items if isinstance(i, ast.Constant) and i.value in OWN}
            if len(names) >= 3:
                found.append((os.path.relpath(path, ROOT), node.lineno, sorted(names)))
    return found


def test_no_file_lists_the_variants_a_second_time():
    files = glob.glob(os.path.join(ROOT, "*.py")) + glob.glob(os.path.join(ROOT, "notebooks", "*.py")) \
        + glob.glob(os.path.join(ROOT, "benchmarks", "*.py"))
    # tf_port.py is a port's own code: its switches are its own names (checked below)
    skip = {os.path.join(ROOT, f) for f in ("variants.py", os.path.join("notebooks", "tf_port.py"))}
    found = [hit for f in files if f not in skip for hit in lists_of_variants(f)]
    assert not found, f"variants listed outside variants.py: {found}"


def test_every_reader_takes_the_table():
    assert list(sweep.VARIANTS) == list(variants.runnable())
    assert plot.VARIANT_COLORS == variants.colors()
    assert set(diagnose.VARIANTS) == {variants.run_suffix(n) for n, v in variants.TABLE.items()
                                      if v.kind != "td3"}
    assert set(check_port.CRITIC_LOSS_MISTAKES) | set(check_port.TARGET_ACTION_MISTAKES) <= set(variants.TABLE)


def test_each_run_suffix_is_what_td3_py_names_the_run():
    import td3
    from run.door import exp_name
    for name, v in variants.TABLE.items():
        if v.kind in ("td3", "ablation"):
            hp = td3.Hyperparameters(twin="--no_twin" not in v.options,
                                     policy_delay=1 if "--no_delay" in v.options else 2,
                                     target_noise=0.0 if "--no_smoothing" in v.options else 0.2)
            assert exp_name("E-v0", hp, td3.Hyperparameters.TRICKS) == \
                "-".join(x for x in ("td3-E-v0", variants.run_suffix(name)) if x)


def test_every_swap_in_the_table_exists_and_every_switch_of_the_port_is_a_variant():
    for v in variants.TABLE.values():
        if v.options and v.options[0] in ("--critic_loss", "--target_action", "--done_flag"):
            assert callable(getattr(port_mistakes, v.options[1].split(":")[1]))
    try:  # the TensorFlow port's switches are variants too (where TensorFlow is installed)
        from notebooks import tf_port
    except ImportError:
        return
    assert set(tf_port.MISTAKES) <= set(variants.TABLE)
