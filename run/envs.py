"""Envs by id: making and checking one, the per-env key ENV_DEFAULTS is looked up by, and
rebuilding a run's env from what its config.json records (id, arguments, entry point).

Gymnasium is imported inside the functions, so that plot.py and diagnose.py start without it.
Nothing here knows TD3's settings or reads a file.
"""
import contextlib
import difflib
import importlib
import inspect

from run.errors import UserError


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
        raise UserError(f"TD3 here needs flat observations, got shape "
                        f"{env.observation_space.shape}")


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
        creator = s.entry_point
        try:
            if isinstance(creator, str):
                creator = gym.envs.registration.load_env_creator(creator)
            params = inspect.signature(creator).parameters
        except (ImportError, AttributeError, TypeError, ValueError):
            params = {}
        default = lambda k: params[k].default if k in params else inspect.Parameter.empty
        return {k: v for k, v in s.kwargs.items()
                if k != "render_mode" and not (default(k) is not inspect.Parameter.empty
                                               and default(k) == v)}
    for env_id in known:
        other = gym.registry.get(env_id)
        if other is not None and other.entry_point == spec.entry_point \
                and arguments(other) == arguments(spec):
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


def rebuild_env(config, run, **extra):
    """An ``env_fn`` that makes the env a run's ``config`` (its config.json) records: its id
    and arguments (``extra``: e.g. render_mode), or a UserError saying why a command line
    can't rebuild it: then only the Python code that made it can (td3(env_fn, resume=True,
    ...) resumes it). ``run`` names the run directory in the message."""
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
