"""What a run is, settled once before anything is written: the run's own settings (how it is
judged, saved and threaded; td3.py's table holds TD3's), each setting checked by its rule and
each "auto" filled in for the env, and what config.json records of the run.
"""
import inspect
import os
import sys
from dataclasses import asdict, dataclass, fields, replace

from run.envs import check_env, env_arguments, env_key
from run.errors import UserError
from run.machine import pick_device
from run.settings import check, setting


@dataclass(frozen=True)
class RunSettings:
    """The run's own settings: td3(**kwargs) and the command line take them beside td3.py's
    Hyperparameters, and config.json records both (run/judging.py says how a run is judged;
    a resumed run keeps its thread count, config.json's torch_threads, unless given)."""
    save_freq: int = setting(1, "int >= 1", "write ckpt.pt every this many epochs")
    stop_return: float | None | str = setting("auto", "number, None or auto", "solved at this "
                                              "test return (None: never)")
    confirm_episodes: int = setting(100, "int >= 0", "solved only if this many more episodes "
                                    "hold it too; 0: stop_epochs epochs in a row do", before=0)
    stop_epochs: int = setting(3, "int >= 1", "with confirm_episodes 0: epochs in a row")
    early_stop: bool = setting(True, "True or False", "stop once solved; best.pt is the "
                               "solved actor", switch=("no_stop", False))
    test_actor: str = setting("live", "live or averaged", "the actor judged: live (pi) or "
                                                          "averaged (ac_targ.pi)")
    compare_actors: bool = setting(False, "True or False", "test and confirm both actors, from "
                                                           "the same reset seeds")
    threads: int | None = setting(None, "threads", "torch CPU threads; None: at most 2, and 1 "
                                  "while another process keeps a core busy (docs/speed.md)")


def resolve(settings_class, given, env):
    """The one check of a run's settings, and each "auto" filled in once: ``given`` (td3()'s
    keyword arguments) split between ``settings_class`` (td3.Hyperparameters) and RunSettings,
    each value checked by its rule, then each "auto" given the env's value in the per-env
    table (``settings_class.AUTO``: general values, values per env id), else the general
    one; an episode limit not given, the env's (1600 for BipedalWalker-v3; else 1000); the
    device "auto", cuda where torch has it. Returns both, resolved."""
    names = [f.name for f in fields(settings_class)]
    unknown = [k for k in given if k not in names and k not in RunSettings.__dataclass_fields__]
    if unknown:
        raise UserError(f"there is no setting {unknown[0]!r} (python td3.py -h lists them)")
    hp = settings_class(**{k: v for k, v in given.items() if k in names})
    run = RunSettings(**{k: v for k, v in given.items() if k not in names})
    check(hp, run)
    check_env(env)
    general, per_env = settings_class.AUTO
    defaults = {**general, **per_env.get(env_key(env, per_env), {})}
    auto = lambda s: {k: v for k, v in defaults.items() if getattr(s, k, None) == "auto"}
    limit = hp.max_ep_len or (env.spec and env.spec.max_episode_steps) or 1000
    return (replace(hp, **auto(hp), max_ep_len=limit, device=str(pick_device(hp.device))),
            replace(run, **auto(run)))


def run_config(env, hp, run, actor_critic, ac_kwargs, swaps):
    """What config.json records of a run: its resolved settings (``hp``, ``run``), the env
    and what rebuilds it, the network as built (defaults too) and the swap points by name."""
    network = {k: p.default for k, p in inspect.signature(actor_critic).parameters.items()
               if isinstance(p.default, (int, float, str, tuple, list))}
    env_kwargs, env_wrappers = env_arguments(env)
    return dict(asdict(hp), **asdict(run),
                env_id=env.spec.id if env.spec else type(env.unwrapped).__name__,
                env_kwargs=env_kwargs, env_wrappers=env_wrappers,
                env_entry_point=(env.spec.entry_point if env.spec
                                 and isinstance(env.spec.entry_point, str) else None),
                obs_dim=env.observation_space.shape[0], act_dim=env.action_space.shape[0],
                ac_kwargs={**network, **ac_kwargs}, actor_critic=name_of(actor_critic),
                **{k: name_of(fn) for k, fn in swaps.items()})


def name_of(fn):
    """``module:function``, the form the command line loads back (config.json records it). A
    function of the script Python runs (``python td3.py``: module __main__) is named by the
    script's file, which imports back (td3:critic_loss)."""
    module = getattr(fn, "__module__", "?")
    if module == "__main__":
        module = os.path.splitext(os.path.basename(sys.modules["__main__"].__file__))[0]
    return f"{module}:{getattr(fn, '__qualname__', fn)}"
