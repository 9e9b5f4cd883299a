"""The judge's progress bar: calls, tokens, dollars and time left, on the terminal only."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ..ingest.judging.judge import JudgeListener, JudgeTally


class JudgeProgress(JudgeListener):
    def __init__(self, console: Console):
        self.progress = Progress(TextColumn("judging"), BarColumn(), MofNCompleteColumn(), TextColumn("calls"),
                                 TextColumn("{task.fields[tokens]:,} tokens  {task.fields[dollars]}"),
                                 TimeRemainingColumn(), console=console, transient=True,
                                 disable=not console.is_terminal)
        self.task = None
        self.tokens, self.dollars, self.unpriced = 0, 0.0, 0

    def __enter__(self) -> JudgeProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def start(self, calls: int, cached: int) -> None:
        self.task = self.progress.add_task("judging", total=calls, tokens=0, dollars="$0")
        if cached:
            self.progress.console.print(f"{cached} answers already stored: not asked again", highlight=False)

    def answered(self, tally: JudgeTally, tokens: int, cost: float | None) -> None:
        self.tokens += tokens
        if cost is None:
            self.unpriced += 1
        else:
            self.dollars += cost
        dollars = f"${self.dollars:.4f}" + (f" (+{self.unpriced} unpriced)" if self.unpriced else "")
        if self.task is not None:
            self.progress.update(self.task, advance=1, tokens=self.tokens, dollars=dollars)
