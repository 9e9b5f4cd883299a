"""`tracewh release DIR`: runs of the store as a dataset folder to publish (docs/release.md).
Registered on the app by cli/app.py."""

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .options import AsOfOpt, WarehouseOpt, open_warehouse
from .output import err, plural


def release(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="The folder to write (new, empty, or a previous release "
                                        "with --overwrite).")],
    run: Annotated[list[str], typer.Option("--run", help="Release this run (repeatable). Default: every run.")] = [],  # noqa: B006
    where: Annotated[Optional[str], typer.Option(help="Release the runs matching this filter over the `runs` view, "
                                                 "e.g. \"benchmark = 'decisionbench' and model = 'gpt-5.4'\".",
                                                 show_default=False)] = None,
    view: Annotated[list[str], typer.Option("--view", help="Also write this view's rows, computed from the released "
                                            "events, under views/NAME/ (repeatable).")] = [],  # noqa: B006
    no_content: Annotated[bool, typer.Option("--no-content", help="Drop message text, prompts, responses, tool "
                                             "arguments and results (as live capture does without content).")] = False,
    allow: Annotated[list[str], typer.Option("--allow", help="Let the secret scan pass a value it finds: the value, "
                                             "a detector's name (email, openai-key, ...) or a regular expression "
                                             "matching the whole value (repeatable).")] = [],  # noqa: B006
    license: Annotated[str, typer.Option("--license", help="Licence identifier for the card, as the Hugging Face "
                                         "Hub lists them (cc-by-4.0, mit, ...). Default: other, named unspecified.")] = "other",  # noqa: A002
    title: Annotated[Optional[str], typer.Option(help="The dataset's name on its card. Default: from its benchmarks.",
                                                 show_default=False)] = None,
    description: Annotated[Optional[str], typer.Option(help="One paragraph for the card and croissant.json.",
                                                       show_default=False)] = None,
    citation: Annotated[Optional[str], typer.Option(help="How to cite the dataset (BibTeX or a sentence), for the card "
                                                    "and croissant.json.", show_default=False)] = None,
    shard_rows: Annotated[int, typer.Option(min=1, help="Most rows in one Parquet file.")] = 200_000,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace DIR if it holds a previous release.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was written as one JSON object.")] = False,
    as_of: AsOfOpt = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Write runs as a dataset to publish: Parquet shards, a dataset card (README.md) and croissant.json.

    Scans what it would write for secrets (API-key shapes, e-mail addresses) and writes nothing
    when it finds any that --allow does not name (exit 2). `tracewh ingest DIR` reads it back."""
    result = open_warehouse(warehouse, as_of).release(out, runs=run, where=where, views=view, no_content=no_content,
                                                      allow=allow, license=license, title=title,
                                                      description=description, citation=citation, shard_rows=shard_rows,
                                                      overwrite=overwrite)
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict()) + "\n")
    views = "".join(f", {v} ({plural(n, 'row')})" for v, n in result.views.items())
    err.print(f"wrote {plural(result.events, 'event')} of {plural(result.runs, 'run')} in "
              f"{plural(len(result.shards), 'shard')}{views} to {result.path}"
              f"{' without content' if result.no_content else ''}; content digest {result.content_digest[:16]}",
              highlight=False, soft_wrap=True)
