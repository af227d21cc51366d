"""What the scripts' command lines share, without torch or gymnasium at import, so that
plot.py and diagnose.py start fast:

- the one user-error type, its one-line report and exit codes (``run_main``), and the
  argument parser that reports a usage mistake the same way;
- the settings' value rules (``setting``), from which td3.py's options, range checks and
  docstring are made;
- run directories by name (``run_dir``, ``read_config``), envs by id (``make_env``) and
  functions by ``module:function`` (the swap points config.json names);
- td3.py's command line (``parse_td3``): the options made from its settings, the switches,
  and what ``--resume`` may change.
"""
import argparse
import contextlib
import difflib
import fcntl
import importlib
import inspect
import json
import math
import numbers
import os
import shlex
import signal
import sys
import threading
from dataclasses import dataclass, field, fields, replace
from typing import Callable, NamedTuple

# ------------------------------------------------------------------------------------------
# One-line errors: a user's mistake is one line on stderr and exit 2, never a traceback
# ------------------------------------------------------------------------------------------
class UserError(Exception):
    """A mistake in what the user asked for; scripts print it as one line and exit 2."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, after the checkpoint was written; a script prints it and exits 130."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse, reporting a usage mistake as one line (``error: ...``) and exit 2."""

    def error(self, message):
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


def run_main(main):
    """Run a script's ``main()`` and exit with what it returns: UserError is one line and
    exit 2, Ctrl-C exit 130 (after a checkpoint, Interrupted's message says where it is).

    Ctrl-C is taken whatever the script inherited: a command started in the background of
    a shell script (``cmd &``), and everything it starts, inherits SIGINT ignored, and
    Python then never raises KeyboardInterrupt, so a SIGINT would be lost."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        sys.exit(main())
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt as e:  # Interrupted says where the checkpoint is
        if str(e):
            print(e, file=sys.stderr, flush=True)
        sys.exit(130)


# ------------------------------------------------------------------------------------------
# A run directory is held by one process at a time
# ------------------------------------------------------------------------------------------
LOCK = "lock"  # in a run directory: which process runs there; locked while it lives


class hold_run_dir:
    """Hold ``run_dir`` for this process until ``close()`` or the process ends (the OS releases
    the lock then, also after a SIGKILL, so a killed run can be resumed). Held by another
    process: one line naming it, and nothing changed. ``close(undo=True)``, for a run refused
    after all, removes the lock file and the directory if holding it made them."""

    def __init__(self, run_dir):
        self.run_dir, self.path = run_dir, os.path.join(run_dir, LOCK)
        self.made_dir, self.made_file = not os.path.isdir(run_dir), not os.path.exists(self.path)
        os.makedirs(run_dir, exist_ok=True)
        self.f = open(self.path, "a+")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.f.seek(0)
            holder = self.f.read().strip() or "another process"
            self.f.close()
            raise UserError(f"{run_dir} is in use by {holder}: wait for it to end, or pick "
                            f"another --exp_name, --seed or --data_dir") from None

    def claim(self):
        """Write who holds the directory (once the run is sure to go ahead), for the next one."""
        self.f.seek(0)
        self.f.truncate()
        self.f.write(f"process {os.getpid()} ({shlex.join(sys.argv)[:200]})\n")
        self.f.flush()

    def close(self, undo=False):
        self.f.close()
        if undo:
            with contextlib.suppress(OSError):
                if self.made_file:
                    os.remove(self.path)
                if self.made_dir:
                    os.rmdir(self.run_dir)


def run_dir_holder(run_dir):
    """Who holds ``run_dir`` now (as hold_run_dir wrote it), or None."""
    path = os.path.join(run_dir, LOCK)
    if not os.path.exists(path):
        return None
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            return f.read().strip() or "another process"
        fcntl.flock(f, fcntl.LOCK_UN)
    return None


# ------------------------------------------------------------------------------------------
# Settings: each a dataclass field with its default, the rule its value follows, its doc
# ------------------------------------------------------------------------------------------
class Rule(NamedTuple):
    says: str                      # what a valid value is, for the one-line error
    ok: Callable                   # value -> bool
    parse: Callable = str          # command-line text -> value


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


POSITIVE = Rule("a positive integer", lambda v: _int(v) and v >= 1, int)
COUNT = Rule("an integer >= 0", lambda v: _int(v) and v >= 0, int)
RATE = Rule("a number > 0", lambda v: _num(v) and v > 0, float)
SCALE = Rule("a number >= 0", lambda v: _num(v) and v >= 0, float)
DISCOUNT_OR_AUTO = Rule("in (0, 1] or 'auto' (the env's default)",
                        lambda v: v == "auto" or (_num(v) and 0 < v <= 1), number_or_auto)
NOISE = Rule("gaussian, pink or 'auto' (the env's default)",
             lambda v: v in ("gaussian", "pink", "auto"))
ACTOR = Rule("live or averaged", lambda v: v in ("live", "averaged"))
POLYAK = Rule("in [0, 1)", lambda v: _num(v) and 0 <= v < 1, float)
SWITCH = Rule("True or False", lambda v: isinstance(v, bool), boolean)
ENV_NUMBER = Rule("a number, None (off) or 'auto' (the env's default)",
                  lambda v: v is None or v == "auto" or _num(v), number_none_or_auto)
EP_LIMIT = Rule("a positive integer or None (the env's own limit)",
                lambda v: v is None or (_int(v) and v >= 1), integer_or_none)
DEVICE = Rule("cpu, cuda, cuda:N, mps or auto",
              lambda v: isinstance(v, str) and (v in ("cpu", "cuda", "mps", "auto") or
                                                (v.startswith("cuda:") and v[5:].isdigit())))


def setting(default, rule, doc, before=None):
    """A dataclass field with its rule and a one-line description (the CLI's help).
    ``before``: what runs made before the setting existed had, where that is not its default
    (their config.json has no such key; ``made_with``)."""
    return field(default=default, metadata=dict(rule=rule, doc=doc, before=before))


def made_with(config, settings_class):
    """Every setting a run was made with, from its config.json: the value it records, or, for
    a setting newer than the run, the value the code had then (``before``, else the
    default). A run made before early_stop existed with stop_return None (every run without
    a stop, and the old --no_stop) never stopped early: early_stop False. The one place that
    says how an old run is read: a resume (td3.py, the Python API) and sweep.py use it."""
    made = {f.name: config.get(f.name, f.default if f.metadata.get("before") is None
                               else f.metadata["before"]) for f in fields(settings_class)}
    if "early_stop" not in config and config.get("stop_return", "auto") is None:
        made["early_stop"] = False
    return made


def check_settings(settings, prefix=""):
    """Raise a one-line UserError for the first field whose value breaks its rule."""
    for f in fields(settings):
        v, rule = getattr(settings, f.name), f.metadata["rule"]
        if not rule.ok(v):
            raise UserError(f"{prefix}{f.name} must be {rule.says}, got {v!r}")


def doc(settings_class, f):
    """A setting's description; for one whose default is "auto", what auto means, written
    from the per-env table the class names (``AUTO``: general values, values per env)."""
    auto = getattr(settings_class, "AUTO", None)
    if f.default != "auto" or not auto or f.name not in auto[0]:
        return f.metadata["doc"]
    general, per_env = auto
    show = lambda v: f"{v:g}" if isinstance(v, float) else str(v)
    by_value = {}
    for env_id, values in per_env.items():
        if f.name in values:
            by_value.setdefault(show(values[f.name]), []).append(env_id)
    said = [f"{v} on {' and '.join(envs)}" for v, envs in by_value.items()]
    return f"{f.metadata['doc']}; auto: {', '.join(said + [f'else {show(general[f.name])}'])}"


def add_setting_options(parser, settings_class):
    """One --option per field, parsed by its rule. An option not given is absent from the
    parsed arguments (not None: ``--stop_return none`` is a value, "no early stop")."""
    for f in fields(settings_class):
        parser.add_argument(f"--{f.name}", metavar="X", type=f.metadata["rule"].parse,
                            default=argparse.SUPPRESS, help=f"{doc(settings_class, f)} ({f.default})")


def settings_doc(settings_class):
    """The settings as a docstring section: name, default and meaning of each."""
    return "\n".join(f"        {f.name} ({f.default!r}): {doc(settings_class, f)}"
                     for f in fields(settings_class))


# ------------------------------------------------------------------------------------------
# Run directories, envs and functions by name
# ------------------------------------------------------------------------------------------
def run_dir(data_dir, exp_name, seed):
    """Where a run goes: ``<data_dir>/<exp_name>/<exp_name>_s<seed>`` (Spinning Up's layout)."""
    return os.path.join(data_dir, exp_name, f"{exp_name}_s{seed}")


def read_config(run_dir, required=True):
    """The ``config.json`` of a run directory (the one reader of it), or a UserError saying
    what is wrong. Not ``required`` (plot.py and diagnose.py, which also read Spinning Up's
    runs): whatever dict it holds, or {} when there is none to read."""
    path = os.path.join(run_dir, "config.json")
    try:
        if not os.path.isdir(run_dir):
            raise UserError(f"{run_dir} is not a directory")
        try:
            with open(path) as f:
                config = json.load(f)
        except FileNotFoundError:
            raise UserError(f"{run_dir} has no config.json; is it a run directory?") from None
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
            raise UserError(f"{path} does not parse ({e})") from None
    except UserError:
        if required:
            raise
        return {}
    if not required:
        return config if isinstance(config, dict) else {}
    if not isinstance(config, dict) or "env_id" not in config:
        raise UserError(f"{path} is not a td3.py config (no env_id)")
    return config


# The newest mujoco that loads every Gymnasium v5 task without a deprecation warning and
# without writing MUJOCO_LOG.TXT into the working directory (3.16 and later do both).
MUJOCO_INSTALL = '"gymnasium[mujoco]==1.2.3" "mujoco==3.15.0"'


def make_env(env_id, **kwargs):
    """An ``env_fn`` for td3(); an unknown id becomes a UserError naming close ids."""
    import gymnasium as gym  # here, not at the top: plot.py and diagnose.py start without it
    try:
        gym.make(env_id, **kwargs).close()
    except gym.error.Error as e:
        close = difflib.get_close_matches(env_id, list(gym.registry), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        if isinstance(e, (gym.error.NameNotFound, gym.error.VersionNotFound,
                          gym.error.NamespaceNotFound, gym.error.UnregisteredEnv)):
            raise UserError(f"unknown env id {env_id!r}{hint}") from None
        if "mujoco" in str(e).lower():  # gymnasium's own hint installs mujoco 4, which warns
            raise UserError(f"env {env_id!r} needs MuJoCo: pip install {MUJOCO_INSTALL}") from None
        raise UserError(f"cannot make env {env_id!r}: {e}") from None
    except ImportError as e:
        raise UserError(f"env {env_id!r} needs a package that is missing: {e}") from None
    except (TypeError, ValueError) as e:  # an argument the env does not take (any more)
        raise UserError(f"cannot make env {env_id!r} with {kwargs}: {e}") from None
    return lambda: gym.make(env_id, **kwargs)


def check_env(env):
    """What TD3 needs of an env: continuous (Box) actions and flat observations."""
    import gymnasium as gym  # (as in make_env)
    if not isinstance(env.action_space, gym.spaces.Box):
        name = env.spec.id if env.spec else type(env).__name__
        raise UserError(f"{name} has a {type(env.action_space).__name__} action space; "
                        f"TD3 needs continuous (Box) actions")
    if len(env.observation_space.shape or ()) != 1:
        raise UserError(f"TD3 here needs flat observations, got shape {env.observation_space.shape}")


def env_settings(settings, env, general, per_env):
    """Check the env, then fill in the settings left at "auto": the env's value in ``per_env``
    (found however the env was made: ``env_key``), else the one in ``general``; and an episode
    limit not given: the env spec's (1600 for BipedalWalker-v3), or 1000 if it has none."""
    check_env(env)
    defaults = {**general, **per_env.get(env_key(env, per_env), {})}
    auto = {k: v for k, v in defaults.items() if getattr(settings, k) == "auto"}
    limit = settings.max_ep_len or (env.spec and env.spec.max_episode_steps) or 1000
    return replace(settings, **auto, max_ep_len=limit)


def env_key(env, known):
    """The id among ``known`` that names this env, however it was made: its own id, or a
    registered id with the same entry point and arguments, so that gym.make("LunarLander-v3",
    continuous=True) is LunarLanderContinuous-v3 (and BipedalWalker-v3 with hardcore=True is
    not BipedalWalker-v3). None for an env made without a spec."""
    return spec_key(env.spec, known)


def spec_key(spec, known):
    """env_key for an EnvSpec (None: no spec)."""
    import gymnasium as gym  # (as in make_env)
    if spec is None:
        return None

    def arguments(s):  # those that make another env: not render_mode, not a default value
        try:
            params = inspect.signature(gym.envs.registration.load_env_creator(s.entry_point)
                                       if isinstance(s.entry_point, str) else s.entry_point).parameters
        except (ImportError, AttributeError, TypeError, ValueError):
            params = {}
        return {k: v for k, v in s.kwargs.items() if k != "render_mode" and not (
            k in params and params[k].default is not inspect.Parameter.empty and params[k].default == v)}
    for env_id in known:
        other = gym.registry.get(env_id)
        if other is not None and other.entry_point == spec.entry_point and arguments(other) == arguments(spec):
            return env_id
    return None


def env_arguments(env):
    """What rebuilds ``env`` besides its id, for config.json: the arguments given to gym.make
    beyond the registered ones (``continuous=True``; ``max_episode_steps`` when changed),
    render_mode left out, and the wrappers put around it by name (which no command line
    rebuilds). An env made without a registered id has none."""
    import gymnasium as gym  # (as in make_env)
    spec = env.spec
    if spec is None or spec.id not in gym.registry:
        return {}, []
    registered = gym.registry[spec.id]
    kwargs = {k: v for k, v in spec.kwargs.items()
              if k != "render_mode" and (k not in registered.kwargs or registered.kwargs[k] != v)}
    if spec.max_episode_steps != registered.max_episode_steps:
        kwargs["max_episode_steps"] = spec.max_episode_steps
    return kwargs, [w.name for w in spec.additional_wrappers]


def registered_as(env_id, env_kwargs, known):
    """The id among ``known`` that a config.json's env (its id and arguments) is, as env_key
    finds it, with the same episode limit: LunarLander-v3 with continuous=True is
    LunarLanderContinuous-v3. An env whose arguments make no known env gets a name of its
    own, ``BipedalWalker-v3(hardcore=True)``, so that no other env's runs stand for it."""
    if not env_kwargs:
        return env_id
    import dataclasses
    import gymnasium as gym  # (as in make_env)
    own = f"{env_id}({', '.join(f'{k}={v!r}' for k, v in sorted(env_kwargs.items()))})"
    try:
        spec = gym.spec(env_id)
    except gym.error.Error:
        return own
    kwargs = {k: v for k, v in env_kwargs.items() if k != "max_episode_steps"}
    match = spec_key(dataclasses.replace(spec, kwargs={**spec.kwargs, **kwargs}), known)
    limit = env_kwargs.get("max_episode_steps", spec.max_episode_steps)
    return match if match and gym.registry[match].max_episode_steps == limit else own


def rebuild_env(run, **extra):
    """An ``env_fn`` that makes the env a run's config.json records (its id and arguments;
    ``extra``: e.g. render_mode), or a UserError saying why a command line can't: then only
    the Python code that made it can (td3(env_fn, resume=True, ...) resumes it)."""
    config = read_config(run)
    how = "only the Python code that made it can (td3(env_fn, resume=True, ...) resumes it)"
    if config.get("env_wrappers"):
        raise UserError(f"{run}'s env was wrapped in Python ({', '.join(config['env_wrappers'])}), "
                        f"which a command line can't rebuild; {how}")
    import gymnasium as gym  # (as in make_env)
    entry = config.get("env_entry_point") or ""
    if config["env_id"] not in gym.registry and ":" in entry:  # registered by its own module
        with contextlib.suppress(ImportError):
            importlib.import_module(entry.split(":")[0])
    if config["env_id"] not in gym.registry and ":" not in config["env_id"]:
        raise UserError(f"{run}'s env {config['env_id']!r} has no registered id, so a command "
                        f"line can't rebuild it; {how}")
    return make_env(config["env_id"], **config.get("env_kwargs", {}), **extra)


def name_of(fn):
    """``module:function``, the form ``load_function`` reads back (config.json records it)."""
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', fn)}"


def load_function(name):
    """The function a ``module:function`` name (e.g. ``notebooks.port_mistakes:shared_noise``) names."""
    module, _, qualname = name.partition(":")
    try:
        fn = importlib.import_module(module)
        for part in qualname.split("."):
            fn = getattr(fn, part)
    except (ImportError, AttributeError, ValueError) as e:
        raise UserError(f"cannot load {name!r} (expected module:function): {e}") from None
    if not callable(fn):
        raise UserError(f"{name!r} is not a function")
    return fn


# ------------------------------------------------------------------------------------------
# td3.py's command line: an option per setting of td3.Hyperparameters, plus these
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CommandLineOnly:
    """Options of td3.py's command line that are not td3() settings (checked by the same rules)."""
    hid: int = setting(256, POSITIVE, "units per hidden layer")
    l: int = setting(2, POSITIVE, "number of hidden layers")
    threads: "int | None" = setting(None, Rule("a positive integer", lambda v: v is None or (
        _int(v) and v >= 1), int), "torch CPU threads; None: min(2, the usable cores, OMP_NUM_THREADS) (docs/speed.md)")


# Shortcuts, each setting one field of td3.Hyperparameters.
SWITCHES = {"no_twin": ("twin", False, "trick 1 off: one critic"),
            "no_delay": ("policy_delay", 1, "trick 2 off: policy_delay=1"),
            "no_smoothing": ("target_noise", 0.0, "trick 3 off: target_noise=0"),
            "no_stop": ("early_stop", False, "train every epoch, also once solved"),
            "no_reward_floor": ("reward_floor", None, "no reward floor")}
# The options a resumed run may change; every other option must equal the run's own value.
RESUME_MAY_CHANGE = ("epochs", "device", "threads", "quiet")
MAY_CHANGE = "only " + ", ".join(f"--{o}" for o in RESUME_MAY_CHANGE) + " may change"


class Td3Command(NamedTuple):
    env_id: str
    kwargs: dict      # td3()'s keyword arguments
    run_dir: str
    threads: "int | None"
    env_fn: Callable  # makes the env: the id's, or on resume the one config.json records


def default_exp_name(env_id, hp):
    """A run is named by its env and the tricks it switched off: td3-<env>[-no_twin...]."""
    off = [name for name, on in (("no_twin", hp.twin), ("no_delay", hp.policy_delay > 1),
                                 ("no_smoothing", hp.target_noise > 0)) if not on]
    return "-".join(["td3", env_id, *off])


def td3_parser(settings_class, swap_points):
    p = ArgumentParser(description="Train or resume a TD3 agent (watch one with watch.py).",
                       allow_abbrev=False)  # an option is named in full, so --resume can check it
    p.add_argument("--env", default=argparse.SUPPRESS,
                   help="Gymnasium env id with Box actions, e.g. BipedalWalker-v3")
    add_setting_options(p, settings_class)
    add_setting_options(p, CommandLineOnly)
    p.add_argument("-s", dest="seed", type=int, default=argparse.SUPPRESS, help="short for --seed")
    for flag, (name, value, doc) in SWITCHES.items():  # absent unless given: None is a value
        p.add_argument(f"--{flag}", dest=name, action="store_const", const=value,
                       default=argparse.SUPPRESS, help=doc)
    for swap, fn in swap_points.items():
        p.add_argument(f"--{swap}", metavar="MODULE:FUNCTION", default=argparse.SUPPRESS,
                       help=f"swap point (default {name_of(fn)})")
    p.add_argument("--exp_name", default=argparse.SUPPRESS, help="default: td3-<env>[-ablations]")
    p.add_argument("--data_dir", default=argparse.SUPPRESS, help="where runs go (default: data)")
    p.add_argument("--quiet", action="store_true", help="no live progress line between tables")
    p.add_argument("--resume", metavar="RUN_DIR", default=argparse.SUPPRESS,
                   help=f"continue a stopped run; it keeps its settings ({MAY_CHANGE})")
    return p


def parse_td3(argv, settings_class, swap_points):
    """What ``python td3.py *argv`` trains, as a Td3Command. Options not given are absent
    from the parsed arguments, so that a resume can tell a given option from a default."""
    parser = td3_parser(settings_class, swap_points)
    args = vars(parser.parse_args(argv))
    extra = CommandLineOnly(**{k: args[k] for k in ("hid", "l", "threads") if k in args})
    check_settings(extra, prefix="--")
    quiet = args.pop("quiet")
    if "resume" in args:
        env_id, hparams, ac_kwargs, swaps, output_dir, exp_name = resume_settings(
            args, parser, argv, settings_class, swap_points)
    elif "env" not in args:
        raise UserError("give --env ENV_ID to train (or --resume RUN_DIR)")
    else:
        hparams = {f.name: args[f.name] for f in fields(settings_class) if f.name in args}
        env_id, ac_kwargs = args["env"], dict(hidden_sizes=(extra.hid,) * extra.l)
        swaps = {k: args.get(k, name_of(fn)) for k, fn in swap_points.items()}
        exp_name = args.get("exp_name") or default_exp_name(env_id, settings_class(**hparams))
        output_dir = run_dir(args.get("data_dir", "data"), exp_name, settings_class(**hparams).seed)
    settings_class(**hparams).check(prefix="--")
    threads = extra.threads  # a resume keeps its run's thread count (determinism), unless given
    if "resume" in args and threads is None:
        threads = read_config(output_dir).get("torch_threads")
    swaps = {k: load_function(name) for k, name in swaps.items()}
    logger_kwargs = dict(output_dir=output_dir, exp_name=exp_name, progress=not quiet)
    env_fn = rebuild_env(output_dir) if "resume" in args else make_env(env_id)
    return Td3Command(env_id, dict(hparams, **swaps, ac_kwargs=ac_kwargs, resume="resume" in args,
                                   logger_kwargs=logger_kwargs), output_dir, threads, env_fn)


def resume_settings(args, parser, argv, settings_class, swap_points):
    """A resumed run trains on with the settings in its config.json. An option given with
    --resume is honoured when it may change (RESUME_MAY_CHANGE) or equals the run's value,
    and refused in one line otherwise: it is never dropped in silence. --exp_name and
    --data_dir name a new run's directory and are refused, and so is "auto": config.json
    holds the value the run filled in, and the refusal names it."""
    output_dir = args["resume"]
    config = read_config(output_dir)  # without ckpt.pt: started again or refused (runs.py)
    sizes = list(config["ac_kwargs"]["hidden_sizes"])
    run_had = made_with(config, settings_class)  # settings newer than the run too
    run_had.update({k: config.get(k, name_of(fn)) for k, fn in swap_points.items()},
                   env=config["env_id"])
    given_as = {}  # setting -> the option that set it, as typed (--no_stop sets stop_return)
    for token in argv if argv is not None else sys.argv[1:]:
        action = parser._option_string_actions.get(token.split("=", 1)[0])
        if action is not None:
            given_as[action.dest] = token.split("=", 1)[0]
    for name, value in args.items():
        option = given_as.get(name, f"--{name}")
        if name in (*RESUME_MAY_CHANGE, "resume"):
            continue
        if name in ("exp_name", "data_dir"):
            raise UserError(f"{option} names a new run's directory; --resume {output_dir} "
                            f"already names the run")
        if (name == "hid" and set(sizes) != {value}) or (name == "l" and len(sizes) != value):
            raise UserError(f"{option} {value}: {output_dir} was made with hidden_sizes="
                            f"{sizes}; a resumed run keeps its network")
        if name in run_had and run_had[name] != value:
            shown = shlex.join([option] if option.startswith("--no_") else [option, str(value)])
            raise UserError(f"{shown}: {output_dir} was made with {name}={run_had[name]!r}; a "
                            f"resumed run keeps its settings ({MAY_CHANGE})")
    hparams = {f.name: run_had[f.name] for f in fields(settings_class)}
    hparams.update({k: args[k] for k in ("epochs", "device") if k in args})
    ac_kwargs = dict(config["ac_kwargs"], hidden_sizes=tuple(sizes))
    swaps = {k: run_had[k] for k in swap_points}
    exp_name = config.get("exp_name") or os.path.basename(os.path.dirname(os.path.abspath(output_dir)))
    return config["env_id"], hparams, ac_kwargs, swaps, output_dir, exp_name
