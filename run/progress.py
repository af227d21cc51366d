"""What a person watching a run sees between epoch tables, and how they stop it: the live
progress line (env steps, steps/s, time left) and Ctrl-C (a checkpoint, then a clean stop).
"""
import signal
import sys
import time


def format_seconds(s):
    s = int(max(0, s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class ProgressLine:
    """Where a run is between two epoch tables: env steps, phase, steps/s, last return, time left.

    On a terminal it is one line redrawn in place twice a second. Elsewhere (a notebook, a
    log file) it prints a plain line after ``first`` seconds and then every ``every``
    seconds, so the output stays short; ``quiet`` turns it off. Our own few lines rather than
    tqdm: no extra dependency, and a time left that counts the network updates still to
    come. Almost all of a run's time is updates, so the rate is measured only over steps
    taken while the networks train (one update per env step), over the last ``window``
    seconds and never less than ``settle`` seconds: the steps before updates start run ~70x
    faster, and updates come in bursts of ``update_every``, so a shorter or earlier
    measurement would promise minutes for a run of hours. ``clock`` is for tests.
    """

    def __init__(self, total_steps, start_step=0, quiet=False, stream=None, first=3.0,
                 every=30.0, window=60.0, settle=5.0, clock=time.monotonic):
        self.total, self.quiet, self.clock = total_steps, quiet, clock
        self.stream = stream or sys.stdout
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.every, self.window, self.settle = (0.5 if self.tty else every), window, settle
        self.last_time, self.last_step = clock(), start_step
        self.next_time = self.last_time + (0.5 if self.tty else first)
        self.samples = []  # (time, env step) while updating, the last ``window`` seconds
        self.drawn = False

    def update(self, t, phase, last_return, updating):
        """Called every env step; does nothing until the next line is due (~100 ns).
        ``updating`` says the networks train at every step from now on."""
        now = self.clock()
        if self.quiet or now < self.next_time:
            return
        rate = (t - self.last_step) / max(now - self.last_time, 1e-9)
        left = "time left: once updates start"
        if updating:
            self.samples.append((now, t))
            while len(self.samples) > 2 and now - self.samples[1][0] >= self.window:
                self.samples.pop(0)
            since, t0 = self.samples[0]
            left = "time left: measuring"
            if now - since >= self.settle and t > t0:
                rate = (t - t0) / (now - since)
                left = f"~{format_seconds((self.total - t) / rate)} left"
        ret = "no episode ended yet" if last_return is None else f"last episode {last_return:.1f}"
        line = f"env step {t:,}/{self.total:,} | {phase} | {rate:,.0f} steps/s | {ret} | {left}"
        if self.tty:
            self.stream.write("\r\x1b[K" + line)
            self.drawn = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.last_time, self.last_step, self.next_time = now, t, now + self.every

    def clear(self):
        """Erase the redrawn line before other output (an epoch table) is printed."""
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False


class CtrlC:
    """While training, Ctrl-C sets ``requested``, which the loop checks after each step; a
    second Ctrl-C stops at once. ``close`` puts the previous handler back."""

    def __init__(self):
        self.requested, self.previous = False, None
        try:
            self.previous = signal.signal(signal.SIGINT, self._handle)
        except ValueError:  # not the main thread: leave Ctrl-C as it is
            pass

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def close(self):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
            self.previous = None
