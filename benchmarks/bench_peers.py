"""Updates per second of six TD3s side by side, each running its own update code.

    pip install -r requirements-ports.txt
    python benchmarks/bench_peers.py [--updates 1000] [--rounds 5] [--threads 1 2] [--only NAME ...]

All six do the same work: BipedalWalker-v3's sizes (obs 24, act 4, actions in [-1, 1]), an actor
and twin critics of two hidden layers of 256 ReLU units, batch 256, Adam at 1e-3 for actor and
critics, gamma 0.98, tau 0.005 (polyak 0.995), policy delay 2, target noise 0.2 clipped at 0.5,
float32, on the CPU. One update is one critic step, plus the actor and target step every second
update, as each library does it. Each holds the same 100,000 random transitions (numpy seed 0) in
a buffer of its own and draws a batch at every update, inside the timed part:

- td3.py: ``td3.build_update``; batches from ``buffer.ReplayBuffer.sample_batch`` (uniform draw);
- sb3: Stable-Baselines3's ``TD3.train(gradient_steps=N)``, which samples its own replay buffer;
- cleanrl: the update block of CleanRL's td3_continuous_action.py, written here in its style
  (CleanRL is scripts, not a library); batches by a uniform index draw, as its buffer's sample();
- skrl: its TD3 agent's ``update()``, which samples its RandomMemory (its default: no replacement);
- tianshou: its TD3 algorithm's ``update(buffer, 256)``, which samples its ReplayBuffer and
  computes the 1-step return there;
- torchrl: ``TD3Loss`` (l2) and ``SoftUpdate`` in the update loop of its examples/td3 script;
  batches from a TensorDictReplayBuffer on LazyTensorStorage (without the example's prefetch).

Logging inside a library's update stays in (SB3, skrl and Tianshou call ``.item()`` at each
update); the loss lists the CleanRL and TorchRL scripts keep in their loops are left out. For each
torch thread count, ``--rounds`` rounds run every implementation in turn, each a 20-update warm-up
then ``--updates`` updates timed with perf_counter; the medians go in a markdown table. After every
timed block each implementation must have trained (its critic loss on a fixed batch changed, its
actor's weights moved), else the script stops with one line. A library that cannot be imported is
named in one line and skipped. ``--only`` picks implementations by name: td3.py, sb3, cleanrl,
skrl, tianshou, torchrl.
"""
import argparse
import copy
import logging
import math
import os
import statistics
import sys
import time
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

# TensorFlow (requirements-ports.txt, for check_port.py's Keras port) stays out of this process:
# torch.utils.tensorboard, which SB3 and Tianshou import, would load it; nothing timed uses it.
sys.modules.setdefault("tensorflow", None)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import core  # noqa: E402
import td3  # noqa: E402
from buffer import ReplayBuffer  # noqa: E402

OBS, ACT, HIDDEN, BATCH, SIZE = 24, 4, 256, 256, 100_000
GAMMA, TAU, LR, DELAY, NOISE, CLIP = 0.98, 0.005, 1e-3, 2, 0.2, 0.5
WARMUP = 20
OBS_SPACE = gym.spaces.Box(-np.inf, np.inf, (OBS,), np.float32)
ACT_SPACE = gym.spaces.Box(-1.0, 1.0, (ACT,), np.float32)


def transitions(seed=0):
    """The same SIZE random transitions for everyone: o, a in [-1, 1], r, o2, d (1% terminal)."""
    rng = np.random.default_rng(seed)
    return dict(obs=rng.standard_normal((SIZE, OBS), dtype=np.float32),
                act=rng.uniform(-1, 1, (SIZE, ACT)).astype(np.float32),
                rew=rng.standard_normal(SIZE, dtype=np.float32),
                obs2=rng.standard_normal((SIZE, OBS), dtype=np.float32),
                done=(rng.random(SIZE) < 0.01).astype(np.float32))


class Impl:
    """One implementation: ``run(n)`` does n updates, sampling included; ``critics(o, a)`` gives
    its live (Q1, Q2), each (B,); ``actor(o)`` its live actions; ``actor_params()`` its weights."""

    def __init__(self, name, includes, run, critics, actor, actor_params):
        self.name, self.includes, self.run = name, includes, run
        self.critics, self.actor, self.actor_params = critics, actor, actor_params


# ------------------------------------------------------------------------------------------
# 1. td3.py
# ------------------------------------------------------------------------------------------
def make_td3py(data):
    ac = core.MLPActorCritic(OBS_SPACE, ACT_SPACE, hidden_sizes=(HIDDEN, HIDDEN))
    ac_targ = copy.deepcopy(ac).requires_grad_(False)
    update, _, _ = td3.build_update(ac, ac_targ, td3.Hyperparameters(gamma=GAMMA))
    buf = ReplayBuffer(OBS, ACT, SIZE, seed=0)
    for i in range(SIZE):
        buf.store(data["obs"][i], data["act"][i], data["rew"][i], data["obs2"][i], data["done"][i])
    n = [0]

    def run(k):
        for _ in range(k):
            n[0] += 1
            update(buf.sample_batch(BATCH), n[0])

    return Impl("td3.py", "sample_batch (uniform draw) + critic step (+ actor, targets every 2nd)",
                run, lambda o, a: (ac.q1(o, a), ac.q2(o, a)), ac.pi, ac.pi.parameters)


# ------------------------------------------------------------------------------------------
# 2. Stable-Baselines3
# ------------------------------------------------------------------------------------------
def make_sb3(data):
    from stable_baselines3 import TD3
    from stable_baselines3.common.logger import configure

    class Spaces(gym.Env):  # SB3 builds its networks from an env's spaces
        observation_space, action_space = OBS_SPACE, ACT_SPACE

    model = TD3("MlpPolicy", Spaces(), learning_rate=LR, buffer_size=SIZE, learning_starts=0,
                batch_size=BATCH, tau=TAU, gamma=GAMMA, train_freq=1, gradient_steps=1,
                policy_delay=DELAY, target_policy_noise=NOISE, target_noise_clip=CLIP, seed=0,
                device="cpu", policy_kwargs=dict(net_arch=[HIDDEN, HIDDEN]))
    model.set_logger(configure(None, []))
    rb = model.replay_buffer  # filled in place: the arrays add() writes, one env, all rows
    rb.observations[:, 0], rb.next_observations[:, 0] = data["obs"], data["obs2"]
    rb.actions[:, 0], rb.rewards[:, 0], rb.dones[:, 0] = data["act"], data["rew"], data["done"]
    rb.pos, rb.full = 0, True
    model._n_updates = 0  # train() counts on from here: the actor steps at every even count
    p = model.policy

    def critics(o, a):
        q1, q2 = p.critic(o, a)
        return q1.squeeze(-1), q2.squeeze(-1)

    return Impl("sb3", "own sampling inside train() + critic step (+ actor, targets every "
                "2nd)", lambda k: model.train(gradient_steps=k, batch_size=BATCH),
                critics, p.actor, p.actor.parameters)


# ------------------------------------------------------------------------------------------
# 3. CleanRL: cleanrl/td3_continuous_action.py's networks and update block, in its style
# (its lines, long ones included)
# ------------------------------------------------------------------------------------------
class QNetwork(nn.Module):
    def __init__(self, env):
        super().__init__()
        self.fc1 = nn.Linear(
            np.array(env.single_observation_space.shape).prod() + np.prod(env.single_action_space.shape),
            256,
        )
        self.fc2 = nn.Linear(256, 256)
        self.fc3 = nn.Linear(256, 1)

    def forward(self, x, a):
        x = torch.cat([x, a], 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


class Actor(nn.Module):
    def __init__(self, env):
        super().__init__()
        self.fc1 = nn.Linear(np.array(env.single_observation_space.shape).prod(), 256)
        self.fc2 = nn.Linear(256, 256)
        self.fc_mu = nn.Linear(256, np.prod(env.single_action_space.shape))
        # action rescaling
        self.register_buffer(
            "action_scale",
            torch.tensor(
                (env.single_action_space.high - env.single_action_space.low) / 2.0,
                dtype=torch.float32,
            ),
        )
        self.register_buffer(
            "action_bias",
            torch.tensor(
                (env.single_action_space.high + env.single_action_space.low) / 2.0,
                dtype=torch.float32,
            ),
        )

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = torch.tanh(self.fc_mu(x))
        return x * self.action_scale + self.action_bias


def make_cleanrl(data):
    args = SimpleNamespace(learning_rate=LR, gamma=GAMMA, tau=TAU, batch_size=BATCH,
                           policy_noise=NOISE, noise_clip=CLIP, policy_frequency=DELAY)
    envs = SimpleNamespace(single_observation_space=OBS_SPACE, single_action_space=ACT_SPACE)
    device = torch.device("cpu")
    actor = Actor(envs).to(device)
    qf1 = QNetwork(envs).to(device)
    qf2 = QNetwork(envs).to(device)
    qf1_target = QNetwork(envs).to(device)
    qf2_target = QNetwork(envs).to(device)
    target_actor = Actor(envs).to(device)
    target_actor.load_state_dict(actor.state_dict())
    qf1_target.load_state_dict(qf1.state_dict())
    qf2_target.load_state_dict(qf2.state_dict())
    q_optimizer = optim.Adam(list(qf1.parameters()) + list(qf2.parameters()), lr=args.learning_rate)
    actor_optimizer = optim.Adam(list(actor.parameters()), lr=args.learning_rate)

    # Its replay buffer's sample(): a uniform index draw, the rows copied into new tensors.
    rng = np.random.default_rng(0)
    cols = dict(observations=data["obs"], actions=data["act"], next_observations=data["obs2"],
                rewards=data["rew"][:, None], dones=data["done"][:, None])

    def sample(batch_size):
        idx = rng.integers(0, SIZE, size=batch_size)
        return SimpleNamespace(**{k: torch.tensor(v[idx], device=device) for k, v in cols.items()})

    step = [0]

    def run(k):
        for global_step in range(step[0] + 1, step[0] + 1 + k):
            data = sample(args.batch_size)
            with torch.no_grad():
                clipped_noise = (torch.randn_like(data.actions, device=device) * args.policy_noise).clamp(
                    -args.noise_clip, args.noise_clip
                ) * target_actor.action_scale

                next_state_actions = (target_actor(data.next_observations) + clipped_noise).clamp(
                    envs.single_action_space.low[0], envs.single_action_space.high[0]
                )
                qf1_next_target = qf1_target(data.next_observations, next_state_actions)
                qf2_next_target = qf2_target(data.next_observations, next_state_actions)
                min_qf_next_target = torch.min(qf1_next_target, qf2_next_target)
                next_q_value = data.rewards.flatten() + (1 - data.dones.flatten()) * args.gamma * (min_qf_next_target).view(-1)

            qf1_a_values = qf1(data.observations, data.actions).view(-1)
            qf2_a_values = qf2(data.observations, data.actions).view(-1)
            qf1_loss = F.mse_loss(qf1_a_values, next_q_value)
            qf2_loss = F.mse_loss(qf2_a_values, next_q_value)
            qf_loss = qf1_loss + qf2_loss

            # optimize the model
            q_optimizer.zero_grad()
            qf_loss.backward()
            q_optimizer.step()

            if global_step % args.policy_frequency == 0:
                actor_loss = -qf1(data.observations, actor(data.observations)).mean()
                actor_optimizer.zero_grad()
                actor_loss.backward()
                actor_optimizer.step()

                # update the target network
                for param, target_param in zip(actor.parameters(), target_actor.parameters()):
                    target_param.data.copy_(args.tau * param.data + (1 - args.tau) * target_param.data)
                for param, target_param in zip(qf1.parameters(), qf1_target.parameters()):
                    target_param.data.copy_(args.tau * param.data + (1 - args.tau) * target_param.data)
                for param, target_param in zip(qf2.parameters(), qf2_target.parameters()):
                    target_param.data.copy_(args.tau * param.data + (1 - args.tau) * target_param.data)
        step[0] += k

    return Impl("cleanrl", "uniform index draw + critic step (+ actor, Polyak loop every 2nd)", run, lambda o, a: (qf1(o, a).view(-1), qf2(o, a).view(-1)), actor,
                actor.parameters)


# ------------------------------------------------------------------------------------------
# 4. skrl
# ------------------------------------------------------------------------------------------
def make_skrl(data):
    from skrl.agents.torch.td3 import TD3, TD3_CFG
    from skrl.memories.torch import RandomMemory
    from skrl.models.torch import DeterministicMixin, Model
    from skrl.resources.noises.torch import GaussianNoise

    class Policy(DeterministicMixin, Model):
        def __init__(self, observation_space, action_space, device):
            Model.__init__(self, observation_space=observation_space, action_space=action_space,
                           device=device)
            DeterministicMixin.__init__(self, clip_actions=False)
            self.net = nn.Sequential(nn.Linear(self.num_observations, HIDDEN), nn.ReLU(),
                                     nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                                     nn.Linear(HIDDEN, self.num_actions), nn.Tanh())

        def compute(self, inputs, role=""):
            return self.net(inputs["observations"]), {}

    class Critic(DeterministicMixin, Model):
        def __init__(self, observation_space, action_space, device):
            Model.__init__(self, observation_space=observation_space, action_space=action_space,
                           device=device)
            DeterministicMixin.__init__(self, clip_actions=False)
            self.net = nn.Sequential(nn.Linear(self.num_observations + self.num_actions, HIDDEN),
                                     nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                                     nn.Linear(HIDDEN, 1))

        def compute(self, inputs, role=""):
            return self.net(torch.cat([inputs["observations"], inputs["taken_actions"]], dim=1)), {}

    device = "cpu"
    models = {"policy": Policy(OBS_SPACE, ACT_SPACE, device),
              "target_policy": Policy(OBS_SPACE, ACT_SPACE, device)}
    for name in ("critic_1", "critic_2", "target_critic_1", "target_critic_2"):
        models[name] = Critic(OBS_SPACE, ACT_SPACE, device)
    memory = RandomMemory(memory_size=SIZE, num_envs=1, device=device)
    cfg = TD3_CFG(gradient_steps=1, batch_size=BATCH, discount_factor=GAMMA, polyak=TAU,
                  learning_rate=(LR, LR), policy_delay=DELAY,
                  exploration_noise=GaussianNoise,
                  exploration_noise_kwargs=dict(mean=0.0, std=0.1, device=device),
                  smooth_regularization_noise=GaussianNoise,
                  smooth_regularization_noise_kwargs=dict(mean=0.0, std=NOISE, device=device),
                  smooth_regularization_clip=CLIP)
    cfg.experiment.write_interval = 0  # no TensorBoard writer, no checkpoints on disk
    cfg.experiment.checkpoint_interval = 0
    agent = TD3(models=models, memory=memory, observation_space=OBS_SPACE, action_space=ACT_SPACE,
                device=device, cfg=cfg)
    agent.init()
    t = torch.from_numpy
    memory.add_samples(observations=t(data["obs"]), actions=t(data["act"]),
                       rewards=t(data["rew"])[:, None], next_observations=t(data["obs2"]),
                       terminated=t(data["done"])[:, None].bool())
    step = [0]

    def run(k):
        agent.enable_models_training_mode(True)
        for _ in range(k):
            step[0] += 1
            agent.update(timestep=step[0], timesteps=10**9)
        agent.enable_models_training_mode(False)
        agent.tracking_data.clear()  # what post_interaction writes out and clears

    def critics(o, a):
        inputs = {"observations": o, "taken_actions": a}
        return (agent.critic_1.act(inputs, role="critic_1")[0].squeeze(-1),
                agent.critic_2.act(inputs, role="critic_2")[0].squeeze(-1))

    return Impl("skrl", "own sampling (randperm) inside update() + critic step (+ actor, "
                "targets every 2nd)", run, critics,
                lambda o: agent.policy.act({"observations": o}, role="policy")[0],
                agent.policy.parameters)


# ------------------------------------------------------------------------------------------
# 5. Tianshou
# ------------------------------------------------------------------------------------------
def make_tianshou(data):
    from tianshou.algorithm import TD3
    from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import ReplayBuffer as TianshouBuffer
    from tianshou.exploration import GaussianNoise
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorDeterministic, ContinuousCritic
    from tianshou.utils.torch_utils import policy_within_training_step

    actor = ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=OBS, hidden_sizes=[HIDDEN, HIDDEN]), action_shape=ACT,
        max_action=1.0)
    critic1, critic2 = (ContinuousCritic(preprocess_net=Net(
        state_shape=OBS, action_shape=ACT, hidden_sizes=[HIDDEN, HIDDEN], concat=True))
        for _ in range(2))
    policy = ContinuousDeterministicPolicy(actor=actor, exploration_noise=GaussianNoise(sigma=0.1),
                                           action_space=ACT_SPACE, observation_space=OBS_SPACE)
    algorithm = TD3(policy=policy, policy_optim=AdamOptimizerFactory(lr=LR), critic=critic1,
                    critic_optim=AdamOptimizerFactory(lr=LR), critic2=critic2,
                    critic2_optim=AdamOptimizerFactory(lr=LR), tau=TAU, gamma=GAMMA,
                    policy_noise=NOISE, update_actor_freq=DELAY, noise_clip=CLIP,
                    n_step_return_horizon=1)
    terminated = data["done"].astype(bool)
    buf = TianshouBuffer.from_data(obs=data["obs"], act=data["act"], rew=data["rew"],
                                   terminated=terminated, truncated=np.zeros(SIZE, bool),
                                   done=terminated, obs_next=data["obs2"])

    def run(k):
        for _ in range(k):  # as its OffPolicyTrainer's training step calls it
            with policy_within_training_step(policy):
                algorithm.update(buffer=buf, sample_size=BATCH)

    return Impl("tianshou", "own sampling and 1-step return inside update() + 2 critic steps "
                "(+ actor, targets every 2nd)", run,
                lambda o, a: (critic1(o, a).squeeze(-1), critic2(o, a).squeeze(-1)),
                lambda o: actor(o)[0], actor.parameters)


# ------------------------------------------------------------------------------------------
# 6. TorchRL
# ------------------------------------------------------------------------------------------
def make_torchrl(data):
    logging.getLogger("torchrl").setLevel(logging.WARNING)  # no INFO line per storage
    from tensordict import TensorDict
    from torchrl.data import Bounded, LazyTensorStorage, TensorDictReplayBuffer
    from torchrl.modules import MLP, SafeModule, SafeSequential, TanhModule, ValueOperator
    from torchrl.objectives import SoftUpdate, TD3Loss

    # examples/td3's make_td3_agent, make_loss_module and make_optimizer
    action_spec = Bounded(low=-1.0, high=1.0, shape=(ACT,))
    actor_net = MLP(num_cells=[HIDDEN, HIDDEN], out_features=ACT, activation_class=nn.ReLU)
    actor = SafeSequential(SafeModule(actor_net, in_keys=["observation"], out_keys=["param"]),
                           TanhModule(in_keys=["param"], out_keys=["action"], spec=action_spec))
    qvalue_net = MLP(num_cells=[HIDDEN, HIDDEN], out_features=1, activation_class=nn.ReLU)
    qvalue = ValueOperator(in_keys=["action", "observation"], module=qvalue_net)
    with torch.no_grad():  # initialise the lazy layers, as the example does with a fake tensordict
        td = TensorDict(observation=torch.zeros(1, OBS), action=torch.zeros(1, ACT), batch_size=[1])
        actor(td.clone())
        qvalue(td.clone())
    loss_module = TD3Loss(actor_network=actor, qvalue_network=qvalue, num_qvalue_nets=2,
                          loss_function="l2", delay_actor=True, delay_qvalue=True,
                          action_spec=action_spec, policy_noise=NOISE, noise_clip=CLIP)
    loss_module.make_value_estimator(gamma=GAMMA)
    target_net_updater = SoftUpdate(loss_module, tau=TAU)
    critic_params = list(loss_module.qvalue_network_params.flatten_keys().values())
    actor_params = list(loss_module.actor_network_params.flatten_keys().values())
    optimizer_actor = torch.optim.Adam(actor_params, lr=LR)
    optimizer_critic = torch.optim.Adam(critic_params, lr=LR)

    replay_buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(SIZE), batch_size=BATCH)
    t = torch.from_numpy
    done = t(data["done"])[:, None].bool()
    replay_buffer.extend(TensorDict(
        observation=t(data["obs"]), action=t(data["act"]),
        next=TensorDict(observation=t(data["obs2"]), reward=t(data["rew"])[:, None], done=done,
                        terminated=done.clone(), batch_size=[SIZE]),
        batch_size=[SIZE]))

    def update(sampled_tensordict, update_actor):  # examples/td3's update(), uncompiled
        # Compute loss
        q_loss, *_ = loss_module.value_loss(sampled_tensordict)

        # Update critic
        q_loss.backward()
        optimizer_critic.step()
        optimizer_critic.zero_grad(set_to_none=True)

        # Update actor
        if update_actor:
            actor_loss, *_ = loss_module.actor_loss(sampled_tensordict)

            actor_loss.backward()
            optimizer_actor.step()
            optimizer_actor.zero_grad(set_to_none=True)

            # Update target params
            target_net_updater.step()
        else:
            actor_loss = q_loss.new_zeros(())

        return q_loss.detach(), actor_loss.detach()

    counter = [0]

    def run(k):
        for _ in range(k):
            # Update actor every delayed_updates
            counter[0] += 1
            update_actor = counter[0] % DELAY == 0

            # Sample from replay buffer
            sampled_tensordict = replay_buffer.sample()

            update(sampled_tensordict, update_actor)

    def critics(o, a):
        td = TensorDict(observation=o, action=a, batch_size=[o.shape[0]])
        qs = []
        for i in range(2):
            with loss_module.qvalue_network_params[i].to_module(loss_module.qvalue_network):
                qs.append(loss_module.qvalue_network(td.clone())["state_action_value"].squeeze(-1))
        return tuple(qs)

    def live_actor(o):
        with loss_module.actor_network_params.to_module(loss_module.actor_network):
            td = TensorDict(observation=o, batch_size=[o.shape[0]])
            return loss_module.actor_network(td)["action"]

    return Impl("torchrl", "own rb.sample() + value_loss, critic step (+ actor_loss, SoftUpdate "
                "every 2nd)", run, critics, live_actor, lambda: actor_params)


# ------------------------------------------------------------------------------------------
# The checks and the clock
# ------------------------------------------------------------------------------------------
PEERS = {"td3.py": (None, make_td3py), "sb3": ("stable_baselines3", make_sb3),
         "cleanrl": (None, make_cleanrl), "skrl": ("skrl", make_skrl),
         "tianshou": ("tianshou", make_tianshou), "torchrl": ("torchrl", make_torchrl)}


def fixed_batch(data, seed=1):
    idx = np.random.default_rng(seed).integers(0, SIZE, size=BATCH)
    return {k: torch.from_numpy(v[idx]) for k, v in data.items()}


@torch.no_grad()
def check_loss(impl, b):
    """Both live critics' squared TD error on batch ``b``, the target from the live networks."""
    q1, q2 = impl.critics(b["obs"], b["act"])
    n1, n2 = impl.critics(b["obs2"], impl.actor(b["obs2"]))
    y = b["rew"] + GAMMA * (1 - b["done"]) * torch.min(n1, n2)
    return float(((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean())


def snapshot(impl):
    return [p.detach().clone() for p in impl.actor_params()]


def check_trained(impl, b, loss_before, actor_before, where):
    loss = check_loss(impl, b)
    moved = max(float((p.detach() - q).abs().max())
                for p, q in zip(impl.actor_params(), actor_before))
    said = f"bench_peers: {impl.name} did not train ({where}):"
    if not math.isfinite(loss) or math.isclose(loss, loss_before, rel_tol=1e-7, abs_tol=0.0):
        sys.exit(f"{said} critic loss on the fixed batch {loss_before:.6g} -> {loss:.6g}")
    if not moved > 0:
        sys.exit(f"{said} the actor's weights did not move")


def build(names, data):
    """The implementations named, each from seed 0; one that cannot be imported (the package, or
    the parts of it its maker imports first) is said in one line and skipped."""
    impls = []
    for name in names:
        module, make = PEERS[name]
        torch.manual_seed(0)
        np.random.seed(0)  # SB3 samples from numpy's global generator
        try:  # one line, never a traceback
            if module is not None:
                try:
                    __import__(module)
                except Exception as e:  # a broken install fails in other ways too
                    raise ImportError(f"{type(e).__name__}: {e}", name=module) from e
            impls.append(make(data))
        except ImportError as e:
            print(f"skipped {name}: cannot import {e.name or module} ({e}); "
                  f"pip install -r requirements-ports.txt", flush=True)
    return impls


def versions(impls):
    out = [f"torch {torch.__version__}"]
    for impl in impls:
        module = PEERS[impl.name][0]
        if module:
            out.append(f"{impl.name} {sys.modules[module].__version__}")
    return ", ".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--updates", type=int, default=1000, help="timed updates per block (>= 2)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts")
    p.add_argument("--only", nargs="+", choices=list(PEERS), default=list(PEERS),
                   help="run only these implementations")
    args = p.parse_args()
    if args.updates < 2:
        p.error("--updates must be at least 2 (the actor steps every second update)")

    data = transitions(0)
    impls = build(args.only, data)
    if not impls:
        sys.exit("bench_peers: nothing to run")
    b = fixed_batch(data)
    print(f"{versions(impls)}; obs {OBS}, act {ACT}, hidden ({HIDDEN}, {HIDDEN}), batch {BATCH}, "
          f"{SIZE:,} random transitions (numpy seed 0), {args.rounds} rounds x {args.updates} "
          f"updates after {WARMUP} warm-up updates")
    print("sampling is inside every timed step: td3.py and cleanrl by a uniform index draw; sb3, "
          "skrl, tianshou and torchrl by their own buffers, sb3, skrl and tianshou inside their "
          "own update call", flush=True)
    for threads in args.threads:
        torch.set_num_threads(threads)
        rates = {impl.name: [] for impl in impls}
        for r in range(args.rounds):
            for impl in impls:
                impl.run(WARMUP)
                loss0, actor0 = check_loss(impl, b), snapshot(impl)
                t0 = time.perf_counter()
                impl.run(args.updates)
                rates[impl.name].append(args.updates / (time.perf_counter() - t0))
                check_trained(impl, b, loss0, actor0, f"{threads} thread(s), round {r + 1}")
            print(f"{threads} thread(s), round {r + 1}: " + ", ".join(
                f"{name} {v[-1]:.1f}" for name, v in rates.items()) + " updates/s", flush=True)
        med = {name: statistics.median(v) for name, v in rates.items()}
        ref = med.get("td3.py")
        print(f"\n{threads} thread(s), median of {args.rounds} rounds x {args.updates} updates:\n")
        print("| implementation | median updates/s | ratio to td3.py | "
              "what one timed step includes |")
        print("|---|---:|---:|---|")
        for impl in impls:
            ratio = f"{med[impl.name] / ref:.2f}" if ref else "n/a"
            print(f"| {impl.name} | {med[impl.name]:.1f} | {ratio} | {impl.includes} |")
        print(flush=True)


if __name__ == "__main__":
    main()
