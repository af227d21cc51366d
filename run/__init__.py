"""Everything a TD3 run needs that is not TD3, behind one door: td3.py imports ``Run`` and
five functions from run/door.py, and nothing else of the package.

    door.py       Run: the eight members td3() uses
    command.py    td3.py's command line and what --resume may change
    config.py     the run's own settings; every setting checked and "auto" filled in, once
    directory.py  the run directory: its lock, config.json, checkpoints, may it start or resume
    resume.py     exact resume: the training state, a Box2D env's past, the random streams
    judging.py    test episodes, the confirmation, best.pt's actor, the early stop
    progress.py   the live progress line and Ctrl-C
    machine.py    the device, the CPU threads, the memory, what config.json records of them
    envs.py       envs by id: make, check, the per-env key, rebuild from config.json
    settings.py   setting(default, rule, doc): the rules and the help text
    errors.py     the one user-error type and how every script reports it

Each file imports only those below it in this list. This file imports none of them, so that
plot.py and diagnose.py, which read config.json through run.directory, start without torch.
"""
