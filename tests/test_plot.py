"""plot.py: a PNG from fake runs, and each bad input gets one line and exit 2."""
import json
import subprocess
import sys

import numpy as np
import pytest

import plot
from conftest import ROOT, run_cli


def fake_run(path, exp_name, seed, n=5):
    path.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    lines = ["Epoch\tAverageTestEpRet\tLossQ\tTotalEnvInteracts"]
    for e in range(1, n + 1):
        lines.append(f"{e}\t{e * 10 + rng.normal():.3f}\t{1 / e:.3f}\t{e * 1000}")
    (path / "progress.txt").write_text("\n".join(lines) + "\n")
    (path / "config.json").write_text(json.dumps(dict(exp_name=exp_name, seed=seed)))


@pytest.fixture
def runs(tmp_path):
    for exp in ("a", "b"):
        for seed in (0, 1):
            fake_run(tmp_path / exp / f"{exp}_s{seed}", exp, seed)
    return tmp_path


def test_png_from_two_runs_of_two_seeds(runs, tmp_path):
    out = tmp_path / "curve.png"
    code, stdout, stderr = run_cli(runs, "--out", out, "--hline", 30, script="plot.py")
    assert code == 0, stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_groups_by_exp_name_with_mean_and_std(runs):
    data = plot.get_datasets([str(runs)])
    curves = plot.group_curves(data, "AverageTestEpRet", "TotalEnvInteracts")
    assert sorted(curves) == ["a", "b"] and curves["a"]["n"] == 2
    per_seed = [r["data"]["AverageTestEpRet"] for r in data if r["exp_name"] == "a"]
    assert np.allclose(curves["a"]["mean"], np.mean(per_seed, axis=0))
    assert np.allclose(curves["a"]["std"], np.std(per_seed, axis=0))


def test_select_exclude_count_and_smooth(runs, tmp_path):
    assert {r["exp_name"] for r in plot.get_datasets([str(runs)], select=["/a_"])} == {"a"}
    assert {r["exp_name"] for r in plot.get_datasets([str(runs)], exclude=["/a_"])} == {"b"}
    assert np.allclose(plot.smooth(np.array([0.0, 3.0, 6.0]), 3), [1.5, 3.0, 4.5])
    code, _, err = run_cli(runs, "--count", "--smooth", 2, "--value", "TestEpRet", "LossQ",
                           "--out", tmp_path / "c.png", script="plot.py")
    assert code == 0, err
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_progress_file_is_one_line_error(tmp_path):
    (tmp_path / "empty").mkdir()
    code, _, err = run_cli(tmp_path / "empty", "--out", tmp_path / "x.png", script="plot.py")
    assert code == 2
    assert err.strip().splitlines() == [f"error: no progress.txt found under {tmp_path / 'empty'}"]


def test_unknown_value_lists_the_columns(runs, tmp_path):
    code, _, err = run_cli(runs, "--value", "Nope", "--out", tmp_path / "x.png", script="plot.py")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "no column 'Nope'" in err and "AverageTestEpRet" in err and "LossQ" in err


def test_plot_imports_neither_torch_nor_gymnasium():
    # In a fresh interpreter: indirect imports (plot -> logger, runs -> ...) count too.
    code = "import sys, plot; print(sorted({'torch', 'gymnasium'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


# ------------------------------------------------------------------------------------------
# Colours: one per variant, whatever else a figure shows
# ------------------------------------------------------------------------------------------
ENV = "td3-BipedalWalker-v3"
VARIANT_DIRS = {"td3": ENV, "no_twin": f"{ENV}-no_twin", "no_delay": f"{ENV}-no_delay",
                "ddpg": f"{ENV}-no_twin-no_delay-no_smoothing",
                "shared_noise": f"{ENV}-shared_noise"}


@pytest.fixture
def variants(tmp_path):
    for exp in VARIANT_DIRS.values():
        for seed in (0, 1):
            fake_run(tmp_path / exp / f"{exp}_s{seed}", exp, seed)
    return tmp_path


def line_colors(variants, keep, **kw):
    """``{legend label: colour}`` of the lines plot_value draws for the variants in ``keep``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex
    found = plot.get_datasets([str(variants)])  # groups drawn in the order of ``keep``
    runs = [r for v in keep for r in found if r["exp_name"] == VARIANT_DIRS[v]]
    fig, ax = plt.subplots()
    plot.plot_value(ax, runs, "TestEpRet", **kw)
    out = {line.get_label(): to_hex(line.get_color()) for line in ax.get_lines()}
    plt.close(fig)
    return out


def test_a_variant_has_the_same_colour_in_every_figure(variants):
    # Before, colours went by position: no_twin was orange beside TD3 and green after no_delay.
    a = line_colors(variants, ["td3", "no_twin"])
    b = line_colors(variants, ["no_delay", "ddpg", "no_twin", "td3"])
    c = line_colors(variants, ["shared_noise"])
    assert a[f"{VARIANT_DIRS['no_twin']} (n=2)"] == b[f"{VARIANT_DIRS['no_twin']} (n=2)"] \
        == plot.VARIANT_COLORS["no_twin"]
    assert a[f"{ENV} (n=2)"] == b[f"{ENV} (n=2)"] == plot.VARIANT_COLORS["td3"]
    assert b[f"{VARIANT_DIRS['ddpg']} (n=2)"] == plot.VARIANT_COLORS["ddpg"]
    assert c[f"{VARIANT_DIRS['shared_noise']} (n=2)"] == plot.VARIANT_COLORS["shared_noise"]
    assert len(set(plot.VARIANT_COLORS.values())) == len(plot.VARIANT_COLORS)


def test_variant_names_are_read_from_the_run_names():
    assert plot.variant_of("td3-Pendulum-v1") == "td3"
    assert plot.variant_of("td3-BipedalWalker-v3-no_twin-no_delay-no_smoothing") == "ddpg"
    assert plot.variant_of("td3-BipedalWalker-v3-truncation_as_death") == "truncation_as_death"
    assert plot.variant_of("td3-BipedalWalker-v3-no_twin-no_delay") is None  # not a variant
    assert plot.variant_of("my_port") is None


def test_colors_set_by_group_legend_name_or_variant(variants):
    red, green = "#ff0000", "#008000"
    by_variant = line_colors(variants, ["td3", "no_twin"], colors={"no_twin": "red"})
    assert by_variant[f"{VARIANT_DIRS['no_twin']} (n=2)"] == red
    by_legend = line_colors(variants, ["td3", "no_twin"], legend=["TD3", "one critic"],
                            colors={"TD3": "green"})
    assert by_legend["TD3 (n=2)"] == green
    assert by_legend["one critic (n=2)"] == plot.VARIANT_COLORS["no_twin"]


def test_other_groups_take_colours_no_variant_here_has(runs, variants):
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.colors import to_hex
    colours = plot.group_colors(["mine", ENV, "theirs"])
    assert colours[ENV] == plot.VARIANT_COLORS["td3"]
    assert len({to_hex(c) for c in colours.values()}) == 3


def test_count_draws_each_seed_in_its_groups_colour_family(variants):
    # Before, every run took the next colour of the cycle, so TD3's seeds read as three groups.
    alone = line_colors(variants, ["td3"], count=True)
    mixed = line_colors(variants, ["no_twin", "td3"], count=True)
    td3_lines = {k: v for k, v in mixed.items() if k.startswith(f"{ENV}: ")}
    assert td3_lines == alone and len(alone) == 2
    assert all(v not in alone.values() for k, v in mixed.items() if k not in alone)


@pytest.mark.parametrize("item, message", [
    ("no_twin", "--color wants GROUP=COLOR (e.g. no_twin=orange), got 'no_twin'"),
    ("no_twin=", "--color wants GROUP=COLOR (e.g. no_twin=orange), got 'no_twin='"),
    ("no_twin=notacolour", "--color no_twin=notacolour: 'notacolour' is not a matplotlib colour"),
])
def test_bad_color_is_one_line_error(variants, tmp_path, item, message):
    code, _, err = run_cli(variants, "--color", item, "--out", tmp_path / "x.png", script="plot.py")
    assert code == 2 and err.strip().splitlines() == [f"error: {message}"]


def test_color_for_a_group_not_drawn_is_one_line_error(variants, tmp_path):
    code, _, err = run_cli(variants, "--select", "no_delay", "--color", "no_twin=red",
                           "--out", tmp_path / "x.png", script="plot.py")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("error: --color no_twin: no such group") and f"{ENV}-no_delay" in err


def test_color_option_reaches_the_figure(variants, tmp_path, monkeypatch):
    seen = {}
    real = plot.plot_value

    def spy(ax, *a, **kw):
        col = real(ax, *a, **kw)
        seen.update({line.get_label(): line.get_color() for line in ax.get_lines()})
        return col
    monkeypatch.setattr(plot, "plot_value", spy)
    plot.main([str(variants), "--select", "no_twin", "--color", "no_twin=#123456",
               "--out", str(tmp_path / "x.png")])
    assert seen[f"{VARIANT_DIRS['no_twin']} (n=2)"] == "#123456"
