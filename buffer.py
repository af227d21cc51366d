"""The replay buffer: preallocated float32 ring arrays.

The blog this project grew from kept transitions in Python lists, dropped the oldest with
``list.pop(0)`` (O(n) per step once full) and turned the sampled list into a tensor at
every update. Here the storage is five numpy arrays allocated once: ``store`` writes one
row at the ring pointer (O(1)), and ``sample_batch`` gathers random rows straight into
torch tensors.

Rewards and done flags are 1-D, shape ``(B,)``, to match the critics' ``(B,)`` output.
``done`` must be ``terminated`` only: a time-limit truncation is not a terminal state.
"""
import numpy as np
import torch


class ReplayBuffer:
    """A FIFO store of (o, a, r, o2, d) transitions of fixed capacity ``size``."""

    def __init__(self, obs_dim, act_dim, size, device="cpu", seed=None):
        self.obs_buf = np.zeros((size, obs_dim), dtype=np.float32)
        self.obs2_buf = np.zeros((size, obs_dim), dtype=np.float32)
        self.act_buf = np.zeros((size, act_dim), dtype=np.float32)
        self.rew_buf = np.zeros(size, dtype=np.float32)
        self.done_buf = np.zeros(size, dtype=np.float32)
        self.ptr, self.size, self.max_size = 0, 0, size
        self.device = torch.device(device)
        self.rng = np.random.default_rng(seed)

    @staticmethod
    def nbytes(obs_dim, act_dim, size):
        """The memory its arrays take: ``size`` rows of o, o2, a, r, done, float32."""
        return 4 * size * (2 * obs_dim + act_dim + 2)

    def describe(self):
        """Its size, for the line a run starts with."""
        obs_dim, act_dim = self.obs_buf.shape[1], self.act_buf.shape[1]
        return (f"replay buffer: {self.max_size:,} x {2 * obs_dim + act_dim + 2} floats = "
                f"{self.nbytes(obs_dim, act_dim, self.max_size) / 1e6:,.0f} MB")

    def store(self, obs, act, rew, next_obs, done):
        self.obs_buf[self.ptr] = obs
        self.act_buf[self.ptr] = act
        self.rew_buf[self.ptr] = rew
        self.obs2_buf[self.ptr] = next_obs
        self.done_buf[self.ptr] = done
        self.ptr = (self.ptr + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def sample_batch(self, batch_size=256):
        """A uniform sample (with replacement) from the filled part, as a dict of tensors."""
        idxs = self.rng.integers(0, self.size, size=batch_size)
        # torch.from_numpy shares the gathered array's memory: no second copy on the CPU.
        batch = dict(obs=self.obs_buf[idxs], obs2=self.obs2_buf[idxs], act=self.act_buf[idxs],
                     rew=self.rew_buf[idxs], done=self.done_buf[idxs])
        return {k: torch.from_numpy(v).to(self.device) for k, v in batch.items()}

    # -- saving the filled part, so that a resumed run samples exactly what it would have --
    def state_dict(self):
        """Tensors of the filled rows plus counters and the sampling RNG's state; loadable
        with ``torch.load(..., weights_only=True)``."""
        n = self.size
        return dict(obs=torch.from_numpy(self.obs_buf[:n].copy()),
                    obs2=torch.from_numpy(self.obs2_buf[:n].copy()),
                    act=torch.from_numpy(self.act_buf[:n].copy()),
                    rew=torch.from_numpy(self.rew_buf[:n].copy()),
                    done=torch.from_numpy(self.done_buf[:n].copy()),
                    ptr=self.ptr, size=self.size, max_size=self.max_size,
                    rng=self.rng.bit_generator.state)

    def load_state_dict(self, state):
        if state["max_size"] != self.max_size or state["obs"].shape[1:] != self.obs_buf.shape[1:] \
                or state["act"].shape[1:] != self.act_buf.shape[1:]:
            raise ValueError(
                f"saved buffer holds {state['max_size']} x obs {tuple(state['obs'].shape[1:])}"
                f" x act {tuple(state['act'].shape[1:])}; this one is {self.max_size} x obs "
                f"{self.obs_buf.shape[1:]} x act {self.act_buf.shape[1:]}")
        n = state["size"]
        for name in ("obs", "obs2", "act", "rew", "done"):
            getattr(self, name + "_buf")[:n] = state[name].numpy()
        self.ptr, self.size = state["ptr"], n
        self.rng.bit_generator.state = state["rng"]
