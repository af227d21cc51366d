"""ReplayBuffer: ring wrap-around, uniform sampling of the filled part, dtypes, its state for a checkpoint."""
import numpy as np
import torch

from buffer import ReplayBuffer


def fill(buf, n, start=0):
    for i in range(start, start + n):
        buf.store(np.full(3, i), np.full(2, -i), float(i), np.full(3, i + 1), float(i % 2))


def test_shapes_and_dtypes():
    buf = ReplayBuffer(3, 2, 50, seed=0)
    fill(buf, 20)
    b = buf.sample_batch(16)
    assert b["obs"].shape == (16, 3) and b["obs2"].shape == (16, 3) and b["act"].shape == (16, 2)
    assert b["rew"].shape == (16,) and b["done"].shape == (16,)
    assert all(v.dtype == torch.float32 for v in b.values())
    # rows stay together: obs2 = obs + 1, act = -obs, rew = obs
    assert torch.equal(b["obs2"][:, 0], b["obs"][:, 0] + 1)
    assert torch.equal(b["act"][:, 0], -b["obs"][:, 0])
    assert torch.equal(b["rew"], b["obs"][:, 0])


def test_wrap_around_overwrites_oldest():
    buf = ReplayBuffer(3, 2, 10, seed=0)
    fill(buf, 25)
    assert buf.size == 10 and buf.ptr == 5
    assert sorted(buf.rew_buf.tolist()) == list(range(15, 25))  # the newest 10 only
    assert buf.rew_buf[4] == 24 and buf.rew_buf[5] == 15


def test_samples_only_the_filled_part_uniformly():
    buf = ReplayBuffer(3, 2, 1000, seed=1)
    fill(buf, 10)
    batches = [buf.sample_batch(500) for _ in range(40)]
    rews = torch.cat([b["rew"] for b in batches]).numpy()
    obs2 = torch.cat([b["obs2"][:, 0] for b in batches]).numpy()
    # never an unfilled (zero-padded) row: filled rows have obs2 = i + 1 >= 1, unfilled 0
    assert obs2.min() >= 1 and rews.min() >= 0 and rews.max() <= 9
    counts = np.bincount(rews.astype(int), minlength=10)
    assert counts.min() > 0.9 * 2000 and counts.max() < 1.1 * 2000  # 20000 draws, 10 rows


def test_state_dict_round_trip(tmp_path):
    buf = ReplayBuffer(3, 2, 10, seed=3)
    fill(buf, 13)
    path = tmp_path / "buf.pt"
    torch.save(buf.state_dict(), path)  # as a checkpoint holds it
    other = ReplayBuffer(3, 2, 10, seed=99)
    other.load_state_dict(torch.load(path, weights_only=True))
    assert (other.ptr, other.size) == (buf.ptr, buf.size)
    for name in ("obs_buf", "obs2_buf", "act_buf", "rew_buf", "done_buf"):
        assert np.array_equal(getattr(other, name), getattr(buf, name))
    # the sampling RNG comes back too: the same next batch
    assert torch.equal(other.sample_batch(8)["rew"], buf.sample_batch(8)["rew"])


def test_partly_filled_state_saves_only_filled_rows():
    buf = ReplayBuffer(3, 2, 1000, seed=0)
    fill(buf, 7)
    assert buf.state_dict()["obs"].shape == (7, 3)
