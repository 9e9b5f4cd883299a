"""The compare page: a numeric column of a view between two groups of its rows, paired item by
item (Warehouse.compare, docs/compare.md), and the two traces of one pair side by side.

GET only: the page only reads, and its query string holds the whole question, so the address
of a result can be pasted into a paper draft or sent to a co-author and shows the same numbers.
A form round trip fills the choices step by step: the views with a numeric column, then that
view's numeric columns, its columns for `by` and `match`, then the values `by` takes (under
`where`) for the two groups. The comparison runs once view, column, by, a and b are all given.

Everything is computed by Warehouse.compare inside the service's `reading` (its gate, its
sandboxed read of the store), with the service's query time limit. A bad question (an unknown
column, a group with no rows, a refused filter) is shown beside the form with the service's
status and words (errors.py `request.state.error_page`), as the SQL editor shows its errors.
"""

from __future__ import annotations

import base64
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ...analytics.compare import is_numeric, plot_pairs, ranked_items
from ...errors import NotFoundError, UsageError
from ..config import ServiceConfig
from ..gate import Reading
from .figures import drawing_lock
from .render import cell, page, url
from .trace_rows import BAR_WIDTH, trace_rows

if TYPE_CHECKING:
    from ...analytics.compare import Comparison
    from ...api import ViewInfo, Warehouse

PATH = "/ui/compare"
PAIR_PATH = "/ui/compare/pair"
DEFAULT_MATCH = "task_id"
DEFAULT_BOOT, MIN_BOOT, MAX_BOOT = 5000, 100, 20_000  # the CLI's default and floor; a ceiling bounds a request's CPU
PAIR_BOOT = 100  # the pair page needs the pairs, not the interval: the fewest resamples compare takes
MAX_VALUES = 500  # choices offered for a and b; past that, typed with suggestions
ITEMS_STEP = 100  # items shown at first, and added by "show more"
TRACE_ROWS_SHOWN = 300  # per trace on the side-by-side page; the whole trace is on its own page
MAX_LIKENESS_PAIRS = 40_000  # trace pairs weighed for the default side-by-side pair
KEY_PREFIX = "k."  # the pair page's item key: k.<column>=<value> (plain names could clash with the question's)
SUMMARY = ("n_pairs", "unmatched_a", "unmatched_b", "mean_a", "mean_b", "diff", "ci_low", "ci_high", "wins", "ties",
           "losses", "p_value")


@dataclass
class Question:
    """The comparison the query string asks for, as typed (numbers as text until checked)."""

    view: str = ""
    column: str = ""
    by: str = ""
    a: str = ""
    b: str = ""
    match: list[str] = field(default_factory=list)  # empty: the default (task_id, when the view has it)
    where: str = ""
    n_boot: str = str(DEFAULT_BOOT)
    seed: str = "0"

    @classmethod
    def of(cls, request: Request) -> Question:
        params = request.query_params
        return cls(view=params.get("view", ""), column=params.get("column", ""), by=params.get("by", ""),
                   a=params.get("a", ""), b=params.get("b", ""),
                   match=[m for m in params.getlist("match") if m.strip()], where=params.get("where", "").strip(),
                   n_boot=params.get("n_boot", "").strip() or str(DEFAULT_BOOT), seed=params.get("seed", "").strip() or "0")

    @property
    def complete(self) -> bool:
        return all((self.view, self.column, self.by, self.a, self.b))

    def state(self) -> list[tuple[str, str]]:
        """The query string of this question (empty values left out by `url`)."""
        return [("view", self.view), ("column", self.column), ("by", self.by), ("a", self.a), ("b", self.b),
                *(("match", m) for m in self.match), ("where", self.where), ("n_boot", self.n_boot), ("seed", self.seed)]


def compare_routes(router: APIRouter, config: ServiceConfig, reading: Reading) -> None:
    limits = {"timeout_s": config.query_seconds}

    @router.get(PATH)
    async def compare_page(request: Request) -> Response:
        ask = Question.of(request)
        context = _blank(ask)
        request.state.error_page = ("compare.html", context)  # filled as the work goes: an error keeps the form
        shown = _count(request.query_params.get("rows", ""), "rows", ITEMS_STEP, ITEMS_STEP, None)

        def work(wh: Warehouse) -> Comparison | None:
            info = _choices(wh, ask, context, limits)
            if not ask.complete:
                return None
            return wh.compare(f"{ask.view}.{ask.column}", by=ask.by, a=ask.a, b=ask.b, match=_match(ask, info),
                              where=ask.where or None, n_boot=_boot(ask), seed=_seed(ask), **limits)

        result = await reading(work)
        if result is not None:
            context |= _result(ask, result, shown)
            context["figure"] = await run_in_threadpool(_figure, result)
        return page(request, "compare.html", **context)

    @router.get(PAIR_PATH)
    async def pair_page(request: Request) -> Response:
        ask = Question.of(request)
        key = {k[len(KEY_PREFIX):]: v for k, v in request.query_params.items() if k.startswith(KEY_PREFIX)}
        params = request.query_params

        def work(wh: Warehouse) -> Response:
            if not ask.complete:
                raise UsageError("choose view, column, by, a and b first: this page shows one pair of a comparison")
            info = _view(wh, ask.view)
            result = wh.compare(f"{ask.view}.{ask.column}", by=ask.by, a=ask.a, b=ask.b, match=_match(ask, info),
                                where=ask.where or None, n_boot=PAIR_BOOT, seed=_seed(ask), **limits)
            item = _find(result, key)
            if "traces_a" not in item:
                raise UsageError(f"{ask.view} has no run_id and task_id: its items have no traces to open")
            shown_a, shown_b = _shown_traces(item["traces_a"], item["traces_b"], params.get("ta", ""), params.get("tb", ""))
            sides = [_side(wh, ask, "a", item["traces_a"], shown_a, config, limits),
                     _side(wh, ask, "b", item["traces_b"], shown_b, config, limits)]
            return page(request, "compare_pair.html", section="compare", ask=ask, key=key, item=item, sides=sides,
                        back=url(PATH, ask.state()), here=PAIR_PATH, state=ask.state(),
                        key_state=[(KEY_PREFIX + k, v) for k, v in key.items()])

        return await reading(work)


def compare_link(view: ViewInfo) -> str | None:
    """The compare page for `view`, when it has a numeric column to compare (its view page links it)."""
    return url(PATH, view=view.name) if any(is_numeric(t) for _, t in view.columns) else None


# -- the form's choices ------------------------------------------------------------------------

def _blank(ask: Question) -> dict[str, Any]:
    """Every name compare.html uses, before anything is known (an error page shows the form so far)."""
    return {"section": "compare", "ask": ask, "views": [], "info": None, "numeric": [], "columns": [], "match": [],
            "values": None, "values_cut": False, "result": None, "share": url(PATH, ask.state()), "min_boot": MIN_BOOT,
            "max_boot": MAX_BOOT}


def _choices(wh: Warehouse, ask: Question, context: dict[str, Any], limits: dict[str, Any]) -> ViewInfo | None:
    """Fill the form's choices as far as the question goes; the view chosen, if any."""
    views = [v for v in wh.views() if any(is_numeric(t) for _, t in v.columns)]
    context["views"] = [(v.name, v.description) for v in views]
    if not ask.view:
        return None
    info = _view(wh, ask.view, views)
    names = [n for n, _ in info.columns]
    context |= {"info": info, "numeric": [n for n, t in info.columns if is_numeric(t)], "columns": names,
                "match": _match(ask, info)}
    if ask.by:
        if ask.by not in names:
            raise UsageError(f"by: {ask.view} has no column {ask.by!r}; its columns: {', '.join(names)}")
        context["values"], context["values_cut"] = _values(wh, ask, limits)
    _boot(ask), _seed(ask)  # a bad number is said before anything is computed
    return info


def _view(wh: Warehouse, name: str, views: list[ViewInfo] | None = None) -> ViewInfo:
    found = next((v for v in views if v.name == name), None) if views is not None else \
        next((v for v in wh.views() if v.name == name), None)
    if found is None:
        raise UsageError(f"view: no view named {name!r} with a numeric column; the page's list names them")
    return found


def _match(ask: Question, info: ViewInfo | None) -> list[str]:
    """The match columns asked for, else task_id when the view has it (the CLI's default)."""
    if ask.match:
        return ask.match
    return [DEFAULT_MATCH] if info is not None and DEFAULT_MATCH in [n for n, _ in info.columns] else []


def _values(wh: Warehouse, ask: Question, limits: dict[str, Any]) -> tuple[list[str], bool]:
    """The values `by` takes (as text, as compare reads it) in the rows `where` keeps; whether cut."""
    by = '"' + ask.by.replace('"', '""') + '"'  # a column of the view, checked before
    # The filter last, as Warehouse.compare places it: the guard then says of it what compare would.
    found = wh.query(f"select distinct cast({by} as varchar) as v from {ask.view}" + (f" where {ask.where}" if ask.where else ""),
                     limit=MAX_VALUES, **limits)
    return sorted(v for v, in found.tuples() if v is not None), found.truncated


def _count(raw: str, name: str, default: int, low: int, high: int | None) -> int:
    if not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"{name}: {raw!r} is not a whole number") from None
    if value < low or high is not None and value > high:
        raise UsageError(f"{name}: {value} is out of range ({low} to {high})" if high is not None
                         else f"{name}: {value} is below {low}")
    return value


def _boot(ask: Question) -> int:
    return _count(ask.n_boot, "n_boot", DEFAULT_BOOT, MIN_BOOT, MAX_BOOT)


def _seed(ask: Question) -> int:
    return _count(ask.seed, "seed", 0, 0, 2**32 - 1)


# -- the result --------------------------------------------------------------------------------

def _result(ask: Question, result: Comparison, shown: int) -> dict[str, Any]:
    """The summary row, the unmatched items and the first `shown` pairs by |b - a|, with their
    links: rows of values (formatted by the page's table_cells) and, beside them, the links."""
    keys = list(result.match)
    ranked = ranked_items(result.items)[:shown]
    more = url(PATH, [*ask.state(), ("rows", shown + ITEMS_STEP)]) + "#items" if shown < len(result.items) else None
    return {"result": result, "summary": [tuple(getattr(result, k) for k in SUMMARY)], "summary_columns": SUMMARY,
            "keys": keys, "more": more, "shown": len(ranked),
            "unmatched_rows": [(u["side"], *(u[k] for k in keys), u["value"]) for u in result.unmatched],
            "unmatched_runs": [_run_links(u.get("runs")) for u in result.unmatched],
            "item_rows": [(*(item[k] for k in keys), item["a"], item["b"], item["diff"]) for item in ranked],
            "item_links": [_item_links(ask, keys, item) for item in ranked]}


def _item_links(ask: Question, keys: list[str], item: dict[str, Any]) -> dict[str, Any]:
    """The pair page of an item (when the view has traces), else each side's runs."""
    pair = url(PAIR_PATH, [*ask.state(), *((KEY_PREFIX + k, cell(item[k])) for k in keys)]) if "traces_a" in item else None
    return {"pair": pair, "runs_a": _run_links(item.get("runs_a")), "runs_b": _run_links(item.get("runs_b"))}


def _run_links(runs: list[str] | None) -> list[tuple[str, str]]:
    return [(run, url("/ui/run", run=run)) for run in runs or []]


def _figure(result: Comparison) -> str:
    """The figure `tracewh compare --plot` draws, as a data: URI of its SVG (the page's CSP allows
    images from data: only, besides this server)."""
    with tempfile.TemporaryDirectory(prefix="tracewh-compare-") as folder, drawing_lock():
        svg = plot_pairs(result, Path(folder) / "pairs.svg").read_bytes()
    return "data:image/svg+xml;base64," + base64.b64encode(svg).decode()


# -- one pair, side by side --------------------------------------------------------------------

def _find(result: Comparison, key: dict[str, str]) -> dict[str, Any]:
    """The pair whose key columns read (as the page writes them) as `key` says; a column not
    given is an empty value (the page leaves empty values out of its links)."""
    for item in result.items:
        if all(cell(item[k]) == key.get(k, "") for k in result.match):
            return item
    named = ", ".join(f"{k} = {key.get(k, '')!r}" for k in result.match)
    raise NotFoundError(f"no pair of this comparison has {named}")


def _shown_traces(traces_a: list[dict[str, str]], traces_b: list[dict[str, str]], raw_a: str, raw_b: str) -> tuple[int, int]:
    """Which trace of each side to show: the ones asked for (`ta`, `tb`), else those whose run
    ids look most alike (the same model's runs, when ids name conditions and models), so the
    default pair is one a reader would put side by side."""
    for name, traces in (("ta", traces_a), ("tb", traces_b)):
        if not traces:
            raise NotFoundError(f"{name}: this side of the pair has no trace")
    given_a = _count(raw_a, "ta", -1, 0, len(traces_a) - 1) if raw_a.strip() else None
    given_b = _count(raw_b, "tb", -1, 0, len(traces_b) - 1) if raw_b.strip() else None
    choices_a = [given_a] if given_a is not None else range(len(traces_a))
    choices_b = [given_b] if given_b is not None else range(len(traces_b))
    if len(choices_a) * len(choices_b) > MAX_LIKENESS_PAIRS:  # too many to weigh: the first ones
        return choices_a[0], choices_b[0]
    return max(((i, j) for i in choices_a for j in choices_b),
               key=lambda ij: (_likeness(traces_a[ij[0]]["run_id"], traces_b[ij[1]]["run_id"]), -ij[0], -ij[1]))


def _likeness(one: str, other: str) -> int:
    """Characters two ids share at their start and at their end."""
    start = len(os.path.commonprefix([one, other]))
    end = len(os.path.commonprefix([one[start:][::-1], other[start:][::-1]]))
    return start + end


def _side(wh: Warehouse, ask: Question, side: str, traces: list[dict[str, str]], index: int, config: ServiceConfig,
          limits: dict[str, Any]) -> dict[str, Any]:
    """One side's trace as the trace panel draws it (first TRACE_ROWS_SHOWN rows), and its choices."""
    run, task = traces[index]["run_id"], traces[index]["task_id"]
    rows = trace_rows(wh.trace(run, task, limit=config.row_cap, **limits))
    note = (f"The first {len(rows[:TRACE_ROWS_SHOWN]):,} of {len(rows):,} events; the whole trace is on its page."
            if len(rows) > TRACE_ROWS_SHOWN else None)
    return {"side": side, "group": getattr(ask, side), "run": run, "task": task, "index": index, "traces": traces,
            "panel": f"{side}-", "rows": rows[:TRACE_ROWS_SHOWN], "total": len(rows), "more_url": None,
            "bar_width": int(BAR_WIDTH), "events_url": url("/ui/event", run=run), "note": note,
            "trace_url": url("/ui/trace", run=run, task=task), "run_url": url("/ui/run", run=run)}
