"""The one place CLI errors become exit codes: 2 for usage and bad input, 1 for the rest.

A user sees one line on stderr, never a traceback or a box: tracewh's errors carry their message
and exit code (errors.py); the argument parser's usage errors (an unknown option, a missing
argument) are given the same one line, with where to look; anything else is an internal error,
reported as such.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

from typer import Abort
from typer._click.exceptions import ClickException, NoArgsIsHelpError, NoSuchOption

from ..errors import TracewhError
from . import collector
from .output import err

INTERNAL = 1
INTERRUPTED = 130  # the shell's code for a process ended by Ctrl-C


def run_app(app: Any) -> None:
    # SIGTERM (a job scheduler, `timeout`) ends the process through SystemExit, so staging
    # folders and temporary files are cleaned up on the way out like on Ctrl-C.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        # Not standalone: the parser raises its errors here instead of printing its own
        # multi-line box, and returns the exit code of --help, --version and typer.Exit.
        with collector.for_the_process():
            code = app(standalone_mode=False)
    except TracewhError as e:
        _fail("error", e, e.exit_code)
    except NoArgsIsHelpError as e:  # `tracewh` alone: the help was printed, as the usage error
        sys.exit(e.exit_code)
    except ClickException as e:
        _fail("error", _usage(e), e.exit_code)
    except Abort:
        _fail("aborted", "interrupted", INTERRUPTED)
    except Exception as e:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        _fail("internal error", f"{type(e).__name__}: {e} (please report this)", INTERNAL)
    sys.exit(code if isinstance(code, int) else 0)


def _usage(error: ClickException) -> str:
    """The parser's message on one line, and what to do about it."""
    message = " ".join(error.format_message().split())
    context = getattr(error, "ctx", None)
    hint = f"see `{context.command_path} --help`" if context is not None else "see `tracewh --help`"
    if isinstance(error, NoSuchOption):  # often a query that starts with a `--` comment
        hint += "; a value that starts with '-' goes after `--`, as in tracewh sql -- '-- note' ..."
    return f"{message} ({hint})"


def _fail(label: str, error: object, code: int) -> None:
    from rich.markup import escape

    err.print(f"[red]{label}:[/red] {escape(str(error))}", highlight=False)
    sys.exit(code)
