"""The one place CLI errors become exit codes: 2 for usage and bad input, 1 for the rest.

A user sees one line on stderr, never a traceback: tracewh's errors carry their message and
exit code (errors.py); anything else is an internal error, reported as such.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

from ..errors import TracewhError
from .output import err

INTERNAL = 1


def run_app(app: Any) -> None:
    # SIGTERM (a job scheduler, `timeout`) ends the process through SystemExit, so staging
    # folders and temporary files are cleaned up on the way out like on Ctrl-C.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        app()
    except TracewhError as e:
        _fail("error", e, e.exit_code)
    except Exception as e:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        _fail("internal error", f"{type(e).__name__}: {e} (please report this)", INTERNAL)


def _fail(label: str, error: object, code: int) -> None:
    from rich.markup import escape

    err.print(f"[red]{label}:[/red] {escape(str(error))}", highlight=False, soft_wrap=True)
    sys.exit(code)
