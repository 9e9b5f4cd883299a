"""Review queues (`tracewh queue`), POST /labels and the labelling page (/ui/queues).

A queue is a rubric's targets put before people, each item wanting N labels by distinct
annotators; its state is the `review_queue` view over `registry` events and labels. The
page is driven in Debian's chromium (skipped, with the reason, when none is found), against
one real `tracewh serve` with a token over the demo store, plus a run whose ids are markup.
Each test uses its own queue (rubric), so the tests share the store and server.
"""

from __future__ import annotations

import html
import json
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import labels_committed, plain, serving, store_version, tracewh, write_native

import tracewh as tw
from tracewh.demo.build import build_demo
from tracewh.service.web.auth import COOKIE, session_value

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
from label_queue import label_seconds, wait_for_item  # noqa: E402

TOKEN = "queue-test-token"
SCRIPT = "<script>window.__xss = 1</script>"
IMG = '"><img src=x onerror="window.__xss = 2">'
XSS_RUN = "xss-run"


def rubric(folder: Path, name: str, where: str = "true", labels: str = "[good, bad, unsure]") -> Path:
    """A rubric whose targets are tasks of the store (`where` picks them), in a stable order."""
    path = folder / f"{name}.yaml"
    path.write_text(f"name: {name}\nversion: 1\n"
                    "targets: |\n"
                    "  select run_id || '/' || task_id as target_id, run_id, task_id, n_events\n"
                    f"  from tasks where {where} order by run_id, task_id limit 4\n"
                    "prompt: \"{{ n_events }}\"\n"
                    f"labels: {labels}\njudges: [openai:gpt-5-nano]\n", encoding="utf-8")
    return path


def hostile_rubric(folder: Path) -> Path:
    """Targets whose id and shown column are markup."""
    path = folder / "q_hostile.yaml"
    path.write_text("name: q_hostile\nversion: 1\n"
                    "targets: |\n"
                    "  select task_id as target_id, run_id, task_id, payload ->> '$.instruction' as answer\n"
                    f"  from events where run_id = '{XSS_RUN}' and kind = 'task_started' order by task_id\n"
                    "prompt: \"{{ answer }}\"\nlabels: [good, bad]\njudges: [openai:gpt-5-nano]\n", encoding="utf-8")
    return path


def rows(store: Path, query: str, params: list | None = None) -> list[dict[str, Any]]:
    return tw.open(store).sql(query, params).to_arrow_table().to_pylist()


def queue(store: Path, name: str) -> list[dict[str, Any]]:
    return rows(store, "select * from review_queue where rubric = $1 order by position", [name])


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("queue")
    wh, _ = build_demo(tmp, tasks=2)
    hostile = [{"run_id": XSS_RUN, "benchmark": "custom", "task_id": f"task {i} {IMG}", "kind": "task_started",
                "payload": {"instruction": SCRIPT + IMG}} for i in range(3)]
    wh.ingest([write_native(tmp / "xss.jsonl", hostile)])
    return wh.path


@pytest.fixture(scope="module")
def base(store) -> Iterator[str]:
    with serving(store, token=TOKEN) as url:
        yield url


@pytest.fixture
def annotators(browser, base) -> Iterator[Any]:
    """Opens a signed-in browser context per annotator, on a queue's page with the name given;
    afterwards: no dialog opened, no Content-Security-Policy violation."""
    contexts, dialogs, refused = [], [], []

    def open_as(name: str, queue_name: str) -> Any:
        context = browser.new_context()
        context.set_default_timeout(30_000)
        context.add_cookies([{"name": COOKIE, "value": session_value(TOKEN), "url": base}])
        contexts.append(context)
        page = context.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
        page.goto(f"{base}/ui/queues/{queue_name}")
        page.fill("#annotator", name)  # asked once: the page keeps it in a cookie
        page.click("#annotator-form button[type=submit]")
        wait_for_item(page, "() => true")
        return page

    yield open_as
    for context in contexts:
        context.close()
    assert dialogs == [] and refused == []


def shown(page: Any) -> str:
    return page.locator("#target-id").inner_text()


def current_label(store: Path, name: str, target: str, annotator: str) -> dict[str, Any] | None:
    found = rows(store, "select label, revisions from labels where rubric = $1 and target_id = $2 and rater = $3",
                 [name, target, annotator])
    return found[0] if found else None


def committed_label(store: Path, name: str, target: str, annotator: str) -> dict[str, Any] | None:
    """The current label once the service has committed every label it answered for."""
    labels_committed(store)
    return current_label(store, name, target, annotator)


# -- the CLI and the views -----------------------------------------------------------------------

def test_queueing_a_rubric_twice_makes_one_item_per_target(store, tmp_path):
    path = rubric(tmp_path, "q_cli", "benchmark = 'delegate52'")
    first = tracewh("queue", "add", path, "--reviews", "2", "-w", store, check=True)
    assert "4 targets, 4 queued, 0 already in the queue" in first.err
    version = store_version(store)
    again = tracewh("queue", "add", path, "--reviews", "2", "-w", store, check=True)
    assert "4 targets, 0 queued, 4 already in the queue" in again.err
    assert store_version(store) == version  # nothing written
    items = queue(store, "q_cli")
    assert [i["position"] for i in items] == [0, 1, 2, 3] and {i["reviews"] for i in items} == {2}
    assert all(i["run_id"] and i["task_id"] and i["target_id"] == f"{i['run_id']}/{i['task_id']}" for i in items)
    assert rows(store, "select count(*) as n from events where kind = 'registry' and run_id = 'queue:q_cli'") == [{"n": 4}]

    refused = tracewh("queue", "add", rubric(tmp_path, "q_bad", "no_such_column"), "-w", store)
    assert refused.code == 2 and "q_bad.yaml, field 'targets': the query failed" in plain(refused.err)
    assert store_version(store) == version


def test_an_item_needs_its_reviews_from_distinct_annotators(store, tmp_path):
    tracewh("queue", "add", rubric(tmp_path, "q_reviews", "benchmark = 'entcollabbench'"), "--reviews", "2", "-w", store,
            check=True)
    first = queue(store, "q_reviews")[0]["target_id"]
    label = ("label", "--rubric", "q_reviews", "--target", first, "-w", store)
    tracewh(*label, "--label", "good", "--annotator", "ann", check=True)
    tracewh(*label, "--label", "bad", "--annotator", "ann", check=True)  # a correction: still one review
    item = queue(store, "q_reviews")[0]
    assert (item["labels"], item["done"], item["annotators"]) == (1, False, ["ann"])
    assert tw.open(store).next_item("q_reviews", "ann")["target_id"] != first  # she labelled it
    assert tw.open(store).next_item("q_reviews", "bob")["target_id"] == first

    tracewh(*label, "--label", "good", "--annotator", "bob", check=True)
    item = queue(store, "q_reviews")[0]
    assert (item["labels"], item["done"], item["annotators"]) == (2, True, ["ann", "bob"])
    assert tw.open(store).next_item("q_reviews", "carol")["target_id"] != first  # done: nobody is asked again
    status = tracewh("queue", "status", "q_reviews", "-f", "csv", "-w", store, check=True)
    assert status.out.splitlines() == ["rubric,annotator,labelled,items,done,remaining",
                                          "q_reviews,ann,1,4,1,3", "q_reviews,bob,1,4,1,3"]


# -- POST /labels ----------------------------------------------------------------------------------

def test_post_labels_needs_the_ingest_token_and_answers_once_spooled(store, base, tmp_path):
    tracewh("queue", "add", rubric(tmp_path, "q_http", "benchmark = 'decisionbench'"), "-w", store, check=True)
    targets = [i["target_id"] for i in queue(store, "q_http")]
    one = {"rubric": "q_http", "target_id": targets[0], "label": "good", "annotator": "ann", "note": "fine"}
    version = store_version(store)
    assert httpx.post(base + "/labels", json=one).status_code == 401
    assert httpx.post(base + "/labels", json=one, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert store_version(store) == version

    auth = {"Authorization": f"Bearer {TOKEN}"}
    answer = httpx.post(base + "/labels", json=one, headers=auth)
    assert answer.status_code == 200 and answer.json() == {"added": 1, "superseded": 0, "unchanged": 0}
    assert committed_label(store, "q_http", targets[0], "ann") == {"label": "good", "revisions": 0}
    many = [one | {"label": "bad"}, {"rubric": "q_http", "target_id": targets[1], "score": None, "label": "good",
                                     "annotator": "bob"}]
    assert httpx.post(base + "/labels", json=many, headers=auth).json() == {"added": 2, "superseded": 1, "unchanged": 0}
    assert committed_label(store, "q_http", targets[0], "ann") == {"label": "bad", "revisions": 1}
    run_id, task_id = targets[0].split("/", 1)  # the label carries the queued target's run and task
    assert rows(store, "select run_id, task_id from labels where rubric = 'q_http' and rater = 'ann'") == [
        {"run_id": run_id, "task_id": task_id}]

    version = store_version(store)
    for body, says in [({**one, "annotator": None}, "POST /labels, item 1, field 'annotator': is required"),
                       ({**one, "score": 3}, "item 1, field 'label': give either a label or a score"),
                       ([one, {**one, "colour": "red"}], "POST /labels, item 2, field 'colour': unknown field"),
                       ("not a label", "POST /labels, item 1: a label is a JSON object"),
                       ({**one, "label": "nope"}, "field 'label': 'nope' is not in rubric 'q_http''s label set")]:
        refused = httpx.post(base + "/labels", json=body, headers=auth)
        assert refused.status_code == 422 and says in refused.json()["detail"], refused.text
        assert "\n" not in refused.json()["detail"]
    assert store_version(store) == version


def test_post_labels_is_off_without_a_token(store):
    with serving(store) as open_base:
        refused = httpx.post(open_base + "/labels", json={"rubric": "r", "target_id": "t", "label": "x", "annotator": "a"})
    assert refused.status_code == 403 and "ingest is disabled" in refused.json()["detail"]


# -- the labelling page ------------------------------------------------------------------------------

def test_keyboard_labelling_skip_and_undo(annotators, store, tmp_path, request):
    tracewh("queue", "add", rubric(tmp_path, "q_keys", "benchmark = 'delegate52'"), "-w", store, check=True)
    targets = [i["target_id"] for i in queue(store, "q_keys")]
    page = annotators("ann", "q_keys")
    assert shown(page) == targets[0]
    assert page.locator("#trace [role=treeitem]").count() > 0  # the target's trace, as the trace page draws it
    took = [label_seconds(page, "1")]  # 1: the first label, "good"
    assert shown(page) == targets[1]
    assert committed_label(store, "q_keys", targets[0], "ann") == {"label": "good", "revisions": 0}

    page.keyboard.press("s")  # skip targets[1] for this session
    wait_for_item(page, f"(t) => t === {json.dumps(targets[2])}")
    page.keyboard.press("u")  # undo: back to the previous item labelled...
    wait_for_item(page, f"(t) => t === {json.dumps(targets[0])}")
    assert page.locator("#current-label").inner_text() == "good"
    took.append(label_seconds(page, "2"))  # ...and label it again: "bad" replaces "good"
    assert committed_label(store, "q_keys", targets[0], "ann") == {"label": "bad", "revisions": 1}
    assert shown(page) == targets[2]  # targets[1] stays skipped
    took.append(label_seconds(page, "3"))
    assert shown(page) == targets[3]
    page.reload()
    wait_for_item(page, "() => true")
    assert shown(page) == targets[3]
    request.config.pluginmanager.get_plugin("terminalreporter").write_line(
        f"labelling page: keypress to next item, median {statistics.median(took) * 1000:.0f} ms over {len(took)} "
        "labels (bench/label_queue.py is the record; target <= 300 ms)")


def test_two_annotators_each_see_their_own_next_item(annotators, store, base, tmp_path):
    tracewh("queue", "add", rubric(tmp_path, "q_two", "benchmark = 'entcollabbench'"), "--reviews", "2", "-w", store,
            check=True)
    targets = [i["target_id"] for i in queue(store, "q_two")]
    ann, bob = annotators("ann", "q_two"), annotators("bob", "q_two")
    assert shown(ann) == shown(bob) == targets[0]
    label_seconds(ann, "1")
    assert shown(ann) == targets[1]
    bob.reload()
    wait_for_item(bob, "() => true")
    assert shown(bob) == targets[0]  # ann's label is one review of two: bob is still asked
    label_seconds(bob, "2")
    assert shown(bob) == targets[1]
    labels_committed(store)
    assert queue(store, "q_two")[0]["done"]
    carol = annotators("carol", "q_two")
    assert shown(carol) == targets[1]  # targets[0] is done
    assert "1 labelled" in bob.locator("#queue-progress").inner_text()
    bob.goto(base + "/ui/queues")  # every queue's progress, per annotator
    progress = [row.split("\t") for row in bob.locator("#progress tbody tr").all_inner_texts()]
    assert ["q_two", "ann", "1", "3", "1", "4"] in progress and ["q_two", "bob", "1", "3", "1", "4"] in progress
    two = next(row for row in bob.locator("#queues tbody tr").all_inner_texts() if row.startswith("q_two"))
    assert two.split("\t") == ["q_two", "4", "1", "2", "8"]  # items, done, labels given, labels wanted


def test_hostile_target_stays_inert(annotators, store, tmp_path):
    tracewh("queue", "add", hostile_rubric(tmp_path), "-w", store, check=True)
    targets = [i["target_id"] for i in queue(store, "q_hostile")]
    page = annotators("eve " + IMG, "q_hostile")
    assert shown(page) == targets[0] and IMG in targets[0]  # the id, as text
    assert page.locator("pre.field").first.inner_text() == SCRIPT + IMG
    assert page.locator("#who").inner_text() == "eve " + IMG
    assert page.locator("main img").count() == 0 and page.locator("main script:not([src])").count() == 0
    label_seconds(page, "1")
    assert shown(page) == targets[1]
    assert page.evaluate("window.__xss") is None
    assert committed_label(store, "q_hostile", targets[0], "eve " + IMG) == {"label": "good", "revisions": 0}


def test_labelling_forms_refuse_other_sites(base, store, tmp_path):
    tracewh("queue", "add", rubric(tmp_path, "q_site", "benchmark = 'agentdemo'"), "-w", store, check=True)
    target = queue(store, "q_site")[0]["target_id"]
    cookies = {COOKIE: session_value(TOKEN), "tracewh_annotator": "bWFsbG9yeQ=="}  # mallory
    version = store_version(store)
    refused = httpx.post(f"{base}/ui/queues/q_site/label", data={"target_id": target, "label": "good"}, cookies=cookies,
                         headers={"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"})
    assert refused.status_code == 403
    unsigned = httpx.post(f"{base}/ui/queues/q_site/label", data={"target_id": target, "label": "good"},
                          cookies={"tracewh_annotator": "bWFsbG9yeQ=="})
    assert unsigned.status_code in (303, 401) and unsigned.headers.get("location", "/ui/login").startswith("/ui/login")
    wrong = httpx.post(f"{base}/ui/queues/q_site/label", data={"target_id": target, "label": "nope"}, cookies=cookies)
    assert wrong.status_code == 422 and "'nope' is not in rubric 'q_site'" in html.unescape(wrong.text)
    assert store_version(store) == version
