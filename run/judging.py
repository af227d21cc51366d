"""How a TD3 run is judged: its test episodes, the confirmation, which actor, what best.pt
keeps and when the run stops. This file decides; the run directory writes the files (run/door.py).

Each epoch ends with ``num_test_episodes`` noise-free episodes of the live actor, played by
td3.py in the run's test env (``test_agent``, which also logs trick 1's overestimation check);
their mean is the epoch's test return, the ``AverageTestEpRet`` column. Then ``Judge.epoch``:

1. With ``compare_actors`` (or ``test_actor averaged``) the averaged actor, ``ac_targ.pi`` (the
   Polyak average of the live actor), plays episodes from the same reset seeds.
2. When the judged actor, or with ``compare_actors`` either actor, reaches ``stop_return`` and
   is not solved yet, every tested actor plays ``confirm_episodes`` (100) more episodes, from
   reset seeds of their own (the run's seed and the epoch), so that training draws nothing.
3. An actor is solved at the first epoch where both its own test and its confirmation hold
   ``stop_return``: when both actors are confirmed because one reached it, the other's
   confirmation alone does not solve it.

Each batch of episodes of steps 1 and 2 (a test, a confirmation) plays in a fresh env of its
own: a Box2D world remembers its past episodes, and these would change the run's own test
episodes later (and, through the actions they draw, its training). So judging leaves the run
exactly as a run without it.

``best.pt`` holds the judged actor-critic (``test_actor``): the epoch with the best test return
until the actor is solved, then the solved one, for good; with ``compare_actors`` the other
actor's solved weights go to ``best_<actor>.pt``. A solved run stops (``early_stop``; the
``--no_stop`` switch trains on). Runs made before confirmations existed (``confirm_episodes``
0) stopped after ``stop_epochs`` epochs in a row at ``stop_return`` instead.
"""
import math

import numpy as np

# The two actors a run can be judged by, and their columns in progress.txt.
TEST_COLUMN = dict(live="TestEpRet", averaged="TargTestEpRet")
CONFIRM_COLUMN = dict(live="ConfirmEpRet", averaged="TargConfirmEpRet")
NOT_SOLVED = dict(live=0, averaged=0)  # actor -> the epoch its confirmation held stop_return


def play(env, act, seed, max_ep_len, reward=lambda r: r, after_step=None):
    """One episode of ``act`` (obs -> action) from reset seed ``seed``: its return, length,
    observations and rewards (as ``reward`` makes them: td3.py passes the training floor).
    ``after_step(env, ep_len)``, if given, is called after each step (watch.py's GIF frames)."""
    o, _ = env.reset(seed=seed)
    done, ep_ret, ep_len, obs, rews = False, 0.0, 0, [], []
    while not done:
        obs.append(o)
        o, r, terminated, truncated, _ = env.step(act(o))
        ep_ret, ep_len = ep_ret + r, ep_len + 1
        rews.append(reward(r))
        done = terminated or truncated or ep_len == max_ep_len
        if after_step is not None:
            after_step(env, ep_len)
    return ep_ret, ep_len, obs, rews


def mean_return(env_fn, act, seeds, max_ep_len):
    """The mean return of one noise-free episode per reset seed, in a fresh env of its own."""
    env = env_fn()
    return float(np.mean([play(env, act, s, max_ep_len)[0] for s in seeds]))


def confirm_seeds(seed, epoch, n):
    """The reset seeds of an epoch's confirmation: a stream of their own."""
    return np.random.default_rng((seed, epoch)).integers(2**31, size=n).tolist()


def newly_solved(confirmed, test_returns, solved, stop_return):
    """The actors solved this epoch (``confirmed``, ``test_returns``: actor -> return): not
    solved before, and both their own test and their confirmation hold stop_return."""
    return [a for a, r in confirmed.items()
            if min(r, test_returns[a]) >= stop_return and not solved[a]]


def stopped_early(config, epochs_at_goal, solved):
    """Whether the early stop fired: the judged actor is solved (``solved``: actor -> the
    epoch it was, 0 if not yet), or, in a run made with confirm_episodes 0 (as every run was
    before confirmations), its test return held stop_return for stop_epochs epochs in a row."""
    if config["stop_return"] is None or not config.get("early_stop", True):
        return False
    if config.get("confirm_episodes", 0) > 0:
        return bool(solved.get(config.get("test_actor", "live")))
    return epochs_at_goal >= config["stop_epochs"]


class Judge:
    """The judging of one run, from its settings (``config``: seed, stop_return,
    confirm_episodes, stop_epochs, early_stop, test_actor, compare_actors, max_ep_len). Its
    state (the best test return, epochs in a row at stop_return, the epoch each actor was
    solved) goes into the run's checkpoint: ``state_dict``, ``load_state_dict``."""

    def __init__(self, config):
        self.config = c = config
        self.actors = ("live", "averaged") if c["compare_actors"] else (c["test_actor"],)
        self.confirms = c["stop_return"] is not None and c["confirm_episodes"] > 0
        # progress.txt's columns beyond TestEpRet: the averaged actor's test, the confirmations
        self.columns = [TEST_COLUMN[a] for a in self.actors if a != "live"] + \
            ([CONFIRM_COLUMN[a] for a in self.actors] if self.confirms else [])
        self.best_return, self.epochs_at_goal, self.solved = -math.inf, 0, dict(NOT_SOLVED)

    def state_dict(self):
        return dict(best_return=self.best_return, epochs_at_goal=self.epochs_at_goal,
                    solved=dict(self.solved))

    def load_state_dict(self, state):
        self.best_return, self.epochs_at_goal = state["best_return"], state["epochs_at_goal"]
        self.solved = dict(state.get("solved", NOT_SOLVED))  # older checkpoints: none solved

    def epoch(self, epoch, seeds, live_return, logger, env_fn, actors):
        """Judge an epoch after the live actor's test from reset ``seeds`` (its mean return
        ``live_return``; ``logger`` gets the new columns): the averaged actor's test from the
        same seeds, then the confirmations ``to_confirm`` asks for, each batch in a fresh env
        from ``env_fn`` (``actors``: actor -> what it acts with, ``.act(obs)``). Returns (test
        returns, confirmed)."""
        c, returns = self.config, dict(live=float(live_return))
        if "averaged" in self.actors:
            returns["averaged"] = mean_return(env_fn, actors["averaged"].act, seeds,
                                              c["max_ep_len"])
            logger.store(TargTestEpRet=returns["averaged"])
        returns = {a: returns[a] for a in self.actors}
        more = confirm_seeds(c["seed"], epoch, c["confirm_episodes"])
        confirmed = {a: mean_return(env_fn, actors[a].act, more, c["max_ep_len"])
                     for a in self.to_confirm(returns)}
        logger.store(**{CONFIRM_COLUMN[a]: r for a, r in confirmed.items()})
        return returns, confirmed

    def to_confirm(self, test_returns):
        """The actors to confirm this epoch (test_returns: actor -> this epoch's test return):
        none, unless an actor not yet solved reached stop_return; then every tested actor, so
        that a comparison is paired."""
        due = self.confirms and any(r >= self.config["stop_return"] and not self.solved[a]
                                    for a, r in test_returns.items())
        return self.actors if due else ()

    def end_epoch(self, epoch, test_returns, confirmed):
        """Decide after an epoch's judging: who is solved, and what best.pt (and, comparing
        actors, best_<actor>.pt) must now hold, as (file name, actor, return, confirmed)
        for runs.py to write."""
        c, judged, keep = self.config, self.config["test_actor"], []
        for actor in newly_solved(confirmed, test_returns, self.solved, c["stop_return"]):
            self.solved[actor] = epoch
        for actor in confirmed:  # comparing actors: the other one's confirmed weights too
            if actor != judged and self.solved[actor] == epoch:
                keep.append((f"best_{actor}.pt", actor, confirmed[actor], True))
        if self.solved[judged] == epoch:
            self.best_return = confirmed[judged]
            keep.append(("best.pt", judged, confirmed[judged], True))
        elif not self.solved[judged] and test_returns[judged] > self.best_return:
            self.best_return = test_returns[judged]
            keep.append(("best.pt", judged, test_returns[judged], False))
        at_goal = c["stop_return"] is not None and test_returns[judged] >= c["stop_return"]
        self.epochs_at_goal = self.epochs_at_goal + 1 if at_goal else 0
        return keep

    @property
    def stopped(self):
        """Whether the run is over: solved (or, in an old run, stop_epochs in a row)."""
        return stopped_early(self.config, self.epochs_at_goal, self.solved)

    def stop_reason(self):
        c, epoch = self.config, self.solved.get(self.config["test_actor"])
        if epoch:
            return (f"at epoch {epoch} the {c['test_actor']} actor's return over "
                    f"{c['confirm_episodes']} more episodes was {self.best_return:.1f}, "
                    f">= {c['stop_return']:g}")
        return f"test return >= {c['stop_return']:g} for {self.epochs_at_goal} epochs in a row"
