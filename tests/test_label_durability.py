"""POST /labels (and the labelling page) answer once a label is durable in the store's labels
spool (WAREHOUSE/_spool/labels/), not once it is committed (issue #34): what that promise means.

- A label answered 200 survives kill -9 of `tracewh serve`: restarted, the service commits the
  spool, every acknowledged label exactly once, corrections still superseding what they corrected.
- A correction given while the label it corrects is still in the spool supersedes that label.
- A refused label (422) puts nothing in the spool.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import httpx
import pytest
from hardening import count
from helpers import labels_committed, llm_call, store_version, tracewh, write_native
from test_otlp_durability import TOKEN, Serve, serve, writer_lock_held

import tracewh as tw
from tracewh.warehouse.wal import read_records

AUTH = {"Authorization": f"Bearer {TOKEN}"}
KILL_TRIALS = count(ci=2, heavy=20)
LABELS = ("good", "bad", "unsure")


def store(folder: Path) -> Path:
    """A store holding one small run (labels need a store; their rubric need not be queued)."""
    wh = folder / "wh"
    folder.mkdir(parents=True, exist_ok=True)
    tracewh("ingest", write_native(folder / "run.jsonl", [llm_call("r", i) for i in range(3)]), "-w", wh, check=True)
    return wh


def spooled(wh: Path) -> int:
    return sum(1 for segment in (wh / "_spool" / "labels").glob("*.wal") for _ in read_records(segment))


def history(wh: Path) -> list[dict]:
    return tw.open(wh).sql("select target_id, rater, label, superseded from judgments where rater_kind = 'human' "
                           "order by ts, seq").to_arrow_table().to_pylist()


def current(wh: Path) -> dict[tuple[str, str], str]:
    rows = tw.open(wh).sql("select target_id, rater, label from labels where rater_kind = 'human'").fetchall()
    return {(t, r): label for t, r, label in rows}


def label(target: str, annotator: str, value: str) -> dict[str, str]:
    return {"rubric": "r", "target_id": target, "annotator": annotator, "label": value}


def kill_right_after_a_200(wh: Path, rng: random.Random) -> tuple[list[tuple[str, str, str]], int]:
    """Three annotators label (and relabel) six targets as fast as they are answered; right after the
    n-th 200 (n drawn at random) the server is killed -9. Returns what every 200 acknowledged, in
    order per annotator, and how many of those answers said a label was added."""
    acknowledged: list[tuple[str, str, str]] = []
    added = 0
    lock, enough = threading.Lock(), threading.Event()
    kill_after = rng.randint(5, 40)

    def annotate(name: str, seed: int) -> None:
        nonlocal added
        own = random.Random(seed)
        with httpx.Client(headers=AUTH) as client:
            while not enough.is_set():
                target, value = f"t{own.randrange(6)}", own.choice(LABELS)
                try:
                    answer = client.post(f"{server.base}/labels", json=label(target, name, value), timeout=30)
                except httpx.TransportError:
                    return  # killed
                if answer.status_code == 200:
                    with lock:
                        acknowledged.append((name, target, value))
                        added += answer.json()["added"]
                        if len(acknowledged) >= kill_after:
                            enough.set()

    server = Serve(wh)
    annotators = [threading.Thread(target=annotate, args=(name, rng.random())) for name in ("ann", "bob", "cy")]
    for thread in annotators:
        thread.start()
    enough.wait(timeout=60)
    with lock:  # no 200 is counted after the kill
        server.kill()
        answered, added_then = list(acknowledged), added
    enough.set()
    for thread in annotators:
        thread.join()
    return answered, added_then


@pytest.mark.heavy
def test_every_acknowledged_label_is_stored_exactly_once_after_kill_9(tmp_path):
    rng = random.Random(35)
    for trial in range(KILL_TRIALS):
        wh = store(tmp_path / f"trial-{trial}")
        acknowledged, added = kill_right_after_a_200(wh, rng)
        with serve(wh):  # restarted: the spool is committed in the background
            labels_committed(wh)
        stored = history(wh)
        # every label answered as added is one stored event; nothing is stored twice, or beyond them
        # but what may have been added before the kill and not yet answered (one per annotator at most)
        assert added <= len(stored) <= added + 3, (trial, added, len(stored))
        last = {}
        for name, target, value in acknowledged:
            last[(target, name)] = value
        now = current(wh)
        for key, value in last.items():  # the newest acknowledged label is current (or one given after it)
            assert key in now, f"trial {trial}: the acknowledged label {key} was lost"
        assert sum(not row["superseded"] for row in stored) == len(now)  # one current label a key


def test_labels_acknowledged_while_commits_wait_are_committed_on_restart(tmp_path):
    wh = store(tmp_path)
    version = store_version(wh)
    with writer_lock_held(wh):  # nothing commits: every 200 is in the spool only when the server dies
        server = Serve(wh)
        answers = [httpx.post(f"{server.base}/labels", json=body, headers=AUTH, timeout=30).json() for body in
                   (label("t1", "ann", "good"), label("t1", "ann", "bad"), label("t2", "bob", "good"),
                    label("t2", "bob", "good"))]
        refused = httpx.post(f"{server.base}/labels", json={**label("t3", "ann", "x"), "score": 1}, headers=AUTH)
        server.kill()
    # the correction superseded the label still in the spool; the same label again wrote nothing
    assert answers == [{"added": 1, "superseded": 0, "unchanged": 0}, {"added": 1, "superseded": 1, "unchanged": 0},
                       {"added": 1, "superseded": 0, "unchanged": 0}, {"added": 0, "superseded": 0, "unchanged": 1}]
    assert refused.status_code == 422
    assert spooled(wh) == 3 and store_version(wh) == version  # the refused label is not in it
    with serve(wh):
        labels_committed(wh)
    assert history(wh) == [{"target_id": "t1", "rater": "ann", "label": "good", "superseded": True},
                           {"target_id": "t1", "rater": "ann", "label": "bad", "superseded": False},
                           {"target_id": "t2", "rater": "bob", "label": "good", "superseded": False}]
    with serve(wh):  # started again over a spool already committed: nothing more
        time.sleep(0.5)
    assert len(history(wh)) == 3
