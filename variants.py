"""The one table of variants: TD3, its ablations, and the classic mistakes of a port.

Every other file reads this table: sweep.py runs a variant's td3.py options, plot.py draws it
in its colour, diagnose.py names a run by it, check_port.py replays a port's update with each
mistake swapped in, and the notebooks print its words. A variant is added here, once: a
mistake made through one of td3.py's swap points, or a setting, needs only its row (and a port's
code its drop-in in notebooks/port_mistakes.py). What a row cannot bring: an ablation of
something other than the three tricks needs the setting it switches off (td3.py), with its
switch, and, to be named by it, a place in Hyperparameters.TRICKS; a mistake outside the swap
points needs a new swap point.

Each row:
    kind     "td3", "ablation" (a trick switched off), "mistake" (a port's code, run through a
             swap point or replayed by check_port.py) or "setting" (a port's settings)
    label    what it is, in a learner's words
    effect   what it does to learning, in one sentence
    check    what to look for in a port ("check that" is said before it, unless it starts so)
    options  td3.py's options that train it (sweep.py), or None when td3.py cannot run it
    color    its colour in every figure, or None when no committed run draws it
    bug      False for a difference that is not a mistake (the paper's settings, its variants)
Runs of a variant are named ``td3-<env>-<suffix>`` (``td3-<env>`` for TD3 itself): td3.py names
an ablation by the tricks it switched off (Hyperparameters.TRICKS), and sweep.py gives a
mistake's run its name (--exp_name).
"""
from typing import NamedTuple

MODULE = "notebooks.port_mistakes"  # the drop-ins for td3.py's swap points


class Variant(NamedTuple):
    kind: str
    label: str
    effect: str
    check: str
    options: list | None = None
    color: str | None = None
    suffix: str | None = None  # the run name's suffix, when it is not the variant's name
    bug: bool = True  # False: a difference from td3.py that is not a mistake (a note)


def _swap(point, name):
    return [f"--{point}", f"{MODULE}:{name}"]


TABLE = {
    "td3": Variant("td3", "TD3", "the reference",
                   "", [], "#1f77b4", suffix=""),
    # ---- the ablations: one trick off, or all three (DDPG) ----
    "no_twin": Variant("ablation", "one critic (trick 1 off)",
                       "the critic overestimates, and the actor chases the errors",
                       "the target takes the smaller of two critics (notebook 2, trick 1)",
                       ["--no_twin"], "#ff7f0e"),
    "no_delay": Variant("ablation", "no policy delay (trick 2 off)",
                        "the actor and targets move at every critic step, chasing a noisier Q",
                        "the actor updates once per policy_delay critic updates "
                        "(notebook 2, trick 2)", ["--no_delay"], "#2ca02c"),
    "no_smoothing": Variant("ablation", "no target smoothing (trick 3 off)",
                            "the target can exploit narrow wrong peaks of Q",
                            "clipped noise is added to the target action (notebook 2, trick 3)",
                            ["--no_smoothing"], "#9467bd"),
    "ddpg": Variant("ablation", "DDPG (all three tricks off)", "DDPG: all three failures at once",
                    "check each of the three tricks (notebook 2)",
                    ["--no_twin", "--no_delay", "--no_smoothing"], "#d62728",
                    suffix="no_twin-no_delay-no_smoothing"),
    # ---- the six committed mistakes of a port: each was trained on BipedalWalker-v3 ----
    "q2_own_target": Variant(
        "mistake", "Q2 regressing onto its own target",
        "Q2 learns the overestimated r + gamma * Q2', the minimum is then mostly Q1', and trick 1 is "
        "mostly gone",
        "both critics regress onto one target (notebook 4)",
        _swap("critic_loss", "q2_own_target"), "#e377c2"),
    "column_critics": Variant(
        "mistake", "the (B, B) broadcast of (B, 1) critics",
        "every target mixes one sample's next value with every sample's reward, so the critics "
        "learn an average over the batch, not Q(s, a)",
        "every tensor in the target is (B,), not (B, 1) (notebook 4)",
        _swap("critic_loss", "column_critics"), "#8c564b"),
    "shared_noise": Variant(
        "mistake", "one smoothing-noise vector per batch",
        "each critic step pushes every target the same random way instead of averaging Q near a'",
        "the target noise is drawn per sample, (B, act_dim) (notebook 4)",
        _swap("target_action", "shared_noise"), "#17becf"),
    "truncation_as_death": Variant(
        "mistake", "truncation stored as death",
        "the critic learns that the time limit ends the world (a value of 0 after it), which it "
        "cannot see coming: a wrong target at every cut",
        "done is terminated, never truncated (notebook 4)",
        _swap("done_flag", "truncation_as_death"), "#8c6d31"),
    "polyak_as_tau": Variant(
        "setting", "tau passed as --polyak",
        "the targets become 99.5% the live networks at every step: no slow target at all",
        "polyak is 1 - tau (notebook 4)",
        ["--polyak", "0.005"], "#bcbd22"),
    "authors_defaults": Variant(
        "setting", "the TD3 authors' settings without the reward floor",
        "a longer horizon, slower steps and the raw -100 of a fall: not wrong, but slow on "
        "BipedalWalker-v3 in this project's runs",
        "check the discount, the learning rates and the reward floor (notebook 4)",
        ["--gamma", "0.99", "--pi_lr", "3e-4", "--q_lr", "3e-4", "--no_reward_floor"], "#7f7f7f", bug=False),
    # ---- more mistakes of a port, named by check_port.py; td3.py runs those with a swap point ----
    "q2_next_value": Variant(
        "mistake", "Q2 regressing onto Q2'(s', a') alone",
        "Q2 learns the target critic's own value, no reward and no discount: it drifts, and so "
        "does the minimum it feeds", "both critics regress onto r + gamma * (1 - d) * min(Q1', Q2')",
        _swap("critic_loss", "q2_next_value")),
    "summed_loss": Variant(
        "mistake", "the critic loss summed over the batch, not averaged",
        "gradients batch_size times larger; Adam divides most of that out, SGD would not",
        "the loss is a mean over the batch", _swap("critic_loss", "summed_loss")),
    "no_min": Variant(
        "mistake", "the target from Q1' alone, not min(Q1', Q2')",
        "trick 1 is gone: the target keeps the overestimation the minimum removes",
        "the target takes the minimum of both target critics", _swap("critic_loss", "no_min")),
    "done_ignored": Variant(
        "mistake", "the target ignores done",
        "a fall bootstraps from the next state as if the episode went on",
        "the target multiplies gamma * Q' by (1 - d)", _swap("critic_loss", "done_ignored")),
    "discount_on_done": Variant(
        "mistake", "the discount multiplies the done flag, not the next value",
        "r + (1 - gamma * d) * Q' never discounts a step that goes on: values grow without bound",
        "the target is r + gamma * (1 - d) * Q'", _swap("critic_loss", "discount_on_done")),
    "done_inverted": Variant(
        "mistake", "the done flag inverted: d where 1 - d belongs",
        "the target bootstraps only where an episode ended, and stops at every step that goes on",
        "the target multiplies gamma * Q' by (1 - d), not by d", _swap("critic_loss", "done_inverted")),
    "huber_loss": Variant(
        "mistake", "a Huber (smooth L1) critic loss, not the squared error",
        "beyond 1, a TD error pulls the critic with a constant force: large errors close slowly",
        "the critic loss is the mean squared TD error (in TorchRL: loss_function='l2')",
        _swap("critic_loss", "huber_loss")),
    "noise_unclipped": Variant(
        "mistake", "the target noise not clipped to +-noise_clip",
        "rare large noise moves a' far from pi'(s'); the target averages Q over a wider region",
        "the noise is clipped before it is added", _swap("target_action", "noise_unclipped")),
    "action_unclipped": Variant(
        "mistake", "the noisy target action not clipped to the action bounds",
        "the target critic is asked about actions the env never takes",
        "a' is clipped to [low, high] after the noise", _swap("target_action", "action_unclipped")),
    "noise_unscaled": Variant(
        "mistake", "the target noise not scaled to the action range",
        "on an env whose bounds are not +-1, the smoothing is too narrow or too wide",
        "noise and clip are multiplied by (high - low) / 2", _swap("target_action", "noise_unscaled")),
    "live_target": Variant(
        "mistake", "the target computed with the live networks, not the target ones",
        "the critic chases its own moving output: the slow targets are bypassed",
        "pi', Q1' and Q2' in the target are the target networks"),
    "targets_every_step": Variant(
        "mistake", "the targets moved at every critic update, not with the actor",
        "the targets move policy_delay times as fast as TD3's",
        "the Polyak step sits inside the delayed branch, with the actor step"),
    "actor_on_min": Variant(
        "mistake", "the actor climbs min(Q1, Q2), not Q1",
        "a variant of the paper, not a bug: the actor follows the cautious estimate",
        "the actor loss is -Q1(s, pi(s)).mean()", bug=False),
    "actor_on_q2": Variant(
        "mistake", "the actor climbs Q2, not Q1",
        "a variant of the paper, not a bug: Q2 is trained like Q1",
        "the actor loss is -Q1(s, pi(s)).mean()", bug=False),
    "actor_before_critic_step": Variant(
        "mistake", "the actor's loss taken on the critics before their step",
        "a loop that computes every loss, then steps: the actor climbs the critics of the update "
        "before, a small lag and not the paper's order",
        "the actor's loss is computed after the critics' step, on the stepped critics", bug=False),
    "actor_descends": Variant(
        "mistake", "the actor loss has the wrong sign: it descends Q",
        "the actor seeks the worst actions",
        "the actor loss is minus Q1(s, pi(s)), averaged"),
    "actor_unscaled": Variant(
        "mistake", "the actor's tanh not scaled to the env's action bounds",
        "on an env whose bounds are not +-1, the actor cannot reach or leaves the bounds",
        "the actor returns bias + scale * tanh(...), with scale and bias from low and high"),
    "action_first": Variant(
        "mistake", "the critic reads (a, s), not (s, a)",
        "not a learning bug: the weights' layout differs from td3.py's, so the adapter must swap them",
        "the critic's input is the concatenation [obs, act]", bug=False),
}

# The mistakes whose committed runs stopped learning (results/porting: no 300 by 150,000 env
# steps on both seeds, or on one of two for tau as polyak): diagnose.py must flag every seed.
STOPPING = ("authors_defaults", "column_critics", "polyak_as_tau")


def runnable():
    """The variants td3.py can train (sweep.py's choices), in the table's order."""
    return {name: v for name, v in TABLE.items() if v.options is not None}


def run_suffix(name):
    """The part of a run's name after ``td3-<env>``: '' for TD3, the tricks off for an ablation."""
    v = TABLE[name]
    return v.suffix if v.suffix is not None else name


def from_suffix(suffix):
    """The variant a run name's suffix says, or None."""
    for name in TABLE:
        if run_suffix(name) == suffix:
            return name
    return None


def advice(name):
    """What to check in a port for this variant, as a sentence's start."""
    check = TABLE[name].check
    return check if check.startswith("check") else f"check that {check}"


def colors():
    """Each drawn variant's colour, the same in every figure."""
    return {name: v.color for name, v in TABLE.items() if v.color is not None}
