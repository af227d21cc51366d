"""The one user-error type, and how every script reports it: a user's mistake is one line on
stderr and exit 2, never a traceback; Ctrl-C is exit 130 after the checkpoint was written.

The bottom of the run package: it imports nothing of the project.
"""
import argparse
import signal
import sys
import threading


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
    """Run a script's ``main()`` and exit with what it returns: UserError (and numpy's
    MemoryError for an array larger than the machine, a size asked for) is one line and exit
    2, Ctrl-C exit 130 (after a checkpoint, Interrupted's message says where it is).

    Ctrl-C is taken whatever the script inherited: a command started in the background of
    a shell script (``cmd &``), and everything it starts, inherits SIGINT ignored, and
    Python then never raises KeyboardInterrupt, so a SIGINT would be lost."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        sys.exit(main())
    except (UserError, MemoryError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt as e:  # Interrupted says where the checkpoint is
        if str(e):
            print(e, file=sys.stderr, flush=True)
        sys.exit(130)
