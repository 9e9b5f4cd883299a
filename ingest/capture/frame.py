"""Where new events hang: the task, span and acting agent of the code running now.

Nesting lives in a ContextVar, so asyncio tasks inherit it and threads do when run with
`contextvars.copy_context().run(...)`; code with no frame records at run level.
"""

from __future__ import annotations

import random
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


@dataclass
class Frame:
    """Task, span, acting agent and delegation depth of one level of nesting."""

    owner: Any  # the RunLog whose frame this is (a frame of another recording is ignored)
    task_id: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    agent: str = "orchestrator"
    depth: int = 0
    steps: list[int] = field(default_factory=lambda: [0])  # orchestrator steps of the task, shared by children


CURRENT: ContextVar[Frame | None] = ContextVar("tracewh_frame", default=None)


def new_span() -> str:
    # random.getrandbits: a fraction of uuid4's cost on the per-call path; CPython reseeds it after fork.
    return f"{random.getrandbits(64):016x}"


def new_id() -> str:
    return f"{random.getrandbits(128):032x}"


def now() -> datetime:
    return datetime.now(timezone.utc)
