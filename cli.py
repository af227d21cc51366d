"""What every script's command line shares: the one user-error type, its one-line report
and exit codes, and the argument parser that reports usage mistakes the same way.

No torch here, so that plot.py and diagnose.py start fast.
"""
import argparse
import sys


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
    exit 2, Ctrl-C exit 130 (after a checkpoint, Interrupted's message says where it is)."""
    try:
        sys.exit(main())
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt as e:  # Interrupted says where the checkpoint is
        if str(e):
            print(e, file=sys.stderr, flush=True)
        sys.exit(130)
