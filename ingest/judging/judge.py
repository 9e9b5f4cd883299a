"""`tracewh judge`: a rubric's targets -> prompts -> cached or asked -> events -> commits.

The order matters: everything that can be wrong with the rubric is found before anything is
written or asked (the targets query, every prompt rendered); then what a crashed run left in
its spool is committed; then only answers the store lacks are asked for, once the clients of
the judges that have something to answer are made (a missing key stops the run there). Each answer is on disk (spool.py) before it counts, and answers are committed in
groups through the ingest pipeline (the quality gate, the atomic commit, the ledger), as
native-format lines.

Budget: each call is estimated before it is made, as (system + prompt characters) / 3 input
tokens, more than English text takes, plus the rubric's max_tokens output, at the judge's
price; the estimate is reserved while the call is in flight, and no call starts whose
estimate would take what is spent and reserved past the budget.
"""

from __future__ import annotations

import random
import shutil
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import QueryError, UsageError
from ...schema.native import header
from ..prices import PriceRegistry
from .answers import read_answer
from .events import answer_key, judge_events, judge_run_id
from .prompts import Prompt, instruction
from .providers import CallFailed, Reply, connect
from .rubric import Judge, Rubric, load_rubric
from .spool import AnswerSpool, orphans

if TYPE_CHECKING:
    from .access import WarehouseAccess

COMMIT_EVERY = 200  # answers
COMMIT_AFTER_S = 2.0
CHARS_PER_TOKEN_ESTIMATE = 3


@dataclass
class JudgeTally:
    """What one judge did in a run."""

    judge: str
    asked: int = 0  # calls answered in this run
    cached: int = 0  # answers already stored: not asked again
    invalid: int = 0  # answers outside the label set or scale, or not JSON (stored as invalid)
    failed: int = 0  # calls that failed after the SDK's retries (not stored: a later run asks again)
    skipped: int = 0  # not asked: the budget was reached, or the run stopped
    tokens: int = 0
    cost_usd: float | None = 0.0  # None once any answer's cost is unknown
    unpriced: int = 0


@dataclass
class JudgeSummary:
    rubric: str
    targets: int
    tallies: dict[str, JudgeTally]
    recovered: int = 0  # answers a crashed run left in its spool, committed first
    budget_usd: float | None = None
    budget_reached: bool = False
    errors: list[str] = field(default_factory=list)  # the first few failed calls

    @property
    def spent_usd(self) -> float | None:
        costs = [t.cost_usd for t in self.tallies.values()]
        return None if any(c is None for c in costs) else sum(costs)


class JudgeListener:
    """What a progress display hears (the CLI's draws a bar); all no-ops here."""

    def start(self, calls: int, cached: int) -> None: ...

    def answered(self, tally: JudgeTally, tokens: int, cost: float | None) -> None: ...

    def finish(self) -> None: ...


@dataclass
class Work:
    judge: Judge
    target: dict[str, Any]
    prompt: str
    key: str
    estimate: float = 0.0


def judge(wh: WarehouseAccess, rubric_file: str | Path, *, concurrency: int = 4, budget_usd: float | None = None,
          limit: int | None = None, sample: int | None = None, seed: int = 0,
          listener: JudgeListener | None = None, prices: PriceRegistry | None = None) -> JudgeSummary:
    listener = listener or JudgeListener()
    prices = prices or PriceRegistry.load()
    rubric = load_rubric(rubric_file)
    targets, columns = _targets(wh, rubric)
    targets = _chosen(targets, limit, sample, seed)
    prompt = Prompt(rubric, columns)
    prompts = [prompt.render(t) for t in targets]  # the first bad one stops us before any call
    if budget_usd is not None:
        _require_prices(rubric, prices)
    summary = JudgeSummary(rubric.name, len(targets), {j.rater: JudgeTally(j.rater) for j in rubric.judges},
                           budget_usd=budget_usd)
    summary.recovered = _recover(wh, rubric)
    stored = _stored_keys(wh, rubric)
    work = []
    for j in rubric.judges:
        for target, text in zip(targets, prompts):
            key = answer_key(rubric, j, str(target["target_id"]), text)
            if key in stored:
                summary.tallies[j.rater].cached += 1
            else:
                work.append(Work(j, target, text, key, _estimate(rubric, j, text, prices)))
    # Clients only when there is something to ask: importing the SDKs takes longer than a
    # rerun over 10,000 stored answers (a missing key is still refused before any call).
    clients = {j: connect(j, rubric) for j in {item.judge for item in work}}
    listener.start(len(work), sum(t.cached for t in summary.tallies.values()))
    try:
        _ask(wh, rubric, work, clients, summary, concurrency, listener, prices)
    finally:
        listener.finish()
    return summary


def _targets(wh: WarehouseAccess, rubric: Rubric) -> tuple[list[dict[str, Any]], list[str]]:
    """The target query's rows, through the same guard and limits as `tracewh sql`."""
    try:
        table = wh.query(rubric.targets).arrow()
    except QueryError as e:
        raise rubric.error("targets", f"the query failed: {' '.join(str(e).split())}") from None
    columns = list(table.column_names)
    if "target_id" not in columns:
        raise rubric.error("targets", f"the query must return a `target_id` column (it returns {', '.join(columns)})")
    rows = table.to_pylist()
    seen: set[str] = set()
    for row in rows:
        if row["target_id"] is None:
            raise rubric.error("targets", "the query returned a NULL target_id")
        target_id = str(row["target_id"])
        if target_id in seen:
            raise rubric.error("targets", f"target_id {target_id!r} is returned more than once; target ids must be unique")
        seen.add(target_id)
    return rows, columns


def _chosen(targets: list[dict[str, Any]], limit: int | None, sample: int | None, seed: int) -> list[dict[str, Any]]:
    """`--sample N --seed S`: N targets drawn at random, the same N for the same seed and
    targets; `--limit N`: the first N (after sampling, if both are given)."""
    if sample is not None and sample < len(targets):
        ordered = sorted(targets, key=lambda t: str(t["target_id"]))
        targets = random.Random(seed).sample(ordered, sample)
    return targets[:limit] if limit is not None else targets


def _require_prices(rubric: Rubric, prices: PriceRegistry) -> None:
    for j in rubric.judges:
        if prices.lookup(j.model) is None:
            raise UsageError(f"{rubric.file}: --budget-usd needs a price for judge {j.rater}; add the model to "
                             f"$TRACEWH_HOME/prices.json or pass --prices FILE")


def _estimate(rubric: Rubric, j: Judge, prompt: str, prices: PriceRegistry) -> float:
    prompt_tokens = (len(instruction(rubric)) + len(prompt)) // CHARS_PER_TOKEN_ESTIMATE + 16
    return prices.cost(j.model, prompt_tokens, rubric.max_tokens) or 0.0


def _commit(wh: WarehouseAccess, rubric: Rubric, lines: list[tuple[int, bytes]]) -> None:
    """Event lines as one batch through the ingest pipeline (in seq order: the gate checks it)."""
    if not lines:
        return
    from ..pipeline import ingest_memory

    data = header(generator="tracewh judge") + b"".join(line for _, line in sorted(lines))
    ingest_memory(wh.store, f"tracewh judge {rubric.file}", f"{judge_run_id(rubric.name)}.jsonl", data)
    wh.close()  # the next query sees the commit


def _recover(wh: WarehouseAccess, rubric: Rubric) -> int:
    """Commit what runs killed before their commit left in their spools; how many answers."""
    from ..pipeline import ingest_memory

    recovered = 0
    for folder, lines in orphans(wh.path):
        if lines:
            ingest_memory(wh.store, f"tracewh judge (recovered spool {folder.name})",
                          f"{judge_run_id(rubric.name)}-recovered.jsonl", header(generator="tracewh judge") + lines)
            wh.close()
            recovered += lines.count(b'"kind":"judgment"')
        shutil.rmtree(folder, ignore_errors=True)
    return recovered


def _stored_keys(wh: WarehouseAccess, rubric: Rubric) -> set[str]:
    if not wh.exists():
        return set()
    rows = wh.sql("select payload ->> '$.key' from judgments where rubric = $1 and rater_kind = 'llm' "
                  "and payload ->> '$.key' is not null", [rubric.name]).fetchall()
    return {key for (key,) in rows}


def _ask(wh: WarehouseAccess, rubric: Rubric, work: list[Work], clients: dict[Judge, Any], summary: JudgeSummary,
         concurrency: int, listener: JudgeListener, prices: PriceRegistry) -> None:
    """Ask for every answer in `work`, `concurrency` at a time; spool each, commit in groups."""
    spool = AnswerSpool(wh.path, judge_run_id(rubric.name))
    pending: list[tuple[int, bytes]] = []
    last_commit = time.monotonic()
    queue = iter(work)
    in_flight: dict[Future[Reply], Work] = {}
    reserved = 0.0
    fatal: CallFailed | None = None
    committed = False
    # Commits run beside the asking, one at a time: a commit takes a second at scale, in which this
    # thread would otherwise leave finished calls unread and their slots unfilled (answers are in the
    # spool before they count, so nothing waits on a commit but the end of the run).
    committer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-commit")
    committing: Future[None] | None = None
    try:
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="judge") as pool:
            def fill() -> None:
                nonlocal reserved
                while len(in_flight) < concurrency and fatal is None and not summary.budget_reached:
                    item = next(queue, None)
                    if item is None:
                        return
                    if summary.budget_usd is not None and \
                            (summary.spent_usd or 0.0) + reserved + item.estimate > summary.budget_usd:
                        summary.budget_reached = True
                        summary.tallies[item.judge.rater].skipped += 1
                        return
                    reserved += item.estimate
                    in_flight[pool.submit(clients[item.judge].ask, item.prompt)] = item

            fill()
            while in_flight:
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                answered = []
                for future in done:
                    item = in_flight.pop(future)
                    try:
                        answered.append((item, future.result()))
                    except CallFailed as e:
                        reserved -= item.estimate
                        fatal = fatal or (e if e.fatal else None)
                        _failed(summary, item, e)
                fill()  # the freed slots ask again before this thread writes (answers stay reserved till counted)
                events = [(item, reply, judge_events(rubric, item.judge, item.target, item.key, reply,
                                                     read_answer(reply.text, rubric), prices))
                          for item, reply in answered]
                spool.write_answer([line for *_, lines in events for _, line in lines])  # on disk before they count
                for item, reply, lines in events:
                    pending.extend(lines)
                    _count(summary.tallies[item.judge.rater], reply, lines, listener)
                    reserved -= item.estimate
                due = len(pending) >= 2 * COMMIT_EVERY or (pending and time.monotonic() - last_commit >= COMMIT_AFTER_S)
                if due and (committing is None or committing.done()):
                    if committing is not None:
                        committing.result()  # a commit that failed stops the run here
                    committing = committer.submit(_commit, wh, rubric, pending)  # two lines an answer
                    pending, last_commit = [], time.monotonic()
                fill()
        for item in queue:  # what the budget or a fatal error left unasked
            summary.tallies[item.judge.rater].skipped += 1
        if committing is not None:
            committing.result()
        _commit(wh, rubric, pending)
        committed = True
    finally:
        committer.shutdown(wait=True)
        spool.close(committed)
    if fatal is not None:
        raise UsageError(f"{rubric.file}: stopped: {fatal}")


def _failed(summary: JudgeSummary, item: Work, error: CallFailed) -> None:
    summary.tallies[item.judge.rater].failed += 1
    if len(summary.errors) < 5:
        summary.errors.append(str(error))


def _count(tally: JudgeTally, reply: Reply, lines: list[tuple[int, bytes]], listener: JudgeListener) -> None:
    import orjson

    judgment = orjson.loads(lines[-1][1])
    tally.asked += 1
    tally.invalid += judgment["payload"].get("valid") is False
    tokens = (reply.prompt_tokens or 0) + (reply.completion_tokens or 0)
    tally.tokens += tokens
    cost = judgment.get("cost_usd")
    if cost is None:
        tally.unpriced += 1
        tally.cost_usd = None
    elif tally.cost_usd is not None:
        tally.cost_usd += cost
    listener.answered(tally, tokens, cost)
