"""The one door between td3.py and the run package: ``Run``, the eight members td3() uses,
and the five functions td3.py takes from the package (re-exported here, below).

    run = Run(env_fn, Hyperparameters, settings, ...)   # settings checked, "auto" filled in
    hp, logger, (env, test_env) = run.hp, run.logger, run.envs
    o, ep_ret, ep_len = run.start(loop, rng, judged, losses, ac=ac, ...) or env.reset(...)
    with run:                                            # Ctrl-C now asks for a clean stop
        while ... and not run.stopped:
            ...
            run.check_finite(epoch)                      # before the epoch's test
            run.end_epoch(loop, seeds)                   # judging, the row, best.pt, ckpt.pt
            run.after_step(t, warm_up, updating)         # the progress line, Ctrl-C

Behind it, one file per job: the settings (config.py, settings.py), the run directory
(directory.py), exact resume (resume.py), judging (judging.py), envs (envs.py), the machine
(machine.py), the progress line and Ctrl-C (progress.py). It knows no TD3 math: td3.py hands
in its settings table, its networks and the names of its logged losses.
"""
import math
import os
import time

import torch

from logger import EpochLogger
from run.command import command_line  # noqa: F401  td3()'s arguments from td3.py's command line
from run.config import RunSettings, resolve, run_config
from run.directory import (DATA_DIR, IDENTITY, RunDirectory, check_complete, hold_run_dir,
                           read_config, run_dir)
from run.errors import Interrupted, UserError, run_main  # noqa: F401  run_main: td3.py's __main__
from run.judging import Judge, play  # noqa: F401  play: one episode, as every test plays it
from run.machine import OtherLoad, check_fits, default_threads, run_metadata
from run.progress import CtrlC, ProgressLine, format_seconds
from run.resume import ReplayableEnv, TrainingState
from run.settings import setting  # noqa: F401  a field of td3.py's settings table


class Run:
    """One run of td3(): its settings, envs, directory, logger, judging, checkpoints, Ctrl-C
    and progress line. ``settings``: td3()'s keyword arguments, for ``settings_class``
    (td3.Hyperparameters, whose ``TRICKS`` name the run) and RunSettings; ``swaps``: the
    swap points, by name in config.json; ``logger_kwargs``: EpochLogger's, plus ``data_dir``
    and ``progress`` (False: no live progress line). Sets torch's CPU threads (a resume keeps
    its run's, unless given). Nothing is written here."""

    def __init__(self, env_fn, settings_class, settings, actor_critic, ac_kwargs, swaps,
                 logger_kwargs=dict(), resume=False):
        self.envs = ReplayableEnv(env_fn()), ReplayableEnv(env_fn())
        self.env_fn, self.resume = env_fn, resume
        self.hp, run = resolve(settings_class, settings, self.envs[0])
        config = run_config(self.envs[0], self.hp, run, actor_critic, ac_kwargs, swaps)
        kwargs = dict(logger_kwargs)
        self.progress_on = kwargs.pop("progress", True) and not kwargs.get("quiet")
        kwargs.setdefault("exp_name", exp_name(config["env_id"], self.hp, settings_class.TRICKS))
        data_dir = kwargs.pop("data_dir", None) or DATA_DIR
        self.output_dir = kwargs.setdefault("output_dir",
                                            run_dir(data_dir, kwargs["exp_name"], self.hp.seed))
        threads = run.threads
        if threads is None and resume and os.path.isdir(self.output_dir):
            threads = read_config(self.output_dir).get("torch_threads")  # determinism
        torch.set_num_threads(threads or default_threads())
        self.busy = threads is None and torch.get_num_threads() < default_threads(free=math.inf)
        self.other_load = OtherLoad() if torch.get_num_threads() > 1 else None
        self.config = dict(config, logger_kwargs=kwargs, resume=resume, **run_metadata())
        self.settings_classes = (settings_class, RunSettings)
        self.logger = EpochLogger(**kwargs)
        self.judge = Judge(self.config)
        self.total_steps = self.hp.steps_per_epoch * self.hp.epochs

    def start(self, loop, rng, judged, losses, **parts):
        """Take the run directory and begin: a new run writes config.json and returns None,
        and td3() resets its env; a resumed one gets everything back (``loop``, the training
        loop's counters, too) and returns (obs, episode return, episode length) of its episode
        in progress. ``judged``: actor -> the actor-critic it acts with (best.pt keeps it);
        ``losses``: the logged values that must stay finite; ``parts``: what a checkpoint
        holds (networks, optimizers, the buffer; one with ``describe()`` is named when the
        run starts)."""
        check_fits(parts)  # a replay buffer numpy reserved must fit once it fills
        self.lock = hold_run_dir(self.output_dir)  # before any check: one process per directory
        try:
            self.dir = RunDirectory(self.output_dir, self.config, self.resume,
                                    self.settings_classes)
            ckpt, self.saved_epoch = self.dir.ckpt, self.dir.ckpt and self.dir.ckpt["epoch"]
            if ckpt is not None:
                try:
                    self.logger.resume(ckpt["epoch"])
                except (ValueError, OSError, UnicodeDecodeError) as e:
                    raise UserError(f"cannot resume: {e}") from None
            self.state = TrainingState(loop, rng, *self.envs, self.logger, self.hp.device, parts)
            if ckpt is not None:
                check_complete(ckpt, self.state.keys())
            self.lock.claim()
        except BaseException:
            self.lock.close(undo=True)  # a refused run leaves the directory as it was
            raise
        self.loop, self.judged, self.losses = loop, judged, losses
        kept, episode = self.dir.prepare(), None
        if ckpt is None:
            if self.dir.restart is not None:
                print(f"note: {self.output_dir} has no checkpoint yet (it stopped before its "
                      f"first was written), so it starts again from env step 0"
                      + (f"; its earlier files are kept as {', '.join(kept)}" if kept else ""),
                      flush=True)
            self.logger.save_config(dict(self.config, resume=False))  # a start, also when again
            self.elapsed = 0.0
        else:
            episode = self.restore(ckpt)
        self.start_time = self.epoch_time = time.time()
        self.epoch_t = loop.t
        self.progress = ProgressLine(self.total_steps, loop.t, quiet=not self.progress_on)
        if loop.t >= self.total_steps:  # a finished run: what it did, how to train on
            print(f"{self.output_dir} is finished: {loop.epoch} epochs, {loop.t:,} env steps; " + (
                f"it stopped early ({self.judge.stop_reason()}), so it trains no further"
                if self.judge.stopped else
                f"to train on, resume with --epochs N, N > {loop.epoch}"),
                flush=True)
        else:
            n, busy = torch.get_num_threads(), " (another process keeps a core busy)" * self.busy
            sizes = [p.describe() for p in parts.values() if hasattr(p, "describe")]
            print("; ".join(sizes + [f"{'resuming at' if ckpt else 'starting'} env step {loop.t:,} "
                                     f"of {self.total_steps:,}; device {self.hp.device}, {n} torch "
                                     f"thread{'s' * (n > 1)}{busy}"]), flush=True)
        return episode

    def restore(self, ckpt):
        """A resumed run's state put back, and a line where its numbers part from an
        uninterrupted run's; returns its episode in progress."""
        self.judge.load_state_dict(ckpt)
        if self.judge.stopped:
            self.total_steps = ckpt["t"]  # it had stopped early: nothing left to train
        made_on = ckpt.get("device") or read_config(self.output_dir).get("device", "cpu")
        parts_from = self.state.parts_from(ckpt, made_on)
        if parts_from:
            print(f"note: {self.output_dir} {parts_from}: from here its numbers are no longer "
                  f"those of an uninterrupted run", flush=True)
        replay_time = time.time()
        episode = self.state.restore(ckpt, envs=ckpt["t"] < self.total_steps)
        env, test_env = self.envs
        if episode and "past_seeds" in ckpt["episode"]:
            print(f"replayed the train and test envs' {env.n_past + test_env.n_past:,} past env "
                  f"steps in {time.time() - replay_time:.1f} s (a Box2D world remembers its past "
                  f"episodes)", flush=True)
        self.elapsed = ckpt["elapsed"]
        self.dir.ckpt = None  # the replay buffer's copy can go
        return episode

    def __enter__(self):
        self._ctrl_c = CtrlC()
        return self

    def __exit__(self, *exc):
        self._ctrl_c.close()
        self.lock.close()  # the directory is free for the next process (or a later td3() here)

    @property
    def stopped(self):
        """Whether the run is solved and stops early (run/judging.py)."""
        return self.judge.stopped

    def after_step(self, t, warm_up, updating):
        """After each env step: the live progress line (redrawn at most twice a second,
        ~100 ns otherwise; ``warm_up`` while the actions are random, ``updating`` once the
        networks train), then, after Ctrl-C, a checkpoint and Interrupted."""
        self.progress.update(t, "random warm-up" if warm_up else "learning",
                             self.envs[0].last_return, updating)
        if self._ctrl_c.requested:
            self.check_finite(self.loop.epoch + 1)  # never a checkpoint of NaN weights
            self.checkpoint()
            raise Interrupted(f"interrupted at env step {t:,}; checkpoint saved. Continue "
                              f"with: python td3.py --resume {self.output_dir}")

    def check_finite(self, epoch):
        """Stop on NaN/inf in the losses or the networks before anything uses them, so the
        last good checkpoint stays."""
        logged = self.logger.epoch_dict
        bad = next((k for k in self.losses if logged.get(k) and not bool(
            torch.isfinite(torch.stack(logged[k])).all())), None)
        bad = bad or next((f"parameter {name}" for module in self.judged.values()
                           for name, p in module.named_parameters()
                           if not bool(torch.isfinite(p).all())), None)
        if bad:
            kept = (f"its last good checkpoint (epoch {self.saved_epoch}) in {self.output_dir} "
                    f"is kept" if self.saved_epoch is not None else f"{self.output_dir} has no "
                    f"checkpoint yet, so a resume starts it again")
            raise UserError(f"epoch {epoch}: {bad} became NaN or inf; stopped, {kept}")

    def end_epoch(self, loop, seeds):
        """After td3() logged the epoch's columns: the rest of the judging from the test's
        reset ``seeds`` (its columns), Time, the row printed and written; then the files the
        judging keeps (best.pt), the stop once solved, and ckpt.pt every save_freq epochs and
        at the end."""
        live = self.logger.current_row["AverageTestEpRet"]  # the live actor's test, td3.py's
        returns, confirmed = self.judge.epoch(loop.epoch, seeds, live, self.logger, self.env_fn,
                                              self.judged)
        for key in self.judge.columns:  # NaN where it did not run this epoch
            self.logger.log_tabular(key, average_only=True)
        self.logger.log_tabular("Time", self.elapsed + time.time() - self.start_time)
        sps = (loop.t - self.epoch_t) / max(time.time() - self.epoch_time, 1e-9)
        self.progress.clear()
        try:
            left = format_seconds((self.total_steps - loop.t) / sps)
            self.logger.dump_tabular(
                f"Epoch {loop.epoch}/{self.hp.epochs} | {loop.t:,}/{self.total_steps:,} env steps"
                f" | {sps:,.0f} steps/s | ~{left} left")
        except ValueError as e:  # a run resumed by code that logs another column
            raise UserError(f"{e}; resume a run with the code that made it (config.json names "
                            f"its git commit)") from None
        for name, actor, ret, confirmed_now in self.judge.end_epoch(loop.epoch, returns, confirmed):
            self.dir.write(name, dict(ac=self.judged[actor].state_dict(), epoch=loop.epoch,
                                      test_return=ret, actor=actor, confirmed=confirmed_now,
                                      **{k: self.config[k] for k in IDENTITY}), self.saved_epoch)
        self.say_if_shared()
        if self.judge.stopped:
            self.total_steps = loop.t  # solved: this epoch is the last
            print(f"stopping early: {self.judge.stop_reason()}", flush=True)
        if loop.epoch % self.config["save_freq"] == 0 or loop.t >= self.total_steps:
            self.checkpoint()
        self.epoch_time, self.epoch_t = time.time(), loop.t

    def say_if_shared(self):
        """Once, when other processes kept a core busy through an epoch while this run has two
        threads: they wait for each other at every step (docs/speed.md). The count is kept, so
        that the run stays deterministic; a resume may change it."""
        busy = self.other_load and self.other_load.since_last()
        if busy is not None and busy > 0.5:
            print(f"note: other processes kept {busy:.1f} cores busy in this epoch, and this "
                  f"run's {torch.get_num_threads()} torch threads wait for them at every step: "
                  f"Ctrl-C, then python td3.py --resume {self.output_dir} --threads 1 is faster "
                  f"while they run", flush=True)
            self.other_load = None  # said once

    def checkpoint(self):
        """Everything an exact resume needs, as tensors and plain values, written atomically."""
        elapsed = self.elapsed + time.time() - self.start_time
        self.dir.write("ckpt.pt", {**self.state.capture(), **self.judge.state_dict(),
                                   "elapsed": elapsed, **{k: self.config[k] for k in IDENTITY}},
                       self.saved_epoch)
        self.saved_epoch = self.loop.epoch


def exp_name(env_id, hp, tricks):
    """A run is named by its env and the tricks it switched off (``tricks``: the settings
    that hold them, each with its switch): td3-<env>[-no_twin...]."""
    switches = [hp.__dataclass_fields__[name].metadata["switch"] for name in tricks]
    off = [flag for name, (flag, value) in zip(tricks, switches) if getattr(hp, name) == value]
    return "-".join(["td3", env_id, *off])
