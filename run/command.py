"""td3.py's command line: ``python td3.py --env ENV_ID [--setting value ...]`` or
``--resume RUN_DIR``, turned into td3()'s keyword arguments.

An option per setting of td3.py's table and the run's (RunSettings), each parsed by its rule
(run/settings.py), their switches (``--no_twin``), the swap points by ``module:function``,
and what a resume may change. The values are not checked here: td3() checks every setting
once, whether it came from here or from Python.
"""
import argparse
import importlib
import os
import shlex
from dataclasses import dataclass, fields

from run.config import RunSettings, name_of
from run.directory import DATA_DIR, RESUME_MAY_CHANGE, read_config
from run.envs import make_env, rebuild_env
from run.errors import ArgumentParser, UserError
from run.settings import check, doc, made_with, setting

MAY_CHANGE = "only " + ", ".join(f"--{o}" for o in RESUME_MAY_CHANGE) + " may change"


@dataclass(frozen=True)
class CommandLineOnly:
    """Options of td3.py's command line that are not settings: the network's shape (td3()
    takes it as ac_kwargs)."""
    hid: int = setting(256, "int >= 1", "units per hidden layer")
    l: int = setting(2, "int >= 1", "number of hidden layers")


def command_line(argv, settings_class, swap_points):
    """td3()'s keyword arguments for ``python td3.py *argv`` (``settings_class``:
    td3.Hyperparameters; ``swap_points``: name -> td3.py's function): ``env_fn``, the settings
    given, the swap points, ``ac_kwargs``, ``logger_kwargs`` and ``resume``."""
    classes = (settings_class, RunSettings)
    parser = td3_parser(classes, settings_class.AUTO, swap_points)
    args = vars(parser.parse_args(argv))
    given = {f.name: args.pop(f.name) for f in fields(CommandLineOnly) if f.name in args}
    extra = CommandLineOnly(**given)
    check(extra, prefix="--")  # the command line's own options; td3() checks the settings
    logger_kwargs = dict(progress=not args.pop("quiet"))
    if "resume" in args:
        return resumed(args, classes, swap_points, given, logger_kwargs)
    if "env" not in args:
        raise UserError("give --env ENV_ID to train (or --resume RUN_DIR)")
    env_fn = make_env(args.pop("env"))
    logger_kwargs.update({k: args.pop(k) for k in ("exp_name", "data_dir") if k in args})
    swaps = {k: load_function(args.pop(k)) for k in swap_points if k in args}
    return dict(args, **swaps, env_fn=env_fn, logger_kwargs=logger_kwargs,
                ac_kwargs=dict(hidden_sizes=(extra.hid,) * extra.l))


def td3_parser(classes, auto, swap_points):
    p = ArgumentParser(description="Train or resume a TD3 agent (watch one with watch.py).",
                       allow_abbrev=False)  # an option is named in full, so --resume can check it
    p.add_argument("--env", default=argparse.SUPPRESS,
                   help="Gymnasium env id with Box actions, e.g. BipedalWalker-v3")
    # An option not given is absent from the parsed arguments (not None: --stop_return none
    # is a value, "no early stop"), so that a resume can tell a given option from a default.
    for f in (f for cls in (*classes, CommandLineOnly) for f in fields(cls)):
        p.add_argument(f"--{f.name}", metavar="X", type=f.metadata["rule"].parse,
                       default=argparse.SUPPRESS, help=f"{doc(f, auto)} ({f.default})")
    p.add_argument("-s", dest="seed", type=int, default=argparse.SUPPRESS, help="short for --seed")
    for f in (f for cls in classes for f in fields(cls) if f.metadata["switch"]):
        flag, value = f.metadata["switch"]
        p.add_argument(f"--{flag}", dest=f.name, action="store_const", const=value,
                       default=argparse.SUPPRESS, help=f"{f.name}={value}")
    for swap, fn in swap_points.items():
        p.add_argument(f"--{swap}", metavar="MODULE:FUNCTION", default=argparse.SUPPRESS,
                       help=f"swap point (default {name_of(fn)})")
    p.add_argument("--exp_name", default=argparse.SUPPRESS, help="default: td3-<env>[-no_twin...]")
    p.add_argument("--data_dir", default=argparse.SUPPRESS,
                   help=f"where runs go (default: {DATA_DIR})")
    p.add_argument("--quiet", action="store_true", help="no live progress line between tables")
    p.add_argument("--resume", metavar="RUN_DIR", default=argparse.SUPPRESS,
                   help=f"continue a stopped run; it keeps its settings ({MAY_CHANGE})")
    return p


def resumed(args, classes, swap_points, given, logger_kwargs):
    """A resumed run trains on with the settings in its config.json. An option given with
    --resume is honoured when it may change (RESUME_MAY_CHANGE) or equals the run's value,
    and refused in one line otherwise: it is never dropped in silence. --exp_name and
    --data_dir name a new run's directory and are refused, and so is "auto": config.json
    holds the value the run filled in, and the refusal names it. ``given``: the
    command-line-only options given (--hid and --l must match the run's network)."""
    output_dir = args.pop("resume")
    config = read_config(output_dir)  # without ckpt.pt: started again or refused (run/door.py)
    sizes = list(config["ac_kwargs"]["hidden_sizes"])
    run_had = made_with(config, classes)  # settings newer than the run too
    run_had.update({k: config.get(k, name_of(fn)) for k, fn in swap_points.items()},
                   env=config["env_id"])
    for name, value in args.items():  # (a switch is said as the setting it sets: --twin False)
        if name in ("exp_name", "data_dir"):
            raise UserError(f"--{name} names a new run's directory; --resume {output_dir} "
                            f"already names the run")
        if name not in RESUME_MAY_CHANGE and name in run_had and run_had[name] != value:
            raise UserError(f"{shlex.join([f'--{name}', str(value)])}: {output_dir} was made with "
                            f"{name}={run_had[name]!r}; a resumed run keeps its settings "
                            f"({MAY_CHANGE})")
    for name, value in given.items():
        if (name == "hid" and set(sizes) != {value}) or (name == "l" and len(sizes) != value):
            raise UserError(f"--{name} {value}: {output_dir} was made with hidden_sizes="
                            f"{sizes}; a resumed run keeps its network")
    settings = {f.name: args.get(f.name, run_had[f.name]) for cls in classes for f in fields(cls)}
    swaps = {k: load_function(run_had[k]) for k in swap_points}
    exp_name = (config.get("exp_name")
                or os.path.basename(os.path.dirname(os.path.abspath(output_dir))))
    return dict(settings, **swaps, env_fn=rebuild_env(config, output_dir), resume=True,
                ac_kwargs=dict(config["ac_kwargs"], hidden_sizes=tuple(sizes)),
                logger_kwargs=dict(logger_kwargs, output_dir=output_dir, exp_name=exp_name))


def load_function(name):
    """The function a ``module:function`` name (e.g. ``notebooks.port_mistakes:shared_noise``)
    names: a swap point config.json records, or one given on the command line."""
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
