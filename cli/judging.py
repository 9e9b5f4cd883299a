"""`tracewh judge`, `tracewh label` and `tracewh export-labels`: LLM judges and people's labels
as judgment events (docs/judging.md). Registered on the app by cli/app.py."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from .options import WarehouseOpt, open_warehouse
from .output import Format, err, plural, print_table


def judge(
    rubric: Annotated[Path, typer.Argument(help="Rubric file (YAML): name, version, targets (SQL), prompt (Jinja2), "
                                           "labels or scale, judges (provider:model). See docs/judging.md.")],
    concurrency: Annotated[int, typer.Option(min=1, max=256, help="Requests in flight at once.")] = 4,
    budget_usd: Annotated[Optional[float], typer.Option("--budget-usd", min=0, show_default=False,
                                                        help="Stop before the spend would pass this many dollars "
                                                        "(each call estimated from its prompt length and max_tokens).")] = None,
    limit: Annotated[Optional[int], typer.Option(min=0, show_default=False, help="Judge only the first N targets.")] = None,
    sample: Annotated[Optional[int], typer.Option(min=0, show_default=False,
                                                  help="Judge N targets drawn at random (an audit); see --seed.")] = None,
    seed: Annotated[int, typer.Option(help="Random seed of --sample.")] = 0,
    prices: Annotated[Optional[Path], typer.Option(help="Model price file (JSON). Default: $TRACEWH_HOME/prices.json "
                                                   "if present, else built-in prices.", show_default=False)] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="Summary format.")] = Format.table,  # noqa: A002
    warehouse: WarehouseOpt = None,
) -> None:
    """Ask LLM judges (OpenAI, Anthropic, any OpenAI-compatible endpoint) about a rubric's targets.

    Each answer is stored as a judgment event; answers already stored are never asked for
    again. Endpoints and keys: the SDKs' OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_BASE_URL,
    ANTHROPIC_API_KEY."""
    from ..ingest.prices import PriceRegistry
    from .judge_progress import JudgeProgress

    if prices is not None and not prices.exists():
        raise typer.BadParameter(f"{prices} does not exist", param_hint="--prices")
    with JudgeProgress(err.console) as progress:
        summary = open_warehouse(warehouse).judge(rubric, concurrency=concurrency, budget_usd=budget_usd, limit=limit,
                                         sample=sample, seed=seed, progress=progress,
                                         prices=PriceRegistry.load(prices))
    rows = [{"judge": t.judge, "asked": t.asked, "cached": t.cached, "invalid": t.invalid, "failed": t.failed,
             "skipped": t.skipped, "tokens": t.tokens, "cost_usd": t.cost_usd} for t in summary.tallies.values()]
    print_table(rows, format, decimals=6)
    spent = "n/a (a model has no price)" if summary.spent_usd is None else f"${summary.spent_usd:.6f}"
    err.print(f"{summary.rubric}: {plural(summary.targets, 'target')}, spent {spent}"
              + (f"; committed {plural(summary.recovered, 'answer')} a stopped run had left" if summary.recovered else "")
              + (f"; budget ${summary.budget_usd:g} reached: the rest was not asked" if summary.budget_reached else ""),
              highlight=False)
    failed = sum(t.failed for t in summary.tallies.values())
    if failed:
        err.print(f"{plural(failed, 'call')} failed after retries (first: {summary.errors[0]}); "
                  "run again to ask them", highlight=False, soft_wrap=True)
        raise typer.Exit(1)


def label(
    rubric: Annotated[Optional[str], typer.Option(help="Rubric name (with --from: for rows without one).",
                                                  show_default=False)] = None,
    target: Annotated[Optional[str], typer.Option(help="The target's id (the rubric's target_id).",
                                                  show_default=False)] = None,
    label_: Annotated[Optional[str], typer.Option("--label", help="The label.", show_default=False)] = None,
    score: Annotated[Optional[str], typer.Option(help="A score on the rubric's scale (instead of a label).",
                                                 show_default=False)] = None,
    annotator: Annotated[Optional[str], typer.Option(help="Who labels (with --from: for rows without one).",
                                                     show_default=False)] = None,
    note: Annotated[Optional[str], typer.Option(help="A note kept with the label.", show_default=False)] = None,
    from_file: Annotated[Optional[Path], typer.Option("--from", help="Labels from a CSV or JSONL file (columns "
                                                      "target_id, rubric, label or score, annotator, note).",
                                                      show_default=False)] = None,
    rubric_file: Annotated[Optional[Path], typer.Option("--rubric-file", help="Check labels against this rubric's "
                                                        "label set or scale.", show_default=False)] = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Record a person's label of a target (or many, --from FILE); a later one by the same annotator supersedes it.

    The history stays in the `judgments` view; `labels` reads the current label."""
    from ..errors import UsageError
    from ..ingest.judging.labels import LabelInput, read_label_file

    if from_file is not None:
        if target is not None or label_ is not None or score is not None or note is not None:
            raise UsageError("--from reads targets, labels and notes from the file; leave out --target, --label, "
                             "--score and --note")
        items = read_label_file(from_file, rubric, annotator)
    else:
        if rubric is None and rubric_file is not None:
            from ..ingest.judging.rubric import load_rubric

            rubric = load_rubric(rubric_file).name
        missing = [name for name, value in (("--rubric", rubric), ("--target", target), ("--annotator", annotator))
                   if value is None]
        if missing:
            raise UsageError(f"missing {', '.join(missing)} (or give --from FILE)")
        items = [LabelInput(rubric, target, annotator, label_, score, note, "tracewh label")]
    report = open_warehouse(warehouse).label(items, rubric_file=rubric_file)
    err.print(f"{plural(report.added, 'label')} added ({report.superseded} replacing an earlier one), "
              f"{report.unchanged} unchanged", highlight=False)


def export_labels(
    out: Annotated[Path, typer.Argument(help="Output file: .jsonl or .parquet.")],
    rubric: Annotated[str, typer.Option(help="The rubric whose labelled targets to export.")],
    warehouse: WarehouseOpt = None,
) -> None:
    """Write a rubric's human-labelled targets, every rater's current label and the label history (an eval set)."""
    n = open_warehouse(warehouse).export_labels(out, rubric)
    err.print(f"wrote {plural(n, 'labelled target')} to {out}", highlight=False)


queue_app = typer.Typer(help="Review queues: a rubric's targets put before people to label (docs/judging.md).",
                        no_args_is_help=True)


@queue_app.command("add")
def queue_add(
    rubric: Annotated[Path, typer.Argument(help="Rubric file (YAML): its `targets` query says what to queue.")],
    reviews: Annotated[int, typer.Option(min=1, max=100, help="Labels each item needs, by distinct annotators.")] = 1,
    warehouse: WarehouseOpt = None,
) -> None:
    """Queue the rubric's targets for labelling; a target already queued (with the same --reviews) is one item."""
    report = open_warehouse(warehouse).queue_add(rubric, reviews=reviews)
    err.print(f"{report.rubric}: {plural(report.targets, 'target')}, {report.added} queued, "
              f"{report.already} already in the queue", highlight=False)


@queue_app.command("status")
def queue_status(
    rubric: Annotated[Optional[str], typer.Argument(help="The rubric (default: every queue).", show_default=False)] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,  # noqa: A002
    warehouse: WarehouseOpt = None,
) -> None:
    """Each queue's items and done items, and per annotator what they labelled and what is left for them."""
    from ..ingest.judging.queue import progress

    rows = progress(open_warehouse(warehouse), rubric)
    if not rows:
        err.print(f"{rubric or 'review queues'}: nobody has labelled a queued item yet", highlight=False)
        return
    print_table(rows, format)


@queue_app.command("next")
def queue_next(
    rubric: Annotated[str, typer.Argument(help="The rubric.")],
    annotator: Annotated[str, typer.Option(help="Who labels.")],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,  # noqa: A002
    warehouse: WarehouseOpt = None,
) -> None:
    """The next item for this annotator: not done, not labelled by them, in the queue's order."""
    item = open_warehouse(warehouse).next_item(rubric, annotator)
    if item is None:
        err.print(f"{rubric}: nothing left for {annotator}", highlight=False)
        return
    print_table([{k: item[k] for k in ("rubric", "target_id", "run_id", "task_id", "reviews", "labels")}], format)
