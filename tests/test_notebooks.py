"""Every notebook runs top to bottom in fast mode (TD3_FAST=1) without a cell error."""
import glob
import os

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import ROOT

NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))


def test_there_are_four_notebooks():
    assert [os.path.basename(n)[:2] for n in NOTEBOOKS] == ["01", "02", "03", "04"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs_in_fast_mode(path, monkeypatch, tmp_path):
    monkeypatch.setenv("TD3_FAST", "1")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebooks' tempfile.mkdtemp() runs land here
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": os.path.dirname(path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors


def test_notebooks_stay_under_1mb():
    for path in NOTEBOOKS:
        assert os.path.getsize(path) < 1_000_000, path
