"""The rules a setting obeys, what td3.py's settings table (and the run's own, run/config.py)
is built from.

Each setting is a dataclass field made by ``setting(default, rule, doc)``: its rule (``Rule``:
what a valid value is, a check, and how the command line parses it), its one-line description,
what runs older than the setting had (``before``), and the switch that turns it off
(``switch``: ``--no_twin`` sets twin=False). From that one declaration come td3()'s keyword
arguments, the command-line options and their help (with what "auto" means, written from
the per-env table), the one check (``check``), config.json, and how an older run's
config.json is read (``made_with``). Nothing here knows the command line or an env.
"""
import math
import numbers
import sys
from dataclasses import field, fields
from typing import Callable, NamedTuple

from run.errors import UserError


class Rule(NamedTuple):
    says: str                      # what a valid value is, for the one-line error
    ok: Callable                   # value -> bool
    parse: Callable = str          # command-line text -> value
    warn: Callable = lambda v: ""  # value -> a warning for a valid but likely mistaken value


def _int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _num(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


# Command-line parsers; argparse names them in its error ("invalid boolean value: 'x'").
def boolean(s):
    if s.lower() not in ("true", "false"):
        raise ValueError(s)
    return s.lower() == "true"


def number_none_or_auto(s):
    return None if s.lower() == "none" else "auto" if s.lower() == "auto" else float(s)


def number_or_auto(s):
    return "auto" if s.lower() == "auto" else float(s)


def integer_or_none(s):
    return None if s.lower() == "none" else int(s)


# The rules, by the words a settings table names them with: setting(0.995, "in [0, 1)", ...).
RULES = {
    "int >= 1": Rule("a positive integer", lambda v: _int(v) and v >= 1, int),
    "int >= 0": Rule("an integer >= 0", lambda v: _int(v) and v >= 0, int),
    "> 0": Rule("a number > 0", lambda v: _num(v) and v > 0, float),
    ">= 0": Rule("a number >= 0", lambda v: _num(v) and v >= 0, float),
    # Polyak's factor: targ <- f * targ + (1 - f) * net, so a small f nearly copies the nets
    # (the paper's tau is 1 - f: tau=0.005 is 0.995).
    "a factor near 1": Rule("in [0, 1)", lambda v: _num(v) and 0 <= v < 1, float,
                            lambda v: v < 0.5 and f"targets move {1 - v:.1%} of the way at each "
                            f"target update; it is 1 - tau (tau=0.005 is 0.995)"),
    "in (0, 1] or auto": Rule("in (0, 1] or 'auto' (the env's default)",
                              lambda v: v == "auto" or (_num(v) and 0 < v <= 1), number_or_auto),
    "number, None or auto": Rule("a number, None (off) or 'auto' (the env's default)",
                                 lambda v: v is None or v == "auto" or _num(v),
                                 number_none_or_auto),
    "int >= 1 or None": Rule("a positive integer or None (the env's own limit)",
                             lambda v: v is None or (_int(v) and v >= 1), integer_or_none),
    "threads": Rule("a positive integer or None (the rule in docs/speed.md)",
                    lambda v: v is None or (_int(v) and v >= 1), integer_or_none),
    "True or False": Rule("True or False", lambda v: isinstance(v, bool), boolean),
    "gaussian, pink or auto": Rule("gaussian, pink or 'auto' (the env's default)",
                                   lambda v: v in ("gaussian", "pink", "auto")),
    "live or averaged": Rule("live or averaged", lambda v: v in ("live", "averaged")),
    "a device": Rule("cpu, cuda, cuda:N, mps or auto",
                     lambda v: isinstance(v, str) and (v in ("cpu", "cuda", "mps", "auto") or (
                         v.startswith("cuda:") and v[5:].isdigit()))),
}


def setting(default, rule, doc, before=None, at_most=None, switch=None):
    """A dataclass field with its rule (its words in ``RULES``) and a one-line description
    (the CLI's help). ``before``: what runs made before the setting existed had, where that
    is not its default (their config.json has no such key; ``made_with``). ``at_most``:
    another setting this one may not exceed (a batch is drawn from the replay buffer).
    ``switch``: (flag, value), a command-line shortcut that sets it (``--no_twin``)."""
    if rule not in RULES:
        raise ValueError(f"no rule {rule!r}; the rules are {', '.join(RULES)}")
    return field(default=default, metadata=dict(rule=RULES[rule], doc=doc, before=before,
                                                at_most=at_most, switch=switch))


def made_with(config, settings_classes):
    """Every setting a run was made with, from its config.json: the value it records, or, for
    a setting newer than the run, the value the code had then (``before``, else the
    default). A run made before early_stop existed with stop_return None (every run without
    a stop, and the old --no_stop) never stopped early: early_stop False. The one place that
    says how an old run is read: a resume and sweep.py use it."""
    made = {f.name: config.get(f.name, f.default if f.metadata["before"] is None
                               else f.metadata["before"])
            for cls in settings_classes for f in fields(cls)}
    if "early_stop" not in config and config.get("stop_return", "auto") is None:
        made["early_stop"] = False
    return made


def check(*values, prefix=""):
    """The one check of a run's settings (dataclass instances): a one-line UserError for the
    first field whose value breaks its rule, then for one that exceeds its ``at_most``; a
    warning on stderr for a valid value its rule finds likely mistaken. ``prefix`` goes
    before each name (the command line's own options: "--")."""
    every = [(settings, f) for settings in values for f in fields(settings)]
    for settings, f in every:
        v, rule = getattr(settings, f.name), f.metadata["rule"]
        if not rule.ok(v):
            raise UserError(f"{prefix}{f.name} must be {rule.says}, got {v!r}")
        if rule.warn(v):
            print(f"warning: {f.name}={v}: {rule.warn(v)}", file=sys.stderr)
    for settings, f in every:
        v, other = getattr(settings, f.name), f.metadata["at_most"]
        if other and v > getattr(settings, other):
            raise UserError(f"{f.name} ({v}) must be at most {other} ({getattr(settings, other)})")


def doc(f, auto):
    """A setting's description; for one whose default is "auto", what auto means, written
    from the per-env table ``auto``: (the general values, the values per env id)."""
    general, per_env = auto
    if f.default != "auto" or f.name not in general:
        return f.metadata["doc"]
    show = lambda v: f"{v:g}" if isinstance(v, float) else str(v)
    by_value = {}
    for env_id, values in per_env.items():
        if f.name in values:
            by_value.setdefault(show(values[f.name]), []).append(env_id)
    said = [f"{v} on {' and '.join(envs)}" for v, envs in by_value.items()]
    return f"{f.metadata['doc']}; auto: {', '.join(said + [f'else {show(general[f.name])}'])}"
