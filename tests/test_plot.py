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
