"""The labelling page: review queues (`tracewh queue add`) worked through in the browser.

/ui/queues lists the queues and each annotator's progress; /ui/queues/<rubric> shows the
annotator's next item (Warehouse.next_item): the target's fields, its trace where the target
names a run and task, and the rubric's labels as buttons (number keys 1..9, queue.js). A
label goes through Warehouse.label, the path of `tracewh label` and POST /labels; a
correction ("undo": back to the previous item, label it again) supersedes the earlier label.

The annotator's name is asked once and kept in a cookie; items skipped are kept in a
session cookie, per queue. This is attribution, not authentication: who may use the page at
all is the service's token rule (the page's signed-in session). Every POST is refused from
another site's page, as the SQL editor's are.
"""

from __future__ import annotations

import base64
import binascii
import math
from typing import TYPE_CHECKING, Any

import orjson
from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from ...errors import BadInputError, NotFoundError
from ...ingest.judging.labels import LabelInput
from ...ingest.judging.queue import annotator_counts, next_item, progress, queue_item
from ..config import ServiceConfig
from ..gate import Reading
from .auth import COOKIE_DAYS, refuse_cross_site
from .render import page, url
from .trace_rows import trace_rows

if TYPE_CHECKING:
    from ...api import Warehouse

ANNOTATOR_COOKIE = "tracewh_annotator"
SKIPPED_COOKIE = "tracewh_skipped"
SKIPPED_COOKIE_BYTES = 3000  # browsers keep 4 KB a cookie: the oldest skips are forgotten first
MAX_ANNOTATOR = 100
KEYS = 9  # labels 1..9 have a number key
QUEUES = ("select rubric, count(*) as items, count(*) filter (where done) as done, sum(reviews) as reviews, "
          "sum(least(labels, reviews)) as labels from review_queue group by rubric order by rubric")
TRACE_ROWS_SHOWN = 300


def queue_routes(router: APIRouter, config: ServiceConfig, reading: Reading) -> None:
    limits = {"timeout_s": config.query_seconds}

    @router.get("/ui/queues")
    async def queues_page(request: Request) -> Response:
        def work(wh: Warehouse) -> Response:
            queues = wh.sql(QUEUES).to_arrow_table().to_pylist() if wh.exists() else []
            return page(request, "queues.html", section="queues", queues=queues, progress=progress(wh),
                        annotator=annotator_of(request))

        return await reading(work)

    @router.get("/ui/queues/{rubric}")
    async def item_page(request: Request, rubric: str, target: str = "", prev: str = "") -> Response:
        annotator = annotator_of(request)
        if annotator is None:
            return page(request, "queue_annotator.html", section="queues", next=request_target(request), wrong=None,
                        annotator=None)

        pending = request.app.state.label_spool.pending(rubric)  # before the read: what it may not show yet

        def work(wh: Warehouse) -> Response:
            given = [(t, a) for _, t, a in pending]
            item = queue_item(wh, rubric, target) if target else next_item(wh, rubric, annotator,
                                                                             skipped_of(request, rubric), given)
            if target and item is None:
                raise NotFoundError(f"no item {target!r} in review queue {rubric!r}")
            counts = annotator_counts(wh, rubric, annotator, given)
            if not counts["items"]:
                raise NotFoundError(f"no review queue {rubric!r}; make one with `tracewh queue add RUBRIC.yaml`")
            return page(request, "queue.html", section="queues", rubric=rubric, annotator=annotator, item=item,
                        shown=_shown(item) if item else None, current=_current(wh, rubric, item, annotator, pending),
                        counts=counts, prev=prev, revisiting=bool(target), **_trace_of(wh, item, config, limits))

        return await reading(work)

    @router.post("/ui/queues/{rubric}/label")
    async def label(request: Request, rubric: str, target_id: str = Form(...), label: str = Form(""),
                    score: str = Form(""), note: str = Form("")) -> Response:
        refuse_cross_site(request)
        annotator = _required_annotator(request)
        item = await reading(lambda wh: queue_item(wh, rubric, target_id))
        if item is None:
            raise NotFoundError(f"no item {target_id!r} in review queue {rubric!r}")
        answer = _answer(item, label, score)
        labelled = LabelInput(rubric, target_id, annotator, note=note or None, file="the labelling page", **answer)
        await run_in_threadpool(request.app.state.label_spool.accept, [labelled])
        return RedirectResponse(url(f"/ui/queues/{rubric}", prev=target_id), status_code=303)

    @router.post("/ui/queues/{rubric}/skip")
    async def skip(request: Request, rubric: str, target_id: str = Form(...), prev: str = Form("")) -> Response:
        refuse_cross_site(request)
        _required_annotator(request)
        response = RedirectResponse(url(f"/ui/queues/{rubric}", prev=prev), status_code=303)  # undo still goes back
        skipped = _skipped(request)
        skipped[rubric] = [*skipped.get(rubric, []), target_id]
        response.set_cookie(SKIPPED_COOKIE, _encode_skipped(skipped), path="/", httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")  # a session cookie: skips last this session
        return response

    @router.post("/ui/queues/annotator")
    async def set_annotator(request: Request, annotator: str = Form(""), next_path: str = Form("/ui/queues",
                                                                                               alias="next")) -> Response:
        refuse_cross_site(request)
        name = annotator.strip()
        if not name or len(name) > MAX_ANNOTATOR or any(not c.isprintable() for c in name):
            return page(request, "queue_annotator.html", 400, section="queues", next=_queue_path(next_path),
                        annotator=None, wrong=f"an annotator's name is 1 to {MAX_ANNOTATOR} printable characters")
        response = RedirectResponse(_queue_path(next_path), status_code=303)
        response.set_cookie(ANNOTATOR_COOKIE, base64.urlsafe_b64encode(name.encode()).decode(), path="/",
                            max_age=COOKIE_DAYS * 86400, httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")
        response.delete_cookie(SKIPPED_COOKIE, path="/")  # another annotator: another session of skips
        return response


def annotator_of(request: Request) -> str | None:
    raw = request.cookies.get(ANNOTATOR_COOKIE)
    if not raw:
        return None
    try:
        name = base64.urlsafe_b64decode(raw.encode()).decode().strip()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return name if 0 < len(name) <= MAX_ANNOTATOR else None


def _required_annotator(request: Request) -> str:
    annotator = annotator_of(request)
    if annotator is None:
        raise BadInputError("the labelling page", "say who you are first (the annotator's name)", field="annotator")
    return annotator


def request_target(request: Request) -> str:
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


def _queue_path(path: str) -> str:
    """Where the annotator form goes back to: a queue page of this server, else the queue list."""
    return path if path.startswith("/ui/queues") and "//" not in path and "\\" not in path else "/ui/queues"


def _skipped(request: Request) -> dict[str, list[str]]:
    try:
        value = orjson.loads(base64.urlsafe_b64decode(request.cookies.get(SKIPPED_COOKIE, "").encode() or b"e30="))
    except (binascii.Error, orjson.JSONDecodeError, ValueError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): [str(t) for t in v] for k, v in value.items() if isinstance(v, list)}


def skipped_of(request: Request, rubric: str) -> list[str]:
    return _skipped(request).get(rubric, [])


def _encode_skipped(skipped: dict[str, list[str]]) -> str:
    while True:
        encoded = base64.urlsafe_b64encode(orjson.dumps(skipped)).decode()
        longest = max(skipped, key=lambda k: len(skipped[k]), default=None)
        if len(encoded) <= SKIPPED_COOKIE_BYTES or longest is None or not skipped[longest]:
            return encoded
        skipped[longest] = skipped[longest][1:]


def _answer(item: dict[str, Any], label: str, score: str) -> dict[str, Any]:
    """The label or score sent, checked against the queue's answer space (the rubric's)."""
    labels = orjson.loads(item["label_set"]) if item.get("label_set") else None
    scale = orjson.loads(item["scale"]) if item.get("scale") else None
    if labels is not None:
        if label not in labels:
            raise BadInputError("the labelling page", f"{label!r} is not in rubric {item['rubric']!r}'s label set "
                                f"({', '.join(labels)})", field="label")
        return {"label": label}
    try:
        value = float(score)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (scale is not None and not scale[0] <= value <= scale[1]):
        raise BadInputError("the labelling page", f"{score!r} is not a score on the rubric's scale "
                            f"({scale[0]:g} to {scale[1]:g})" if scale else f"{score!r} is not a number", field="score")
    return {"score": value}


def _shown(item: dict[str, Any]) -> dict[str, Any]:
    """What the page shows of an item: its fields (JSON text in the view), labels and scale parsed."""
    fields = orjson.loads(item["fields"]) if item.get("fields") else {}
    labels = orjson.loads(item["label_set"]) if item.get("label_set") else None
    scale = orjson.loads(item["scale"]) if item.get("scale") else None
    return {"fields": [(k, v if isinstance(v, str) else orjson.dumps(v).decode()) for k, v in fields.items()],
            "labels": [(str(i + 1) if i < KEYS else "", name) for i, name in enumerate(labels or [])],
            "scale": scale}


def _current(wh: Warehouse, rubric: str, item: dict[str, Any] | None, annotator: str,
             pending: dict[tuple[str, str, str], dict[str, Any]]) -> dict[str, Any] | None:
    """This annotator's current label of the item, if any (shown when going back to relabel it):
    the one just given if it is not committed yet."""
    if item is None:
        return None
    if (given := pending.get((rubric, item["target_id"], annotator))) is not None:
        return {"label": given["label"], "value": given["value"], "note": given["note"]}
    rows = wh.sql("select label, value, note from labels where rubric = $1 and target_id = $2 and rater = $3 "
                  "and rater_kind = 'human'", [rubric, item["target_id"], annotator]).fetchall()
    return {"label": rows[0][0], "value": rows[0][1], "note": rows[0][2]} if rows else None


def _trace_of(wh: Warehouse, item: dict[str, Any] | None, config: ServiceConfig, limits: dict[str, Any]) -> dict[str, Any]:
    """The target's trace tree, when the item names a run and task the store holds."""
    none = {"rows": None, "total": 0, "more_url": None, "bar_width": 0, "events_url": ""}
    if item is None or not item.get("run_id") or not item.get("task_id"):
        return none
    try:
        rows = trace_rows(wh.trace(item["run_id"], item["task_id"], limit=config.row_cap, **limits))
    except NotFoundError:
        return none
    from .trace_rows import BAR_WIDTH

    return {"rows": rows[:TRACE_ROWS_SHOWN], "total": len(rows), "more_url": None, "bar_width": int(BAR_WIDTH),
            "events_url": url("/ui/event", run=item["run_id"]),
            "trace_url": url("/ui/trace", run=item["run_id"], task=item["task_id"])}
