"""Options several commands share, and how a command opens the store: kept apart from app.py so
that command modules (judging.py, compare.py) need not import the app that registers them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from .output import Format

if TYPE_CHECKING:
    from ..api import Warehouse

WarehouseOpt = Annotated[
    Optional[Path],
    typer.Option("--warehouse", "-w", help="Store directory. Default: $TRACEWH_HOME/warehouse, ~/.tracewh/warehouse.",
                 show_default=False),
]
AsOfOpt = Annotated[Optional[int], typer.Option("--as-of", help="Query the store as it was at this version (see `tracewh log`).")]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
DecimalsOpt = Annotated[Optional[int], typer.Option(min=0, show_default=False,
                                                    help="Decimals shown for floats in table and markdown output "
                                                    "(default 4; csv and json print exact values).")]
DialectOpt = Annotated[str, typer.Option(help="SQL dialect the query is written in (postgres, mysql, sqlite, spark, "
                                              "trino, bigquery, snowflake, ...); it is transpiled to DuckDB.")]


def open_warehouse(warehouse: Path | None, version: int | None = None) -> Warehouse:
    from ..api import Warehouse

    return Warehouse(warehouse, version)


BaselineOpt = Annotated[str, typer.Option(help="Condition the others are compared with.")]
BootOpt = Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples.", min=100)]
SeedOpt = Annotated[int, typer.Option(help="Random seed (results are reproducible).")]
