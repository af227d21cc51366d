"""watch.py: the shipped policy loads as plain weights and walks; actor files round-trip."""
import glob
import os

import pytest
import torch

import td3
import watch
from conftest import ROOT, SMALL, run_cli

SHIPPED = glob.glob(os.path.join(ROOT, "results", "**", "actor.pt"), recursive=True)


def test_one_trained_policy_ships_and_is_small():
    assert len(SHIPPED) == 1, SHIPPED
    assert os.path.getsize(SHIPPED[0]) < 1_000_000


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: os.path.relpath(p, ROOT))
def test_shipped_policy_loads_with_weights_only_and_walks(path):
    saved = torch.load(path, map_location="cpu", weights_only=True)  # no code runs on load
    assert set(saved) >= {"pi", "env_id", "ac_kwargs"} and "q1.net.0.weight" not in saved["pi"]
    rets = watch.watch(os.path.dirname(path), episodes=1)
    # One seeded episode (seed 10000). Box2D is deterministic but chaotic, so another CPU's
    # rounding can change the walk; a trained walker still covers the course.
    assert rets[0] > 200, rets


def test_save_actor_round_trips(tmp_path, pendulum):
    run = tmp_path / "run"
    td3.td3(pendulum, logger_kwargs=dict(output_dir=str(run), quiet=True), **SMALL)
    code, out, err = run_cli(run, "--save_actor", run / "actor.pt", script="watch.py")
    assert code == 0 and "wrote" in out, err
    from_actor = watch.watch(str(run / "actor.pt"), episodes=2)
    from_best = watch.watch(str(run / "best.pt"), episodes=2)
    assert from_actor == from_best


def test_watch_refuses_what_it_cannot_replay(tmp_path):
    code, _, err = run_cli(tmp_path / "nothing", script="watch.py")
    assert code == 2 and err.startswith("error: ") and "neither a run directory" in err
    assert len(err.strip().splitlines()) == 1
