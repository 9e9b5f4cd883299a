"""`tracewh compare`: a paired comparison of two conditions on any numeric column of a view
(docs/compare.md). Registered on the app by cli/app.py."""

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from ..analytics import text
from .options import AsOfOpt, BootOpt, DecimalsOpt, SeedOpt, WarehouseOpt, open_warehouse
from .output import Format, err, print_table

if TYPE_CHECKING:
    from ..analytics.compare import Comparison


def compare(
    target: Annotated[str, typer.Argument(metavar="VIEW.COLUMN", help="A numeric column of a view, e.g. dcb_tasks.quality.")],
    by: Annotated[str, typer.Option(help="The column whose values tell the two groups apart, e.g. condition.")],
    a: Annotated[str, typer.Option("--a", help="The value of --by for group a (the baseline).")],
    b: Annotated[str, typer.Option("--b", help="The value of --by for group b; differences are b - a.")],
    match: Annotated[str, typer.Option(help="Columns that pair an item of a with one of b, comma-separated; rows "
                                       "of a group sharing a key are averaged first.")] = "task_id",
    where: Annotated[Optional[str], typer.Option(help="Filter rows first (SQL), e.g. \"model = 'gpt-5.4'\".",
                                                 show_default=False)] = None,
    n_boot: BootOpt = 5000,
    seed: SeedOpt = 0,
    rng_key: Annotated[list[str], typer.Option("--rng-key", help="Values naming the random stream, before b and a "
                                               "(repeatable): --rng-key MODEL --rng-key SUITE draws what `tracewh stats "
                                               "delta` draws for that cell.")] = [],  # noqa: B006
    plot: Annotated[Optional[Path], typer.Option(help="Also draw the pairs and their differences (.png, .pdf, .svg).",
                                                 show_default=False)] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,  # noqa: A002
    decimals: DecimalsOpt = None,
    as_of: AsOfOpt = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Compare a numeric column of a view between two groups of rows, paired item by item (docs/compare.md).

    Means, the mean difference b - a with a paired bootstrap 95% CI, win/tie/loss, an exact sign
    test (McNemar for 0/1 scores), the unmatched items and the items that changed most."""
    result = open_warehouse(warehouse, as_of).compare(target, by=by, a=a, b=b, match=[m.strip() for m in match.split(",")],
                                             where=where, n_boot=n_boot, seed=seed, rng_key=rng_key, plot=plot)
    if format is Format.json:
        sys.stdout.write(json.dumps(text.json_value(result.to_dict()), ensure_ascii=False) + "\n")
    elif format is Format.csv:  # one row of exact numbers; the lists are in -f json
        print_table([_summary_row(result)], format)
    else:
        _print_report(result, format, text.DECIMALS if decimals is None else decimals)
    if plot is not None:
        err.print(f"wrote {plot}", highlight=False)


def _summary_row(result: "Comparison") -> dict[str, Any]:
    return {k: v for k, v in result.to_dict().items() if k not in ("unmatched", "changed")} | {
        "match": ",".join(result.match)}


def _print_report(result: "Comparison", fmt: Format, decimals: int) -> None:
    """The summary a paper quotes (rounded), then the unmatched items and those that changed most."""
    def num(value: float) -> str:
        shown = f"{value:.{decimals}f}"
        return shown.lstrip("-") if float(shown) == 0 else shown  # a bound of -1e-17 reads 0.0000, not -0.0000

    p = "n/a (every pair tied)" if result.p_value is None else f"{result.p_value:.4g}"
    summary = [
        ("compared", f"{result.view}.{result.column}: {result.by} = {result.b} (b) vs {result.a} (a)"),
        ("matched on", ", ".join(result.match)),
        ("pairs", str(result.n_pairs)),
        ("unmatched", f"{result.unmatched_a} only in a, {result.unmatched_b} only in b"),
        ("mean a", num(result.mean_a)),
        ("mean b", num(result.mean_b)),
        ("diff b - a", f"{num(result.diff)} [{num(result.ci_low)}, {num(result.ci_high)}] {result.level:.0%} CI"),
        ("wins / ties / losses", f"{result.wins} / {result.ties} / {result.losses} (win: b > a)"),
        (f"p ({'exact McNemar' if result.test == 'mcnemar' else 'exact sign test'})", p),
    ]
    print_table([{"statistic": k, "value": v} for k, v in summary], fmt)
    for title, rows in ((f"Unmatched items ({len(result.unmatched)})", result.unmatched),
                        (f"Most changed (top {len(result.changed)} by |b - a|)", result.changed)):
        if rows:
            sys.stdout.write(f"\n{title}\n")
            print_table([{k: ", ".join(v) if isinstance(v, list) else v for k, v in row.items()} for row in rows],
                        fmt, decimals)
