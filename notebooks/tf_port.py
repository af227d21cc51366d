"""A TD3 port to TensorFlow, shaped like the classic port that never learned, its mistakes
behind switches; and the adapter that lets check_port.py check it.

    python check_port.py notebooks.tf_port:SeedPort    # the classic port's mistakes: named
    python check_port.py notebooks.tf_port:Adapter     # every switch fixed: it passes

Its shape is the classic port's: Keras models of Dense layers (the critic, two heads on one
input, returns (B, 1) twice), tf.GradientTape, and separate methods for the critic step, the
actor step and the target sync, called by ``train_step``. Each mistake is a switch named as in
variants.py; ``SEED_MISTAKES`` are the ones the classic port made. ``TD3Port(...,
mistakes=())`` is a correct TD3.
"""
import contextlib
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up chatter
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # TensorFlow's own kernels, no oneDNN notice
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow import keras  # noqa: E402

Dense, Input, Model = keras.layers.Dense, keras.layers.Input, keras.Model
MISTAKES = ("authors_defaults", "q2_own_target", "q2_next_value", "column_critics", "shared_noise",
            "truncation_as_death", "polyak_as_tau", "summed_loss", "no_min", "done_ignored",
            "discount_on_done", "noise_unclipped", "action_unclipped", "noise_unscaled",
            "live_target", "targets_every_step", "actor_on_min", "actor_on_q2", "actor_descends",
            "actor_unscaled", "action_first")
# The classic port: the TD3 authors' settings without a reward floor, Q2 against the target
# critic's raw value, (B,) rewards against (B, 1) heads, Keras's per-sample MSE summed by the
# tape, the time limit stored as death.
SEED_MISTAKES = ("authors_defaults", "q2_next_value", "column_critics", "summed_loss",
                 "truncation_as_death")
# td3.py's settings, and the ones the classic port used (the authors' discount and rates).
SETTINGS = dict(gamma=0.98, tau=0.005, lr=1e-3, policy_noise_std=0.2, noise_clip=0.5, actor_delay=2)
AUTHORS = dict(SETTINGS, gamma=0.99, lr=3e-4)


def actor(obs_dim, act_dim, units):
    x0 = Input((obs_dim,))
    x = Dense(units, "relu", name="pi_0")(x0)
    x = Dense(units, "relu", name="pi_1")(x)
    return Model(x0, Dense(act_dim, "tanh", name="pi_2")(x))


def critic(input_dim, units):
    x0 = Input((input_dim,))
    x1 = Dense(units, "relu", name="q1_0")(x0)
    x1 = Dense(units, "relu", name="q1_1")(x1)
    v1 = Dense(1, name="q1_2")(x1)
    x2 = Dense(units, "relu", name="q2_0")(x0)
    x2 = Dense(units, "relu", name="q2_1")(x2)
    v2 = Dense(1, name="q2_2")(x2)
    return Model(x0, [v1, v2])


class TD3Port:
    def __init__(self, obs_dim, act_dim, act_low, act_high, mistakes=(), gamma=0.98, tau=0.005,
                 lr=1e-3, policy_noise_std=0.2, noise_clip=0.5, actor_delay=2, units=256):
        unknown = set(mistakes) - set(MISTAKES)
        if unknown:  # authors_defaults is a matter of the settings passed in
            raise ValueError(f"unknown mistakes {sorted(unknown)}; known: {', '.join(MISTAKES)}")
        self.m = set(mistakes)
        self.gamma, self.tau, self.actor_delay = gamma, tau, actor_delay
        self.policy_noise_std, self.noise_clip, self.n_actions = policy_noise_std, noise_clip, act_dim
        low, high = np.asarray(act_low, np.float32), np.asarray(act_high, np.float32)
        self.low, self.high = tf.constant(low), tf.constant(high)
        self.scale, self.bias = tf.constant((high - low) / 2), tf.constant((high + low) / 2)
        self.actor, self.target_actor = actor(obs_dim, act_dim, units), actor(obs_dim, act_dim, units)
        self.critic = critic(obs_dim + act_dim, units)
        self.target_critic = critic(obs_dim + act_dim, units)
        self.target_actor.set_weights(self.actor.get_weights())
        self.target_critic.set_weights(self.critic.get_weights())
        self.actor_optimizer = keras.optimizers.Adam(lr)
        self.critic_optimizer = keras.optimizers.Adam(lr)
        self.updates = tf.Variable(0)
        self.model_groups = [(self.actor, self.target_actor), (self.critic, self.target_critic)]

    def act(self, model, states):
        a = model(states)
        return a if "actor_unscaled" in self.m else self.bias + self.scale * a

    def q_input(self, states, actions):
        return tf.concat([actions, states] if "action_first" in self.m else [states, actions], 1)

    def done(self, terminated, truncated):
        return float(terminated or truncated) if "truncation_as_death" in self.m else float(terminated)

    def update_critic_weights(self, states, actions, rewards, dones, new_states):
        m = self.m
        if "column_critics" not in m:  # the critics return (B, 1): so must everything else
            rewards, dones = rewards[:, None], dones[:, None]
        shape = [self.n_actions] if "shared_noise" in m else [len(states), self.n_actions]
        policy_noise = tf.random.normal(shape, 0, self.policy_noise_std)
        if "noise_unclipped" not in m:
            policy_noise = tf.clip_by_value(policy_noise, -self.noise_clip, self.noise_clip)
        if "noise_unscaled" not in m:
            policy_noise = policy_noise * self.scale
        t_actor, t_critic = ((self.actor, self.critic) if "live_target" in m
                             else (self.target_actor, self.target_critic))
        target_actions = self.act(t_actor, new_states) + policy_noise
        if "action_unclipped" not in m:
            target_actions = tf.clip_by_value(target_actions, self.low, self.high)
        target_value1, target_value2 = t_critic(self.q_input(new_states, target_actions))
        next_value = target_value1 if "no_min" in m else tf.minimum(target_value1, target_value2)
        not_done = 1.0 if "done_ignored" in m else 1 - dones
        if "discount_on_done" in m:
            target_value = rewards + (1 - self.gamma * dones) * next_value
        else:
            target_value = rewards + not_done * self.gamma * next_value
        target_value2_ = (target_value2 if "q2_next_value" in m else
                          rewards + not_done * self.gamma * target_value2 if "q2_own_target" in m
                          else target_value)
        with tf.GradientTape() as tape:
            value1, value2 = self.critic(self.q_input(states, actions))
            if "summed_loss" in m:  # Keras's MSE averages the last axis; the tape sums the rest
                value_loss = (keras.losses.MSE(target_value, value1)
                              + keras.losses.MSE(target_value2_, value2))
            else:
                value_loss = (tf.reduce_mean(tf.square(value1 - target_value))
                              + tf.reduce_mean(tf.square(value2 - target_value2_)))
        grads = tape.gradient(value_loss, self.critic.trainable_variables)
        self.critic_optimizer.apply_gradients(zip(grads, self.critic.trainable_variables))

    def update_actor_weights(self, states):
        with tf.GradientTape() as tape:
            q1, q2 = self.critic(self.q_input(states, self.act(self.actor, states)))
            q = q2 if "actor_on_q2" in self.m else tf.minimum(q1, q2) if "actor_on_min" in self.m else q1
            loss = tf.reduce_mean(q) if "actor_descends" in self.m else -tf.reduce_mean(q)
        grads = tape.gradient(loss, self.actor.trainable_variables)
        self.actor_optimizer.apply_gradients(zip(grads, self.actor.trainable_variables))

    def sync_target_models(self):
        tau = 1 - self.tau if "polyak_as_tau" in self.m else self.tau
        for model, target_model in self.model_groups:
            for var, target_var in zip(model.trainable_variables, target_model.trainable_variables):
                target_var.assign(tau * var + (1 - tau) * target_var)

    def train_step(self, states, actions, rewards, dones, new_states):
        self.updates.assign_add(1)
        self.update_critic_weights(states, actions, rewards, dones, new_states)
        if "targets_every_step" in self.m:
            self.sync_target_models()
        if int(self.updates) % self.actor_delay == 0:
            self.update_actor_weights(states)
            if "targets_every_step" not in self.m:
                self.sync_target_models()


# ------------------------------------------------------------------------------------------
# The adapter (docs/check_port.md): numpy in and out, weights by layer name
# ------------------------------------------------------------------------------------------
@contextlib.contextmanager
def drawing(normal):
    """While the port runs, tf.random.normal hands out the checker's N(0, 1) draws."""
    real = tf.random.normal

    def given(shape, mean=0.0, stddev=1.0, *args, **kwargs):
        x = normal[0] if list(shape) == [normal.shape[1]] else normal.reshape(shape)
        return tf.constant(x * np.float32(stddev) + np.float32(mean))
    tf.random.normal = given if normal is not None else real
    try:
        yield
    finally:
        tf.random.normal = real


class Recorder:
    """An optimizer that keeps the gradients it was given, then applies them."""

    def __init__(self, optimizer):
        self.optimizer, self.grads = optimizer, {}

    def apply_gradients(self, pairs):
        pairs = list(pairs)
        self.grads = {v.path: g.numpy() for g, v in pairs}
        self.optimizer.apply_gradients(pairs)


class Adapter:
    settings = dict(gamma=0.98, tau=0.005, pi_lr=1e-3, q_lr=1e-3, target_noise=0.2,
                    noise_clip=0.5, policy_delay=2, adam_eps=1e-7, reward_floor=-10.0)
    takes_noise = True  # tf.random.normal is handed the checker's draws (drawing above)
    mistakes, port_settings = (), SETTINGS  # the switches on (with_mistakes, below)
    NETS = {"pi": "actor", "pi_targ": "target_actor", "q1": "critic", "q2": "critic",
            "q1_targ": "target_critic", "q2_targ": "target_critic"}

    def __init__(self, obs_dim, act_dim, act_low, act_high):
        self.port = p = TD3Port(obs_dim, act_dim, act_low, act_high, self.mistakes, **self.port_settings)
        p.actor_optimizer, p.critic_optimizer = Recorder(p.actor_optimizer), Recorder(p.critic_optimizer)

    def layers(self, net):  # the Dense layers by name: pi_0..pi_2 in the actor, q1_*, q2_* in a critic
        return [getattr(self.port, self.NETS[net]).get_layer(f"{net[:2]}_{i}") for i in range(3)]

    def get_weights(self):
        return {n: [x.numpy() for l in self.layers(n) for x in (l.kernel, l.bias)] for n in self.NETS}

    def set_weights(self, w):
        for n in self.NETS:
            for l, kernel, bias in zip(self.layers(n), w[n][::2], w[n][1::2]):
                l.kernel.assign(kernel), l.bias.assign(bias)

    def grads(self, optimizer, nets):  # what the Recorder saw, in the weights' layout
        return {n: [optimizer.grads[f"{n}_{i}/{k}"] for i in range(3) for k in ("kernel", "bias")]
                for n in nets}

    def actor(self, obs):
        return self.port.act(self.port.actor, obs).numpy()

    def critics(self, obs, act):
        return [q.numpy() for q in self.port.critic(self.port.q_input(obs, act))]

    def done_flag(self, terminated, truncated):
        return self.port.done(terminated, truncated)

    def critic_step(self, batch, normal):
        with drawing(normal):
            self.port.update_critic_weights(*(batch[k] for k in ("obs", "act", "rew", "done", "obs2")))
        return {"grads": self.grads(self.port.critic_optimizer, ("q1", "q2"))}

    def actor_step(self, batch):
        self.port.update_actor_weights(batch["obs"])
        return {"grads": self.grads(self.port.actor_optimizer, ("pi",))}

    def sync_targets(self):
        self.port.sync_target_models()

    def update(self, batch, normal):  # train_step, which counts the delay
        critic, actor = self.port.critic_optimizer, self.port.actor_optimizer
        actor.grads = {}  # set again only if this update moved the actor
        with drawing(normal):
            self.port.train_step(*(batch[k] for k in ("obs", "act", "rew", "done", "obs2")))
        return {"grads": {**self.grads(critic, ("q1", "q2")),
                          **(self.grads(actor, ("pi",)) if actor.grads else {})}}


def with_mistakes(*mistakes):
    """The adapter for the port with these switches on (``with_mistakes()``: all fixed)."""
    authors = "authors_defaults" in mistakes
    s = AUTHORS if authors else SETTINGS
    return type("Adapter_" + "_".join(mistakes), (Adapter,), {
        "mistakes": tuple(mistakes), "port_settings": s,
        "settings": dict(Adapter.settings, gamma=s["gamma"], pi_lr=s["lr"], q_lr=s["lr"],
                         reward_floor=None if authors else -10.0)})


SeedPort = with_mistakes(*SEED_MISTAKES)  # the classic port, its mistakes switched on
