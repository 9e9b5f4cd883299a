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
from helpers import serving, write_native

import tracewh
from tracewh.demo.build import build_demo

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
from web_trace import big_task_events, chromium, launch  # noqa: E402

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


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("web")
    wh, _ = build_demo(tmp, tasks=2)
    big = big_task_events(BIG_EVENTS, run_id=BIG_RUN, task_id=BIG_TASK)
    wh.ingest([write_native(tmp / "xss.jsonl", xss_events()), write_native(tmp / "big.jsonl", big)])
    held = {"run_id": "held-run", "benchmark": "custom", "kind": "llm_call", "prompt_tokens": -5}
    wh.ingest([write_native(tmp / "held.jsonl", [held, held | {"prompt_tokens": 5}])], quarantine=True)
    return wh.path


@pytest.fixture(scope="module")
def base(store) -> Iterator[str]:
    with serving(store) as url:
        yield url


@pytest.fixture(scope="module")
def browser(request) -> Iterator[Any]:
    executable = chromium()
    if executable is None:
        pytest.skip("no chromium found: apt-get install chromium (or set TRACEWH_CHROMIUM=/path/to/chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p, executable)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def shots(request, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("web-screenshots")
    request.config.pluginmanager.get_plugin("terminalreporter").write_line(f"web page screenshots: {folder}")
    return folder


@pytest.fixture
def page(browser, base, shots) -> Iterator[Any]:
    """A fresh browser context; afterwards: no dialog opened, no CSP violation, nothing fetched elsewhere."""
    context = browser.new_context(viewport={"width": 1500, "height": 950}, accept_downloads=True)
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.dialogs, page.elsewhere, page.refused = [], [], []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: page.elsewhere.append(r.url) if not r.url.startswith((base, "data:")) else None)
    page.on("console", lambda m: page.refused.append(m.text) if "Content Security Policy" in m.text else None)
    page.shoot = lambda name: _shoot(page, shots, name)
    yield page
    context.close()
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
    shared = page.url
    page.goto(base + "/")
    page.goto(shared)  # the URL holds the query: a shared link shows the same table
    expect(page.locator("#q")).to_have_value(query)
    assert len(page.locator("#sql-result tbody tr").all()) == len(api)
    with page.expect_download() as download:
        page.click("a:text-is('Parquet')")
    import pyarrow.parquet as pq

    assert pq.read_table(download.value.path()).num_rows == len(api)


@pytest.mark.parametrize("query", ["copy events to '/tmp/out.csv'", "select * from read_text('/etc/hostname')",
                                   "select nope from runs", "delete from events"])
def test_the_sql_editor_shows_the_services_error_for_a_refused_query(page, base, query):
    expect = _expect()
    api = httpx.post(f"{base}/sql", json={"query": query})
    response = page.goto(f"{base}/ui/sql?{urlencode({'q': query})}")
    assert response.status == api.status_code == 400
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
