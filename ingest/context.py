"""What an adapter may know about the batch it is reading for."""

from __future__ import annotations

from dataclasses import dataclass, field

from .jsonlines import Progress, no_progress
from .prices import PriceRegistry
from .sources import Limits


@dataclass
class AdapterContext:
    limits: Limits = field(default_factory=Limits)
    attrs: dict[str, str] = field(default_factory=dict)  # from `ingest --attr key=value`
    progress: Progress = no_progress  # stored bytes consumed
    prices: PriceRegistry = field(default_factory=PriceRegistry)  # cost where a log has none
    check: bool = True  # run the data-quality gate before commit
    quarantine: bool = False  # hold failing events instead of refusing the batch
