"""EpochLogger: progress.txt columns and rows, config.json, resume, atomic checkpoints."""
import json

import pytest
import torch

from logger import EpochLogger, read_progress
from run.directory import load_checkpoint, save_checkpoint


def one_epoch(logger, epoch):
    logger.store(EpRet=1.0 * epoch)
    logger.store(EpRet=3.0 * epoch)
    logger.store(Q=torch.tensor([1.0, 2.0]), Loss=torch.tensor(0.5))
    logger.store(Q=torch.tensor([3.0, 4.0]), Loss=torch.tensor(1.5))
    logger.log_tabular("Epoch", epoch)
    logger.log_tabular("EpRet", with_min_and_max=True)
    logger.log_tabular("Q", with_min_and_max=True)
    logger.log_tabular("Loss", average_only=True)
    logger.dump_tabular()


def test_progress_columns_and_rows(tmp_path, capsys):
    logger = EpochLogger(str(tmp_path))
    one_epoch(logger, 1)
    one_epoch(logger, 2)
    header, rows = read_progress(tmp_path / "progress.txt")
    assert header == ["Epoch", "AverageEpRet", "StdEpRet", "MaxEpRet", "MinEpRet",
                      "AverageQ", "StdQ", "MaxQ", "MinQ", "Loss"]
    assert len(rows) == 2
    r2 = dict(zip(header, map(float, rows[1])))
    assert r2["AverageEpRet"] == 4.0 and r2["StdEpRet"] == 2.0
    assert r2["MaxEpRet"] == 6.0 and r2["MinEpRet"] == 2.0
    assert r2["AverageQ"] == 2.5 and r2["MaxQ"] == 4.0 and r2["Loss"] == 1.0
    assert "AverageEpRet" in capsys.readouterr().out  # the table was printed


def test_a_stored_loss_keeps_no_graph(tmp_path):
    """td3.py stores its losses as they come out of backward(): the logger detaches them, so
    an epoch of updates does not hold an epoch of autograd graphs."""
    logger = EpochLogger(str(tmp_path))
    w = torch.ones(3, requires_grad=True)
    loss = (w * 2).sum()
    logger.store(LossQ=loss, EpRet=1.0)
    stored = logger.epoch_dict["LossQ"][0]
    assert not stored.requires_grad and stored.grad_fn is None and float(stored) == 6.0
    assert logger.epoch_dict["EpRet"] == [1.0]


def test_pandas_reads_progress(tmp_path):
    import pandas as pd  # in requirements.txt: a missing pandas is a failure, not a skip
    logger = EpochLogger(str(tmp_path))
    one_epoch(logger, 1)
    df = pd.read_table(tmp_path / "progress.txt")
    assert list(df["Epoch"]) == [1] and df["AverageEpRet"][0] == 2.0


def test_config_json(tmp_path):
    logger = EpochLogger(str(tmp_path), exp_name="exp")
    logger.save_config(dict(gamma=0.98, hidden_sizes=(4, 4), fn=len))
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["gamma"] == 0.98 and cfg["hidden_sizes"] == [4, 4] and cfg["exp_name"] == "exp"
    assert "len" in cfg["fn"]  # not json-able: kept as its string


def test_resume_appends_and_drops_rows_after_the_checkpoint(tmp_path):
    logger = EpochLogger(str(tmp_path))
    for e in (1, 2, 3):
        one_epoch(logger, e)
    # the checkpoint was at epoch 2; row 3 was written before a crash
    logger = EpochLogger(str(tmp_path))
    logger.resume(2)
    one_epoch(logger, 3)
    one_epoch(logger, 4)
    _, rows = read_progress(tmp_path / "progress.txt")
    assert [int(r[0]) for r in rows] == [1, 2, 3, 4]


def test_a_run_stopped_within_its_first_epoch_resumes_with_no_row_or_without_its_table(tmp_path):
    """A Ctrl-C checkpoint of epoch 0: its progress.txt may not exist yet, or hold a row
    written after the checkpoint (dropped)."""
    EpochLogger(str(tmp_path / "none")).resume(0)  # no table yet: nothing to keep
    logger = EpochLogger(str(tmp_path))
    one_epoch(logger, 1)
    logger = EpochLogger(str(tmp_path))
    logger.resume(0)
    one_epoch(logger, 1)
    _, rows = read_progress(tmp_path / "progress.txt")
    assert [int(r[0]) for r in rows] == [1]
    with pytest.raises(ValueError, match="is missing; the checkpoint is at epoch 2"):
        EpochLogger(str(tmp_path / "lost")).resume(2)


def test_changing_columns_is_a_one_line_refusal(tmp_path):
    """Code that logs another column than a run's progress.txt (a run resumed after a new
    column was added) is refused in one line naming the column (the run adds what to do:
    test_runs.py)."""
    logger = EpochLogger(str(tmp_path), quiet=True)
    one_epoch(logger, 1)
    resumed = EpochLogger(str(tmp_path), quiet=True)
    resumed.resume(1)
    resumed.store(EpRet=1.0)
    resumed.log_tabular("Epoch", 2)
    resumed.log_tabular("EpRet", with_min_and_max=True)
    resumed.log_tabular("Other", 1)
    with pytest.raises(ValueError, match=r"^this epoch's columns differ from .*progress.txt's "
                                         r"\(new: Other; missing: .*\)$"):
        resumed.dump_tabular()


def test_checkpoint_round_trip_and_no_temp_left(tmp_path):
    path = tmp_path / "ckpt.pt"
    save_checkpoint(dict(w=torch.arange(3.0), n=5, rng={"state": 2**100}), path)
    ck = load_checkpoint(path)
    assert torch.equal(ck["w"], torch.arange(3.0)) and ck["n"] == 5 and ck["rng"]["state"] == 2**100
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]


class Evil:
    def __reduce__(self):
        return (exec, ("open('PWNED', 'w').write('x')",))


def test_checkpoint_that_runs_code_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "evil.pt"
    torch.save({"ac": Evil()}, path)
    with pytest.raises(ValueError, match="refused"):
        load_checkpoint(path)
    assert not (tmp_path / "PWNED").exists()


def test_truncated_checkpoint_is_a_clear_error(tmp_path):
    path = tmp_path / "ckpt.pt"
    save_checkpoint(dict(w=torch.zeros(1000)), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated"):
        load_checkpoint(path)
