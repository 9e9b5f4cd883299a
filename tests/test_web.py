"""The web page of `tracewh serve`, in a real browser: Debian's chromium driven by Playwright,
against a real `tracewh serve` on 127.0.0.1 over a small demo store (every benchmark), plus
a run whose every field is markup, a 1,200-event task, and one quarantined event.

Skipped, with the reason, only when no chromium can be found (`apt-get install chromium`, or
TRACEWH_CHROMIUM=/path). Screenshots of every page land in a temporary folder whose path is
printed; with TRACEWH_DOCS_SCREENSHOTS=docs/img the README's screenshots are refreshed too.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
import pytest
from helpers import serving, watched_page, write_native

import tracewh
from tracewh.demo.build import build_demo

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
from web_trace import big_task_events  # noqa: E402

TOKEN = "web-test-token"
SCRIPT = "<script>window.__xss = 1</script>"
IMG = '"><img src=x onerror="window.__xss = 2">'
XSS_RUN = "xss-" + IMG
XSS_TASK = "task " + IMG
BIG_RUN, BIG_TASK, BIG_EVENTS = "big-run", "big-task", 1200
BENCHMARKS = ("agentdemo", "decisionbench", "delegate52", "entcollabbench")
WEB = Path(__file__).resolve().parents[1] / "service" / "web"
DOCS_SHOTS = {"runs": "web-runs.png", "trace-entcollabbench-payload": "web-trace.png"}


def xss_events() -> list[dict[str, Any]]:
    """A run whose ids, names, attributes and payloads are all markup."""
    base = {"run_id": XSS_RUN, "benchmark": "custom", "task_id": XSS_TASK, "trace_id": "t1"}
    return [
        {**base, "kind": "run_attrs", "task_id": None, "payload": {"model": "m" + SCRIPT, "note": IMG, IMG: SCRIPT}},
        {**base, "kind": "task_started", "span_id": "root", "agent": SCRIPT, "payload": {"instruction": SCRIPT}},
        {**base, "kind": "llm_call", "span_id": "c1", "parent_span_id": "root", "agent": SCRIPT, "model": "m" + IMG,
         "prompt_tokens": 5, "completion_tokens": 2, "payload": {"messages": [{"role": IMG, "content": SCRIPT}],
                                                                 "content": IMG}},
        {**base, "kind": "delegation", "span_id": "d1", "parent_span_id": "c1", "agent": SCRIPT, "tool_name": IMG,
         "payload": {"to_agent": SCRIPT, "message": IMG}},
        {**base, "kind": "tool_call", "span_id": "x1", "parent_span_id": "d1", "agent": IMG, "tool_name": SCRIPT,
         "payload": {"arguments": {IMG: SCRIPT}}},
        {**base, "kind": "state_diff", "parent_span_id": "root", "payload": {"service": SCRIPT, "table": IMG, "op": "update",
                                                                             "before": SCRIPT, "after": IMG}},
        {**base, "kind": "score", "parent_span_id": "root", "score": 0.5, "payload": {"metric": IMG}},
    ]


FAIL_RUN, FAIL_TASK, TOOL_ERROR = "failing-run", "failing-task", "ConnectionError: the ERP did not answer in 30 s"


def failing_events() -> list[dict[str, Any]]:
    """A short task: a tool call that failed, a plain OTLP span, then four state diffs in a row."""
    base = {"run_id": FAIL_RUN, "benchmark": "custom", "task_id": FAIL_TASK, "trace_id": "t9"}
    diffs = [{**base, "kind": "state_diff", "parent_span_id": "root", "ts": f"2026-05-01T10:00:0{4 + i}Z",
              "payload": {"service": "erp", "table": "ledger", "key": f"L{i}", "op": "update", "before": i, "after": i + 1}}
             for i in range(4)]
    return [
        {**base, "kind": "task_started", "span_id": "root", "ts": "2026-05-01T10:00:00Z", "payload": {"instruction": "Book it"}},
        {**base, "kind": "tool_call", "span_id": "x1", "parent_span_id": "root", "tool_name": "erp_post",
         "ts": "2026-05-01T10:00:01Z", "payload": {"arguments": {"id": 1}, "status": "error", "error": TOOL_ERROR}},
        {**base, "kind": "tool_call", "span_id": "x2", "parent_span_id": "root", "tool_name": "erp_get",
         "ts": "2026-05-01T10:00:02Z", "payload": {"arguments": {"id": 1}, "status": "ok", "result": "fine"}},
        {**base, "kind": "span", "span_id": "s1", "parent_span_id": "root", "ts": "2026-05-01T10:00:03Z",
         "payload": {"name": "retrieve_documents", "span_kind": "internal"}},
        *diffs,
        {**base, "kind": "task_finished", "parent_span_id": "root", "ts": "2026-05-01T10:00:09Z", "payload": {"status": "ok"}},
    ]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("web")
    wh, _ = build_demo(tmp, tasks=2)
    big = big_task_events(BIG_EVENTS, run_id=BIG_RUN, task_id=BIG_TASK)
    wh.ingest([write_native(tmp / "xss.jsonl", xss_events()), write_native(tmp / "big.jsonl", big),
               write_native(tmp / "failing.jsonl", failing_events())])
    held = {"run_id": "held-run", "benchmark": "custom", "kind": "llm_call", "prompt_tokens": -5}
    wh.ingest([write_native(tmp / "held.jsonl", [held, held | {"prompt_tokens": 5}])], quarantine=True)
    return wh.path


@pytest.fixture(scope="module")
def base(store) -> Iterator[str]:
    with serving(store) as url:
        yield url


@pytest.fixture(scope="module")
def shots(request, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("web-screenshots")
    request.config.pluginmanager.get_plugin("terminalreporter").write_line(f"web page screenshots: {folder}")
    return folder


@pytest.fixture
def page(browser, base, shots) -> Iterator[Any]:
    """A fresh browser context; afterwards: no dialog opened, no CSP violation, nothing fetched elsewhere."""
    page = watched_page(browser, base, accept_downloads=True)
    page.shoot = lambda name: _shoot(page, shots, name)
    yield page
    page.context.close()
    assert page.dialogs == [] and page.elsewhere == [] and page.refused == []


def _shoot(page: Any, folder: Path, name: str) -> None:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    docs = os.environ.get("TRACEWH_DOCS_SCREENSHOTS")
    if docs and name in DOCS_SHOTS:
        shutil.copyfile(path, Path(docs) / DOCS_SHOTS[name])


def _expect():
    from playwright.sync_api import expect

    return expect


def _trace_url(base: str, run: str, task: str) -> str:
    return f"{base}/ui/trace?{urlencode({'run': run, 'task': task})}"


def _one(store: Path, query: str) -> tuple:
    return tracewh.open(store).sql(query).fetchall()[0]


# -- runs ---------------------------------------------------------------------------------------

def test_runs_list_filters_sorts_and_pages(page, base, store):
    expect = _expect()
    response = page.goto(base + "/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    rows = page.locator("#runs tbody tr")
    expect(rows).to_have_count(50)
    expect(page.locator("a[rel=next]")).to_be_visible()
    page.shoot("runs")

    page.select_option("select[name=benchmark]", "decisionbench")
    page.fill("input[name=attr]", "condition=blind")
    page.click("form.filters button[type=submit]")
    expect(page).to_have_url(re.compile(r"benchmark=decisionbench.*attr=condition%3Dblind"))
    expected = _one(store, "select count(*) from runs where benchmark = 'decisionbench' and attrs->>'condition' = 'blind'")
    expect(rows).to_have_count(expected[0])
    assert set(rows.locator("td:nth-child(2)").all_inner_texts()) == {"decisionbench"}
    assert all("condition=blind" in chips for chips in rows.locator("td:nth-child(4)").all_inner_texts())

    page.click("#runs th a:has-text('score')")
    page.click("#runs th a:has-text('score')")
    expect(page.locator("#runs th[aria-sort=descending]")).to_contain_text("score")
    scores = [float(s) for s in rows.locator("td:nth-child(10)").all_inner_texts()]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) > 1

    page.select_option("select[name=model]", "gpt-5.5")
    page.click("form.filters button[type=submit]")
    assert set(rows.locator("td:nth-child(3)").all_inner_texts()) == {"gpt-5.5"}
    page.click("#runs tbody a.chip:has-text('suite=')")  # a chip filters by its attribute
    expect(page).to_have_url(re.compile(r"attr=suite%3D"))


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_a_run_of_each_benchmark_opens_to_its_trace(page, base, benchmark):
    expect = _expect()
    page.goto(f"{base}/?{urlencode({'benchmark': benchmark, 'sort': 'n_events', 'desc': 'true'})}")
    page.locator("#runs tbody td:first-child a").first.click()
    expect(page.locator("h1")).to_contain_text("Run")
    expect(page.locator("dl.summary")).to_contain_text(benchmark)
    page.shoot(f"run-{benchmark}")
    page.locator("#tasks tbody td:first-child a").first.click()
    expect(page.locator('#trace[data-ready="true"]')).to_be_visible()
    assert page.locator('#trace [role="treeitem"]:visible').count() > 0
    assert page.locator("#trace svg.bar rect").count() > 0  # time bars
    page.shoot(f"trace-{benchmark}")


# -- a trace ------------------------------------------------------------------------------------

def test_a_delegation_unfolds_by_mouse_and_keyboard_and_a_call_shows_its_payload(page, base, store):
    expect = _expect()
    run, task = _one(store, "select d.run_id, d.task_id from delegations d join events e on e.run_id = d.run_id "
                            "and e.parent_span_id = d.span_id where d.benchmark = 'entcollabbench' "
                            "order by d.run_id, d.seq limit 1")
    page.goto(_trace_url(base, run, task))
    folded = page.locator('#trace .k-delegation[aria-expanded="false"]:visible').first
    delegation = page.locator(f"#{folded.get_attribute('id')}")  # this row, whatever its state next
    child = delegation.locator("xpath=following-sibling::*[1]")
    assert int(child.get_attribute("aria-level")) == int(delegation.get_attribute("aria-level")) + 1
    expect(child).to_be_hidden()
    delegation.locator(".twisty").click()
    expect(delegation).to_have_attribute("aria-expanded", "true")
    expect(child).to_be_visible()
    expect(delegation).to_be_focused()
    page.keyboard.press("ArrowLeft")
    expect(child).to_be_hidden()
    page.keyboard.press("ArrowRight")
    expect(child).to_be_visible()
    page.keyboard.press("ArrowDown")
    expect(child).to_be_focused()
    expect(child).to_have_attribute("aria-selected", "true")
    if child.get_attribute("aria-expanded") == "true":
        page.keyboard.press("ArrowLeft")  # folds the child first
    page.keyboard.press("ArrowLeft")  # then goes up to its parent
    expect(delegation).to_be_focused()

    call = page.locator('#trace .k-llm_call:visible').first
    call.click()
    expect(page.locator("#payload h2")).to_contain_text("llm_call")
    expect(page.locator("#payload")).to_contain_text("Payload (JSON)")
    page.keyboard.press("Home")
    page.keyboard.press("Enter")  # the first row's payload, by keyboard
    first_kind = page.locator('#trace [role="treeitem"]').first.locator(".kind").inner_text()
    expect(page.locator("#payload h2")).to_contain_text(first_kind)
    call.click()
    page.shoot("trace-entcollabbench-payload")


def test_a_state_diff_shows_as_a_diff(page, base, store):
    expect = _expect()
    run, task, event, before, after = _one(store, "select run_id, task_id, event_id, before_value ->> '$', "
                                                  "after_value ->> '$' from state_diffs where op = 'update' "
                                                  "order by run_id, seq limit 1")
    page.goto(_trace_url(base, run, task))
    page.click('[data-trace="unfold"]')
    page.locator(f'#trace [data-event="{event}"]').click()
    diff = page.locator("#payload pre.diff")
    expect(diff.locator(".del")).to_contain_text(str(before))
    expect(diff.locator(".add")).to_contain_text(str(after))


def test_a_big_trace_opens_a_page_of_rows_and_shows_more(page, base, store):
    expect = _expect()
    (total,) = _one(store, f"select count(*) from events where task_id = '{BIG_TASK}'")
    assert total > 1000
    page.goto(_trace_url(base, BIG_RUN, BIG_TASK))
    rows = page.locator('#trace [role="treeitem"]')
    expect(rows).to_have_count(500)
    page.click("#trace button.more")
    expect(rows).to_have_count(1000)
    page.click("#trace button.more")
    expect(rows).to_have_count(total)
    expect(page.locator("#trace button.more")).to_have_count(0)
    page.click('[data-trace="unfold"]')
    assert page.locator('#trace [role="treeitem"]:visible').count() == total


# -- views and figures ----------------------------------------------------------------------------

def test_a_view_opens_as_a_table_filters_and_downloads_csv(page, base):
    expect = _expect()
    page.goto(base + "/ui/views")
    expect(page.locator("table.views").first).to_be_visible()
    assert page.locator("table.views").count() >= 4  # core and one per benchmark
    page.shoot("views")
    page.click("a:text-is('d52_rs_at_k')")
    expect(page.locator("h1")).to_have_text("d52_rs_at_k")
    page.fill('input[name="f.model"]', "gpt-5.4")
    page.fill('input[name="f.mode"]', "direct")
    page.click('button[form="view-filters"]')
    model_column = page.locator("#view-table thead th").all_inner_texts().index("model") + 1
    shown = page.locator(f"#view-table tbody td:nth-child({model_column})").all_inner_texts()
    assert shown and set(shown) == {"gpt-5.4"}
    page.shoot("view")
    with page.expect_download() as download:
        page.click("a:text-is('CSV')")
    csv = Path(download.value.path()).read_text()
    api = httpx.get(f"{base}/views/d52_rs_at_k", params={"model": "gpt-5.4", "mode": "direct", "format": "csv"}).text
    assert csv == api and len(csv.splitlines()) == len(shown) + 1


def test_the_headline_figures_are_drawn(page, base):
    expect = _expect()
    page.goto(base + "/ui/figures")
    for kind in ("rs-curves", "critical-curves", "pareto", "vendor-flow", "role-accuracy"):
        figure = page.locator(f"#figure-{kind} img.plot")
        expect(figure).to_be_visible(timeout=60_000)
        assert figure.evaluate("image => image.naturalWidth") > 300
    page.shoot("figures")
    with page.expect_download() as download:
        page.click("#figure-pareto a:text-is('PNG')")
    assert Path(download.value.path()).read_bytes().startswith(b"\x89PNG")


# -- SQL --------------------------------------------------------------------------------------------

def test_the_sql_editor_runs_a_query_keeps_it_in_the_url_and_downloads(page, base):
    expect = _expect()
    query = "select model, count(*) as n from llm_calls group by 1 order by 1"
    page.goto(base + "/ui/sql")
    page.fill("#q", query)
    page.press("#q", "Control+Enter")
    expect(page.locator("#sql-result table")).to_be_visible()
    assert page.locator("#sql-result th").all_inner_texts() == ["model", "n"]
    api = httpx.post(f"{base}/sql", json={"query": query}).json()["rows"]
    cells = [r.locator("td").all_inner_texts() for r in page.locator("#sql-result tbody tr").all()]
    assert cells == [[row["model"] or "", str(row["n"])] for row in api]
    page.shoot("sql")
    with page.expect_download() as download:
        page.click("#sql-result-note button:text-is('Parquet')")  # a POST, as running the query is
    import pyarrow.parquet as pq

    assert pq.read_table(download.value.path()).num_rows == len(api)
    page.click("#sql-share")  # a shared link fills the editor; the query runs when Run is pressed
    expect(page.locator("#q")).to_have_value(query)
    expect(page.locator("#sql-result")).to_have_count(0)
    page.click("#sql-form button[type=submit]")
    expect(page.locator("#sql-result tbody tr")).to_have_count(len(api))


@pytest.mark.parametrize("query", ["copy events to '/tmp/out.csv'", "select * from read_text('/etc/hostname')",
                                   "select nope from runs", "delete from events"])
def test_the_sql_editor_shows_the_services_error_for_a_refused_query(page, base, query):
    expect = _expect()
    api = httpx.post(f"{base}/sql", json={"query": query})
    page.goto(f"{base}/ui/sql?{urlencode({'q': query})}")
    with page.expect_response(lambda r: r.request.method == "POST") as response:
        page.click("#sql-form button[type=submit]")
    assert response.value.status == api.status_code == 400
    expect(page.locator(".error")).to_contain_text(api.json()["detail"])
    expect(page.locator("#q")).to_have_value(query)
    assert page.locator("#sql-result").count() == 0
    if query.startswith("copy"):
        page.shoot("sql-error")


# -- the store -------------------------------------------------------------------------------------

def test_the_store_page_shows_the_version_log_quarantine_and_checks(page, base, store):
    expect = _expect()
    wh = tracewh.open(store)
    page.goto(base + "/ui/store")
    expect(page.locator("#store-version")).to_have_text(str(wh.version))
    expect(page.locator("#batches tbody tr")).to_have_count(len(wh.log()))
    expect(page.locator("#quarantine tbody tr")).to_have_count(1)
    expect(page.locator("#quarantine")).to_contain_text("cannot be negative")
    page.click("text=Run the checks")
    expect(page.locator("#check .ok")).to_contain_text("Passed", timeout=90_000)
    page.shoot("store")


# -- security -----------------------------------------------------------------------------------------

def test_stored_markup_stays_text_everywhere(page, base):
    expect = _expect()
    pages = [f"{base}/?benchmark=custom", f"{base}/ui/run?{urlencode({'run': XSS_RUN})}", _trace_url(base, XSS_RUN, XSS_TASK),
             f"{base}/ui/views/runs?{urlencode({'f.run_id': XSS_RUN})}",
             f"{base}/ui/sql?{urlencode({'q': 'select * from events where benchmark = ' + repr('custom')})}",
             f"{base}/ui/sql?{urlencode({'q': 'select ' + repr(SCRIPT) + ' as ' + chr(34) + IMG + chr(34)})}"]
    for address in pages:
        page.goto(address)
        if "/ui/sql" in address:
            with page.expect_response(lambda r: r.request.method == "POST"):  # a result, or the query's error
                page.click("#sql-form button[type=submit]")
        expect(page.get_by_text(SCRIPT).first).to_be_attached()  # shown, as text
        if "/ui/trace" in address:
            page.click('[data-trace="unfold"]')
            for row in page.locator('#trace [role="treeitem"]').all():
                row.click()
                expect(page.locator("#payload h2")).to_be_visible()
        assert page.evaluate("window.__xss") is None
        assert page.locator("img[src=x], [onerror]").count() == 0
        scripts = page.locator("script").evaluate_all("all => all.map(s => s.getAttribute('src'))")
        assert scripts == ["/ui/static/htmx.min.js", "/ui/static/tracewh.js"]
    page.shoot("xss-trace-payload")


def test_templates_never_mark_data_safe():
    for template in (WEB / "templates").glob("*.html"):
        text = template.read_text()
        assert not re.search(r"\|\s*safe\b|autoescape\s+false|<script(?![^>]*\bsrc=)", text), template.name
    for source in WEB.glob("*.py"):
        assert "Markup(" not in source.read_text(), source.name


def test_the_page_needs_nothing_from_outside(page, base):
    """Every asset ships in the package; the `page` fixture fails on any request elsewhere."""
    for address in ("/", "/ui/views", "/ui/sql", "/ui/store", "/ui/figures"):
        page.goto(base + address)
    for static in ("htmx.min.js", "htmx.LICENSE", "NOTICE", "tracewh.js", "tracewh.css"):
        assert (WEB / "static" / static).is_file()
    assert "Zero-Clause BSD" in (WEB / "static" / "htmx.LICENSE").read_text()


def test_the_token_is_asked_once_and_kept_in_a_strict_httponly_cookie(browser, store, shots):
    from playwright.sync_api import expect

    with serving(store, token=TOKEN) as base:
        context = browser.new_context()
        page = context.new_page()
        page.goto(base + "/ui/views")
        expect(page).to_have_url(re.compile(r"/ui/login\?next=%2Fui%2Fviews"))
        page.fill("#token", "not-the-token")
        page.click("form.login button[type=submit]")
        expect(page.locator("form.login .error")).to_contain_text("not the service's token")
        _shoot(page, shots, "login")
        page.fill("#token", TOKEN)
        page.click("form.login button[type=submit]")
        expect(page).to_have_url(base + "/ui/views")
        cookie = next(c for c in context.cookies() if c["name"] == "tracewh_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and TOKEN not in cookie["value"]
        assert "tracewh_session" not in page.evaluate("document.cookie")  # scripts cannot read it
        page.goto(base + "/ui/sql")  # asked once: the cookie carries on
        expect(page).to_have_url(base + "/ui/sql")

        assert httpx.get(base + "/ui/views").status_code == 303  # no cookie, no page
        assert httpx.get(base + "/ui/views", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert urlsplit(httpx.get(base + "/", cookies={"tracewh_session": TOKEN}).headers["location"]).path == "/ui/login"
        page.click("text=Sign out")
        expect(page).to_have_url(re.compile(r"/ui/login"))
        page.goto(base + "/")
        expect(page).to_have_url(re.compile(r"/ui/login"))
        context.close()


# -- issues #32 and #33: the filter form, the trace, the tables, cross-site requests, sign-in links --

def test_the_runs_list_opens_newest_first_and_filters_by_benchmark_alone(page, base, store):
    expect = _expect()
    page.goto(base + "/")
    newest = [r[0] for r in tracewh.open(store).sql("select run_id from runs order by last_ts desc nulls last, run_id "
                                                    "limit 50").fetchall()]
    assert page.locator("#runs tbody td:first-child").all_inner_texts() == newest
    expect(page.locator("#runs th[aria-sort=descending]")).to_contain_text("time span")
    page.select_option("select[name=benchmark]", "entcollabbench")  # the attribute box stays empty
    with page.expect_response(lambda r: "benchmark=entcollabbench" in r.url) as answer:
        page.click("form.filters button[type=submit]")
    assert answer.value.status == 200
    (expected,) = _one(store, "select count(*) from runs where benchmark = 'entcollabbench'")
    expect(page.locator("#runs tbody tr")).to_have_count(expected)
    assert set(page.locator("#runs td:nth-child(2)").all_inner_texts()) == {"entcollabbench"}


def test_a_trace_whose_clocks_disagree_is_ordered_by_sequence_with_the_gaps_marked(page, base, store):
    expect = _expect()
    run, task = _one(store, "select run_id, task_id from events where benchmark = 'entcollabbench' and task_id is not null "
                            "group by all order by max(ts) - min(ts) desc, run_id, task_id limit 1")
    page.goto(_trace_url(base, run, task))
    expect(page.locator("#clock-note")).to_have_text("Timestamps disagree; ordered by sequence, gaps marked.")
    expect(page.locator("p.note").first).not_to_contain_text(re.compile(r"events over"))  # not "over 121 h 18 min"
    assert page.locator("#trace .gap-mark:visible").count() >= 1
    page.shoot("trace-clocks-disagree")
    page.goto(_trace_url(base, FAIL_RUN, FAIL_TASK))  # one clock: a time axis as before
    expect(page.locator("p.note").first).to_contain_text("over 9.00 s")
    expect(page.locator("#clock-note")).to_have_count(0)


def test_a_failed_call_is_marked_a_span_shows_its_name_and_state_diffs_fold_into_one_row(page, base):
    expect = _expect()
    missing = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    page.goto(_trace_url(base, FAIL_RUN, FAIL_TASK))
    failed = page.locator("#trace .row.failed")
    expect(failed).to_have_count(1)
    expect(failed.locator(".kind")).to_have_text("tool_call")
    expect(failed.locator(".fail-mark")).to_be_visible()
    expect(failed.locator(".error-text")).to_have_text(TOOL_ERROR)
    assert failed.locator(".fail-mark").evaluate("e => getComputedStyle(e).color") == "rgb(180, 35, 24)"  # red
    expect(page.locator("#trace .k-span .label")).to_have_text("retrieve_documents")
    group = page.locator("#trace .k-state_diffs")
    expect(group).to_have_count(1)
    expect(group).to_have_attribute("aria-expanded", "false")
    expect(group.locator(".label")).to_have_text("4 state changes")
    expect(page.locator("#trace .k-state_diff:visible")).to_have_count(0)
    group.click()
    expect(page.locator("#trace .k-state_diff:visible")).to_have_count(4)
    page.shoot("trace-failed-call")
    assert missing == []  # the favicon too


def test_at_420_px_the_trace_and_a_wide_view_stay_readable(browser, base, store, shots):
    expect = _expect()
    context = browser.new_context(viewport={"width": 420, "height": 900})
    page = context.new_page()
    run, task = _one(store, "select run_id, task_id from delegations where benchmark = 'entcollabbench' "
                            "order by run_id, seq limit 1")
    page.goto(_trace_url(base, run, task))
    expect(page.locator('#trace[data-ready="true"]')).to_be_visible()
    name = page.locator("#trace .row .name").first.bounding_box()
    assert name["width"] >= 200, name  # the event column keeps the room
    heads = [page.locator(".tree-head span").nth(i).bounding_box() for i in range(6)]
    shown = [h for h in heads if h is not None and h["width"] > 0]
    assert all(a["x"] + a["width"] <= b["x"] for a, b in zip(shown, shown[1:])), shown  # no header on another
    _shoot(page, shots, "trace-420")
    page.goto(base + "/ui/views/ecb_table1")
    box = page.locator("#view-table").locator("xpath=..")
    assert box.evaluate("e => e.scrollWidth > e.clientWidth")  # the table scrolls in its box ...
    assert page.evaluate("document.documentElement.scrollWidth") <= 420  # ... not the page
    model = page.locator("#view-table tbody td:first-child").first
    assert model.evaluate("e => e.getClientRects().length && e.offsetHeight < 2 * parseFloat(getComputedStyle(e).lineHeight) + 10")
    _shoot(page, shots, "ecb-table1-420")
    context.close()


def test_view_numbers_are_right_aligned_and_rounded_with_the_exact_value_kept(page, base, store):
    expect = _expect()
    page.goto(base + "/ui/views/ecb_table1")
    columns = page.locator("#view-table thead th").all_inner_texts()
    column = columns.index("workflow_multi_subtask") + 1
    cells = page.locator(f"#view-table tbody td:nth-child({column})")
    expect(cells.first).to_have_class(re.compile(r"\bnum\b"))
    assert cells.first.evaluate("e => getComputedStyle(e).textAlign") == "right"
    exact = dict(tracewh.open(store).sql("select model, workflow_multi_subtask from ecb_table1").fetchall())
    models = page.locator("#view-table tbody td:first-child").all_inner_texts()
    for model, shown in zip(models, cells.all_inner_texts()):
        assert shown == f"{exact[model]:.1f}"  # 73.3333 reads 73.3: the column's largest < 100, three digits
    assert any(len(c.get_attribute("title") or "") > len(t) for c, t in zip(cells.all(), cells.all_inner_texts()))


ATTACK_PAGE = """<!doctype html><title>elsewhere</title>
<iframe name="sink"></iframe>
<a id="link" href="{target}/ui/sql?q={query}">a link someone posted</a>
<form id="f" method="post" action="{target}/ui/sql" target="sink"><input name="q" value="{raw}"></form>
<form id="d" method="post" action="{target}/ui/sql/download" target="sink">
  <input name="q" value="{raw}"><input name="format" value="csv"></form>
<script>document.getElementById("f").submit(); setTimeout(() => document.getElementById("d").submit(), 300);</script>
"""


def test_another_sites_page_cannot_run_a_query(browser, base):
    """A page on another origin (another port) sends the query by GET and by auto-submitted POSTs:
    the GET only fills the editor, the POSTs get 403; the marker the query makes never comes back."""
    import http.server
    import threading
    from urllib.parse import quote

    from helpers import free_port

    raw = "select 'ran-' || 'marker' as x"
    page_html = ATTACK_PAGE.format(target=base, query=quote(raw), raw=raw).encode()

    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page_html)

        def log_message(self, *args: Any) -> None:
            pass

    other = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Elsewhere)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    context = browser.new_context()
    page = context.new_page()
    answers: list[tuple[str, str, int, bytes]] = []

    def answered(response: Any) -> None:
        if response.url.startswith(base):
            try:
                body = response.body()
            except Exception:  # noqa: BLE001 - a page navigated away: a redirect or a download has no body to read
                body = b""
            answers.append((response.request.method, response.url, response.status, body))

    page.on("response", answered)
    try:
        page.goto(f"http://127.0.0.1:{other.server_address[1]}/")
        page.wait_for_timeout(1500)
        posts = [(url, status) for method, url, status, _ in answers if method == "POST"]
        assert sorted(posts) == [(base + "/ui/sql", 403), (base + "/ui/sql/download", 403)], answers
        page.click("#link")  # a plain GET from another site: the editor, filled, nothing run
        _expect()(page.locator("#q")).to_have_value(raw)
        _expect()(page.locator("#sql-result")).to_have_count(0)
        assert all(b"ran-marker" not in body for *_, body in answers)
        page.goto(f"{base}/ui/sql?q={quote(raw)}")  # the same query, from this server's editor: runs
        page.click("#sql-form button[type=submit]")
        _expect()(page.locator("#sql-result")).to_contain_text("ran-marker")
    finally:
        context.close()
        other.shutdown()


HOSTILE_NEXT = ["/%09/evil.example", "/\t/evil.example", "/%5cevil.example", "//evil.example", "/\\evil.example",
                "https://evil.example", "javascript:alert(1)", "%2f%2fevil.example", "/%2F%2Fevil.example",
                "/\n/evil.example", " //evil.example", "\\\\evil.example", "/%0a/evil.example", "http:evil.example"]


@pytest.mark.parametrize("hostile", HOSTILE_NEXT)
def test_the_sign_in_link_never_leads_off_site(base, hostile):
    answer = httpx.get(f"{base}/ui/login", params={"next": hostile})
    continue_to = re.search(r'<a href="([^"]*)">Continue</a>', answer.text).group(1)
    assert continue_to == "/", (hostile, continue_to)


def test_the_sign_in_link_keeps_a_path_on_this_server_and_chromium_stays_on_it(page, base):
    expect = _expect()
    page.goto(f"{base}/ui/login?{urlencode({'next': '/ui/views?f.x=a%20b'})}")
    expect(page.locator("a:text-is('Continue')")).to_have_attribute("href", "/ui/views?f.x=a%20b")
    page.goto(f"{base}/ui/login?next=/%09/evil.example")
    page.click("a:text-is('Continue')")
    expect(page).to_have_url(base + "/")


def test_a_run_whose_cost_is_unknown_reads_n_a_never_zero(page, base, store):
    # EntCollabBench's demo model is missing from the price list: the run's total is unknown, not $0.
    (run, unpriced) = _one(store, "select run_id, unpriced_calls from runs where cost_usd is null and unpriced_calls > 0 "
                                  "order by run_id limit 1")
    page.goto(base + "/?benchmark=entcollabbench&sort=run_id&desc=false")
    row = page.locator("#runs tbody tr", has_text=run)
    cost = row.locator("td abbr")
    _expect()(cost).to_have_text("n/a")
    assert f"{unpriced} LLM call(s) without a known cost" in cost.get_attribute("title")
    assert "$0.0000" not in row.inner_text()
