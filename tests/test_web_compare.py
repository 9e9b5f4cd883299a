"""The compare page of `tracewh serve` (issue #36), in a real browser: Debian's chromium driven by
Playwright against a real `tracewh serve` on 127.0.0.1, over the demo store plus two runs whose
ids, task ids and payloads are markup.

What the page shows is held to what Warehouse.compare computes for the same question (never a
number written here); the side-by-side page to the traces that comparison names.
Skipped, with the reason, only when no chromium can be found (see conftest.py `browser`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from helpers import serving, watched_page, write_native

import tracewh
from tracewh.demo.build import build_demo
from tracewh.service.web.render import cell, table_cells
from tracewh.service.web.trace_rows import trace_rows

TOKEN = "compare-test-token"
SCRIPT = "<script>window.__xss = 1</script>"
IMG = '"><img src=x onerror="window.__xss = 2">'
XSS_A, XSS_B = "xss-a " + IMG, "xss-b " + SCRIPT
XSS_TASKS = [f"task {i} {IMG}" for i in range(3)]
SUMMARY = ["n_pairs", "unmatched_a", "unmatched_b", "mean_a", "mean_b", "diff", "ci_low", "ci_high", "wins", "ties",
           "losses", "p_value"]
DCB = {"view": "dcb_tasks", "column": "quality", "by": "condition", "a": "blind", "b": "aware-c2"}


def xss_runs() -> list[dict[str, Any]]:
    """Two runs of three tasks each, every id, agent and payload markup; scored differently."""
    events = []
    for run, offset in ((XSS_A, 0.0), (XSS_B, 0.25)):
        for i, task in enumerate(XSS_TASKS):
            base = {"run_id": run, "benchmark": "custom", "task_id": task, "trace_id": f"t-{offset}-{i}"}
            events += [
                {**base, "kind": "task_started", "span_id": "root", "agent": SCRIPT, "payload": {"instruction": SCRIPT}},
                {**base, "kind": "llm_call", "span_id": "c1", "parent_span_id": "root", "agent": SCRIPT, "model": "m" + IMG,
                 "prompt_tokens": 5, "completion_tokens": 2, "payload": {"messages": [{"role": "user", "content": SCRIPT}],
                                                                         "content": IMG}},
                {**base, "kind": "score", "parent_span_id": "root", "score": i / 4 + offset, "payload": {"metric": IMG}},
            ]
    return events


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("web compare")  # a space in the path
    wh, _ = build_demo(tmp, tasks=2)
    wh.ingest([write_native(tmp / "xss.jsonl", xss_runs())])
    return wh.path


@pytest.fixture(scope="module")
def base(store) -> Iterator[str]:
    with serving(store) as url:
        yield url


@pytest.fixture
def page(browser, base) -> Iterator[Any]:
    """A fresh browser context; afterwards: no dialog opened, no CSP violation, nothing fetched elsewhere."""
    page = watched_page(browser, base)
    yield page
    page.context.close()
    assert page.dialogs == [] and page.elsewhere == [] and page.refused == []


def _expect():
    from playwright.sync_api import expect

    return expect


def _computed(store: Path, question: dict[str, str], **options: Any) -> Any:
    """What Warehouse.compare says, on a sandboxed read as the service opens, for the question the page
    was asked (its defaults: n_boot 5000, seed 0)."""
    wh = tracewh.Warehouse(store, sandbox=True)
    return wh.compare(f"{question['view']}.{question['column']}", by=question["by"], a=question["a"], b=question["b"],
                      **options)


def _check_summary(page: Any, expected: dict[str, Any]) -> None:
    """The summary row: the site's rounding of each of compare's numbers, the exact value as the title."""
    expect = _expect()
    expect(page.locator("#compare-summary thead th")).to_have_text([*SUMMARY, "test"])
    cells = page.locator("#compare-summary tbody td")
    formatted = table_cells([tuple(expected[k] for k in SUMMARY)])[0]
    for i, (name, want) in enumerate(zip(SUMMARY, formatted)):
        shown = cells.nth(i)
        if expected[name] is None:
            expect(shown).to_have_text("n/a")
            continue
        expect(shown).to_have_text(want.text)
        assert shown.evaluate("e => getComputedStyle(e).textAlign") == "right", name
        if isinstance(expected[name], float):
            assert shown.get_attribute("title") == cell(expected[name])
            assert float(shown.get_attribute("title")) == pytest.approx(expected[name], rel=1e-5, abs=1e-12)
    expect(cells.nth(len(SUMMARY))).to_have_text(expected["test"])


def test_choosing_two_conditions_shows_what_compare_computes_and_opens_a_pair_side_by_side(page, base, store):
    expect = _expect()
    page.goto(base + "/")
    page.click("header nav >> text=Compare")
    expect(page).to_have_url(base + "/ui/compare")
    with page.expect_navigation():  # choosing the view sends the form: the view's columns come back
        page.select_option("#c-view", "dcb_tasks")
    page.select_option("#c-column", "quality")
    with page.expect_navigation():  # choosing `by` offers its values for the two groups
        page.select_option("#c-by", "condition")
    values = page.locator("#c-a option").all_inner_texts()[1:]
    assert values == sorted(r for r, in tracewh.open(store).sql("select distinct condition from dcb_tasks").fetchall())
    page.select_option("#c-a", "blind")
    page.select_option("#c-b", "aware-c2")
    with page.expect_navigation():
        page.click("#compare-submit")

    result = _computed(store, DCB)
    expected = result.to_dict()
    wh = tracewh.open(store)
    _check_summary(page, expected)
    assert {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items() if k in DCB} == DCB  # the URL holds it
    assert page.locator("#compare-figure").get_attribute("src").startswith("data:image/svg+xml;base64,")

    # Unmatched items: counted and listed (Stage-1 tasks ran blind only)
    n_unmatched = expected["unmatched_a"] + expected["unmatched_b"]
    assert n_unmatched > 0
    expect(page.locator("#unmatched")).to_contain_text(f"Unmatched items ({n_unmatched})")
    listed = page.locator("#compare-unmatched tbody td:nth-child(2)").all_inner_texts()
    assert sorted(listed) == sorted(u["task_id"] for u in expected["unmatched"])

    # Every pair, largest |b - a| first, with compare's own values
    rows = page.locator("#compare-items tbody tr")
    expect(rows).to_have_count(expected["n_pairs"])
    diffs = [float(t) for t in page.locator("#compare-items tbody td:nth-child(4)").evaluate_all(
        "all => all.map(e => e.title)")]
    assert [abs(d) for d in diffs] == sorted((abs(d) for d in diffs), reverse=True)
    by_task = {i["task_id"]: i for i in result.items}
    first = rows.first.locator("td").first.inner_text()
    assert abs(by_task[first]["diff"]) == max(abs(i["diff"]) for i in result.items)
    assert diffs[0] == pytest.approx(by_task[first]["diff"], rel=1e-5)

    # The shared address shows the same numbers
    page.goto(base + page.locator("#compare-share").get_attribute("href"))
    _check_summary(page, expected)

    # One pair, both traces side by side
    with page.expect_navigation():
        page.locator("#compare-items tbody tr").first.locator("a.pair-link").click()
    expect(page.locator('#a-trace[data-ready="true"]')).to_be_visible()
    expect(page.locator('#b-trace[data-ready="true"]')).to_be_visible()
    item = by_task[first]
    for side in ("a", "b"):
        shown = page.locator(f"#side-{side} p.note a")
        run, task = shown.nth(0).inner_text(), shown.nth(1).inner_text()
        assert {"run_id": run, "task_id": task} in item[f"traces_{side}"] and task == first
        expect(page.locator(f'#{side}-trace [role="treeitem"]')).to_have_count(len(trace_rows(wh.trace(run, task))))
    # Default: of the traces each side averages, the two whose run ids look most alike (the same model's runs)
    run_a, run_b = (page.locator(f"#side-{s} p.note a").first.inner_text() for s in ("a", "b"))
    models = dict(wh.sql("select run_id, model from runs").fetchall())
    assert models[run_a] == models[run_b]
    # Each panel shows its own payloads
    page.locator('#b-trace [role="treeitem"]').first.click()
    expect(page.locator("#b-payload h2")).to_be_visible()
    expect(page.locator("#a-payload h2")).to_have_count(0)
    # Another trace of side a, chosen in its list; b stays
    options = page.locator("#ta option")
    if options.count() > 1:
        chosen = options.nth(options.count() - 1).inner_text()
        page.select_option("#ta", index=options.count() - 1)
        with page.expect_navigation():
            page.locator("#side-a form button[type=submit]").click()
        assert page.locator("#side-a p.note a").first.inner_text() == chosen.split(" · ")[0]
        assert page.locator("#side-b p.note a").first.inner_text() == run_b
    with page.expect_navigation():
        page.click("nav.crumbs a")
    _check_summary(page, expected)


def test_more_pairs_than_a_page_show_more_on_demand(page, base, store):
    """Matched per model and task, the demo has more pairs than the first hundred shown."""
    expect = _expect()
    question = DCB | {"match": ["model", "task_id"]}
    result = _computed(store, DCB, match=["model", "task_id"], n_boot=200)
    assert result.n_pairs > 100
    page.goto(f"{base}/ui/compare?{urlencode({**DCB, 'n_boot': 200}, doseq=True)}&match=model&match=task_id")
    assert [o for o in page.locator("#c-match option:checked").all_inner_texts()] == question["match"]
    expect(page.locator("#compare-items tbody tr")).to_have_count(100)
    page.click("#compare-more")
    expect(page.locator("#compare-items tbody tr")).to_have_count(result.n_pairs)
    expect(page.locator("#compare-more")).to_have_count(0)
    _check_summary(page, result.to_dict())


def _expected_error(store: Path, question: dict[str, str], **options: Any) -> str:
    with pytest.raises(tracewh.errors.TracewhError) as raised:
        _computed(store, question, **options)
    return str(raised.value)


@pytest.mark.parametrize("changes, options", [
    ({"column": "model"}, {}),  # not a number
    ({"column": "nope"}, {}),  # no such column
    ({"b": "aware-c9"}, {}),  # a group with no rows
    ({"where": "1 = 1; select 2"}, {}),  # two statements
    ({"where": "(select count(*) from read_text('/etc/hostname')) > 0"}, {}),  # a file outside the store
    # Fails as it runs, on one model's rows only: with every row failing, which row DuckDB's
    # threads meet first (and so the value the message names) changes from run to run.
    ({"where": "cast(case when model = 'gpt-5.4' then model else '1' end as int) = 1"}, {}),
])
def test_a_bad_question_is_one_line_on_the_page_with_status_400(base, store, changes, options):
    question = DCB | changes
    where = question.pop("where", None)
    message = _expected_error(store, question, where=where, **options)
    answer = httpx.get(base + "/ui/compare", params={**question, **({"where": where} if where else {})}, timeout=60)
    assert answer.status_code == 400, answer.text
    shown = re.search(r'<div class="error" role="alert">.*?<p>(.*?)</p>', answer.text, re.S).group(1)
    assert _unescape(shown) == message.replace(str(store), "<store>")
    assert 'id="compare-form"' in answer.text and "Traceback" not in answer.text


@pytest.mark.parametrize("params, status, words", [
    ({"view": "nosuch"}, 400, "no view named 'nosuch'"),
    (DCB | {"n_boot": "lots"}, 400, "n_boot: 'lots' is not a whole number"),
    (DCB | {"n_boot": "10000000"}, 400, "n_boot: 10000000 is out of range"),
    (DCB | {"by": "nope"}, 400, "by: dcb_tasks has no column 'nope'"),
])
def test_bad_page_parameters_are_400_never_500(base, params, status, words):
    answer = httpx.get(base + "/ui/compare", params=params, timeout=60)
    assert answer.status_code == status and words in _unescape(answer.text), answer.text


def test_the_pair_page_refuses_what_is_no_pair(base):
    missing = httpx.get(base + "/ui/compare/pair", params=DCB | {"k.task_id": "no-such-task"}, timeout=60)
    assert missing.status_code == 404
    assert "no pair of this comparison has task_id = 'no-such-task'" in _unescape(missing.text)
    relays = {"view": "d52_relays", "column": "rs_end", "by": "distractors", "a": "false", "b": "true",
              "match": ["model", "mode", "env_id"]}
    no_traces = httpx.get(base + "/ui/compare/pair", params=relays | {"k.model": "gpt-5.4", "k.mode": "direct",
                                                                        "k.env_id": "accounting1"}, timeout=60)
    assert no_traces.status_code == 400 and "d52_relays has no run_id and task_id" in no_traces.text
    assert httpx.get(base + "/ui/compare/pair", params={"view": "dcb_tasks"}, timeout=60).status_code == 400


def test_an_error_shows_in_the_browser_beside_the_form(page, base, store):
    expect = _expect()
    message = _expected_error(store, DCB | {"b": "aware-c9"})
    with page.expect_response(lambda r: "/ui/compare" in r.url) as answer:
        page.goto(f"{base}/ui/compare?{urlencode(DCB | {'b': 'aware-c9'})}")
    assert answer.value.status == 400
    expect(page.locator(".error")).to_contain_text(message)
    expect(page.locator("#c-by")).to_have_value("condition")  # the form keeps the question
    expect(page.locator("#compare-result")).to_have_count(0)


def test_a_view_page_links_its_comparison(page, base):
    expect = _expect()
    page.goto(base + "/ui/views/dcb_tasks")
    page.click("#view-compare")
    expect(page).to_have_url(f"{base}/ui/compare?view=dcb_tasks")
    expect(page.locator("#c-column option")).to_contain_text(["choose…", "trial", "quality"])
    page.goto(base + "/ui/views/span_agents")  # no numeric column: nothing to compare
    expect(page.locator("#view-compare")).to_have_count(0)


def test_stored_markup_stays_text_on_both_pages(page, base, store):
    expect = _expect()
    question = {"view": "scores", "column": "score", "by": "run_id", "a": XSS_A, "b": XSS_B}
    result = _computed(store, question)
    assert result.n_pairs == len(XSS_TASKS)
    page.goto(f"{base}/ui/compare?{urlencode(question)}")
    expect(page.locator("#compare-items tbody tr")).to_have_count(len(XSS_TASKS))
    expect(page.locator("#compare-result h2").first).to_contain_text(SCRIPT)  # shown, as text
    expect(page.locator("#c-a option", has_text=XSS_A)).to_have_count(1)
    _check_summary(page, result.to_dict())
    with page.expect_navigation():
        page.locator("a.pair-link").first.click()
    expect(page.locator('#a-trace [role="treeitem"]').first).to_be_visible()
    for side in ("a", "b"):
        page.locator(f'#{side}-trace [role="treeitem"]').nth(1).click()
        expect(page.locator(f"#{side}-payload h2")).to_be_visible()
    expect(page.get_by_text(SCRIPT).first).to_be_attached()
    for address in (page.url, f"{base}/ui/compare?{urlencode(question)}"):
        page.goto(address)
        assert page.evaluate("window.__xss") is None
        assert page.locator("img[src=x], [onerror]").count() == 0
        scripts = page.locator("script").evaluate_all("all => all.map(s => s.getAttribute('src'))")
        assert scripts == ["/ui/static/htmx.min.js", "/ui/static/tracewh.js"]


def test_a_token_protects_the_page_unless_reads_are_public(store, new_service):
    """A real `tracewh serve` with a token; the same app in process with --public-read (a second
    server process would double the test's time for the one line it checks)."""
    address = f"/ui/compare?{urlencode(DCB | {'n_boot': 100})}"
    with serving(store, token=TOKEN) as base:
        for path in (address, f"/ui/compare/pair?{urlencode(DCB | {'k.task_id': 'bfcl/2002'})}"):
            refused = httpx.get(base + path)
            assert refused.status_code == 303 and urlsplit(refused.headers["location"]).path == "/ui/login"
        signed = httpx.get(base + "/ui/compare?view=dcb_tasks", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        assert signed.status_code == 200 and 'id="c-column"' in signed.text
    public = new_service(store, token=TOKEN, public_read=True)
    assert public.get("/ui/compare?view=dcb_tasks", follow_redirects=False).status_code == 200


def _unescape(text: str) -> str:
    import html

    return html.unescape(text)
