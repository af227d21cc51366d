"""What the scripts' command lines share, without torch or gymnasium at import, so that
plot.py and diagnose.py start fast:

- the one user-error type, its one-line report and exit codes (``run_main``), and the
  argument parser that reports a usage mistake the same way;
- a run directory held by one process at a time (``hold_run_dir``), run directories by name
  (``run_dir``) and their config.json (``read_config``, its one reader);
- functions by ``module:function`` (the swap points config.json names);
- td3.py's command line (``parse_td3``): an option per setting (their rules: settings.py), the
  switches, and what ``--resume`` may change (the env: envs.py).
"""
import argparse
import contextlib
import fcntl
import importlib
import json
import os
import shlex
import signal
import sys
import threading
from dataclasses import dataclass, fields, replace
from typing import Callable, NamedTuple

import settings
from settings import Rule, _int, made_with, setting, violation

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


class RunDirInUse(UserError):
    """A run directory another process holds; ``holder`` says which (as it wrote itself)."""
    holder = "another process"


class hold_run_dir:
    """Hold ``run_dir`` for this process until ``close()`` or the process ends (the OS releases
    the lock then, also after a SIGKILL, so a killed run can be resumed). Held by another
    process: RunDirInUse, one line naming it, and nothing changed. ``close(undo=True)``, for a
    run refused after all, removes the lock file and the directory if holding it made them."""

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
            e = RunDirInUse(f"{run_dir} is in use by {holder}: wait for it to end, or pick "
                            f"another --exp_name, --seed or --data_dir")
            e.holder = holder
            raise e from None

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


# ------------------------------------------------------------------------------------------
# Settings' options: each setting's rule and words come from settings.py
# ------------------------------------------------------------------------------------------
def check_settings(values, prefix=""):
    """Raise a one-line UserError for the first field of ``values`` (a settings dataclass)
    whose value breaks its rule."""
    said = violation(values, prefix)
    if said:
        raise UserError(said)


def add_setting_options(parser, settings_class):
    """One --option per field, parsed by its rule. An option not given is absent from the
    parsed arguments (not None: ``--stop_return none`` is a value, "no early stop")."""
    for f in fields(settings_class):
        parser.add_argument(f"--{f.name}", metavar="X", type=f.metadata["rule"].parse,
                            default=argparse.SUPPRESS, help=f"{settings.doc(settings_class, f)} ({f.default})")


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
    hid: int = setting(256, "int >= 1", "units per hidden layer")
    l: int = setting(2, "int >= 1", "number of hidden layers")
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
    options: CommandLineOnly  # the command-line-only options, threads as above


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
    extra = CommandLineOnly(**{f.name: args[f.name] for f in fields(CommandLineOnly)
                               if f.name in args})
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
    check_settings(settings_class(**hparams), prefix="--")
    threads = extra.threads  # a resume keeps its run's thread count (determinism), unless given
    if "resume" in args and threads is None:
        threads = read_config(output_dir).get("torch_threads")
    swaps = {k: load_function(name) for k, name in swaps.items()}
    logger_kwargs = dict(output_dir=output_dir, exp_name=exp_name, progress=not quiet)
    from envs import make_env, rebuild_env  # here: envs.py itself reads config.json through cli
    env_fn = rebuild_env(output_dir) if "resume" in args else make_env(env_id)
    return Td3Command(env_id, dict(hparams, **swaps, ac_kwargs=ac_kwargs, resume="resume" in args,
                                   logger_kwargs=logger_kwargs), output_dir, threads, env_fn,
                      replace(extra, threads=threads))


def resume_settings(args, parser, argv, settings_class, swap_points):
    """A resumed run trains on with the settings in its config.json. An option given with
    --resume is honoured when it may change (RESUME_MAY_CHANGE) or equals the run's value,
    and refused in one line otherwise: it is never dropped in silence. --exp_name and
    --data_dir name a new run's directory and are refused, and so is "auto": config.json
    holds the value the run filled in, and the refusal names it. A command-line-only option
    that config.json does not record (all but --hid and --l) is taken as given."""
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
