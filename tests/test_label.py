"""`tracewh label` and `tracewh export-labels`: people's labels as judgment events, corrections
as superseding events (the history stays), and labelled targets exported as an eval set."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers import store_version, tracewh, write_native

import tracewh as tw


def one_run(tmp_path: Path) -> Path:
    """A store with one run (labels need no judge run before them)."""
    wh = tmp_path / "wh"
    tw.open(wh).ingest([write_native(tmp_path / "run.jsonl", [
        {"run_id": "run-a", "benchmark": "custom", "kind": "message", "seq": 1, "task_id": "t1",
         "payload": {"role": "assistant", "text": "hello"}}])])
    return wh


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return one_run(tmp_path)


@pytest.fixture(scope="module")
def untouched_store(tmp_path_factory) -> Path:
    """One store for the tests that must leave it as it was (each checks that it did)."""
    return one_run(tmp_path_factory.mktemp("untouched"))


def label(wh: Path, *args: str | Path):
    return tracewh("label", *args, "-w", wh, env=os.environ | {"TRACEWH_HOME": str(wh.parent / "home")})


def rows(wh: Path, query: str) -> list[dict]:
    return tw.open(wh).query(query).arrow().to_pylist()


def test_a_later_label_supersedes_the_earlier_and_the_history_stays(store):
    assert label(store, "--rubric", "tone", "--target", "t1", "--label", "polite", "--annotator", "ann").code == 0
    first = rows(store, "select event_id from labels")[0]["event_id"]
    result = label(store, "--rubric", "tone", "--target", "t1", "--label", "rude", "--annotator", "ann",
                   "--note", "second look")
    assert result.code == 0 and "1 label added (1 replacing an earlier one)" in result.err
    current = rows(store, "select * from labels where rubric = 'tone'")
    assert [(r["rater"], r["rater_kind"], r["label"], r["note"], r["revisions"]) for r in current] == [
        ("ann", "human", "rude", "second look", 1)]
    history = rows(store, "select label, superseded, supersedes, run_id, agent from judgments "
                          "where rubric = 'tone' order by ts")
    assert [(h["label"], h["superseded"], h["supersedes"]) for h in history] == [
        ("polite", True, None), ("rude", False, first)]
    assert {(h["run_id"], h["agent"]) for h in history} == {("labels:tone", "ann")}

    # the same label again writes nothing; another annotator's label is their own
    version = store_version(store)
    again = label(store, "--rubric", "tone", "--target", "t1", "--label", "rude", "--annotator", "ann",
                  "--note", "second look")
    assert again.code == 0 and "0 labels added (0 replacing an earlier one), 1 unchanged" in again.err
    assert store_version(store) == version
    label(store, "--rubric", "tone", "--target", "t1", "--label", "polite", "--annotator", "bob")
    assert len(rows(store, "select * from labels where rubric = 'tone'")) == 2

    # changing back to an earlier label is a new revision, not the old event
    label(store, "--rubric", "tone", "--target", "t1", "--label", "polite", "--annotator", "ann")
    latest = rows(store, "select label, revisions from labels where rater = 'ann'")
    assert latest == [{"label": "polite", "revisions": 2}]


def test_labels_from_csv_and_jsonl_files(store, tmp_path):
    csv_file = tmp_path / "labels.csv"
    csv_file.write_text("target_id,rubric,score,annotator,note\n"
                        "t1,quality,7.5,ann,\n"
                        "t2,quality,3,ann,too short\n")
    assert label(store, "--from", csv_file).code == 0
    jsonl_file = tmp_path / "labels.jsonl"
    jsonl_file.write_text(json.dumps({"target_id": "t1", "score": 8}) + "\n"
                          + json.dumps({"target_id": "t2", "score": 2, "note": "missing a step"}) + "\n")
    assert label(store, "--from", jsonl_file, "--rubric", "quality", "--annotator", "bob").code == 0
    got = rows(store, "select target_id, rater, value, note from labels where rubric = 'quality' order by all")
    assert got == [{"target_id": "t1", "rater": "ann", "value": 7.5, "note": None},
                   {"target_id": "t1", "rater": "bob", "value": 8.0, "note": None},
                   {"target_id": "t2", "rater": "ann", "value": 3.0, "note": "too short"},
                   {"target_id": "t2", "rater": "bob", "value": 2.0, "note": "missing a step"}]
    assert [b.source for b in tw.open(store).log()][-1] == "tracewh label"  # through the ledger


RUBRIC = """\
name: tone
version: 2
targets: select event_id as target_id from events
prompt: "{{ target_id }}"
labels: [polite, rude]
judges: [openai:gpt-5-nano]
"""


@pytest.mark.parametrize(("args", "says"), [
    (["--rubric", "tone", "--target", "t1", "--label", "grumpy", "--annotator", "ann", "--rubric-file", "{rubric}"],
     "field 'label': 'grumpy' is not in rubric 'tone''s label set (polite, rude)"),
    (["--rubric", "tone", "--target", "t1", "--score", "3", "--annotator", "ann", "--rubric-file", "{rubric}"],
     "takes a label (polite, rude), not a score"),
    (["--rubric", "other", "--target", "t1", "--label", "rude", "--annotator", "ann", "--rubric-file", "{rubric}"],
     "field 'rubric': rubric 'other' is not the rubric file's"),
    (["--rubric", "q", "--target", "t1", "--score", "nan", "--annotator", "ann"], "field 'score': 'nan' is not a finite number"),
    (["--rubric", "q", "--target", "t1", "--score", "inf", "--annotator", "ann"], "is not a finite number"),
    (["--rubric", "q", "--target", "t1", "--label", " ", "--annotator", "ann"], "field 'label': is required"),
    (["--rubric", "q", "--target", "t1", "--label", "a", "--score", "1", "--annotator", "ann"], "not both or neither"),
    (["--rubric", "q", "--target", "t1", "--label", "a"], "missing --annotator"),
])
def test_a_bad_label_is_refused_in_one_line_and_nothing_is_written(untouched_store, tmp_path, args, says):
    store = untouched_store
    rubric = tmp_path / "tone.yaml"
    rubric.write_text(RUBRIC)
    version = store_version(store)
    result = label(store, *[a.replace("{rubric}", str(rubric)) for a in args])
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1
    assert says in " ".join(result.err.split())
    assert store_version(store) == version


def test_a_bad_row_in_a_file_names_file_line_and_field_and_writes_nothing(store, tmp_path):
    bad = tmp_path / "labels.csv"
    bad.write_text("target_id,rubric,label,annotator\nt1,tone,polite,ann\nt2,tone,,ann\n")
    version = store_version(store)
    result = label(store, "--from", bad)
    assert result.code == 2 and f"{bad}, line 3, field 'label'" in result.err
    assert store_version(store) == version
    extra = tmp_path / "extra.jsonl"
    extra.write_text(json.dumps({"target_id": "t1", "rubric": "tone", "label": "a", "annotator": "x", "mood": 1}) + "\n")
    assert "field 'mood': unknown column" in label(store, "--from", extra).err


def test_labels_are_checked_against_the_label_set_the_judges_were_asked_with(store, tmp_path):
    """Without a rubric file, a rubric's LLM judgments say what it may be labelled with."""
    judged = tmp_path / "judged.jsonl"
    write_native(judged, [{"run_id": "judge:tone", "benchmark": "judging", "kind": "judgment", "seq": 1,
                           "task_id": "t1", "payload": {"rubric": "tone", "target_id": "t1", "rater": "openai:m",
                                                        "rater_kind": "llm", "label": "polite", "target_run_id": "run-a",
                                                        "reference": "polite", "label_set": ["polite", "rude"]}}])
    tw.open(store).ingest([judged])
    refused = label(store, "--rubric", "tone", "--target", "t1", "--label", "grumpy", "--annotator", "ann")
    assert refused.code == 2 and "not in rubric 'tone''s label set (polite, rude)" in " ".join(refused.err.split())
    assert label(store, "--rubric", "tone", "--target", "t1", "--label", "RUDE", "--annotator", "ann").code == 0
    mine = rows(store, "select label, run_id, reference from labels where rater = 'ann'")
    assert mine == [{"label": "rude", "run_id": "run-a", "reference": "polite"}]  # the target's run and reference


def test_export_labels_writes_labelled_targets_with_their_history(store, tmp_path):
    label(store, "--rubric", "tone", "--target", "t1", "--label", "polite", "--annotator", "ann")
    label(store, "--rubric", "tone", "--target", "t1", "--label", "rude", "--annotator", "ann")
    label(store, "--rubric", "tone", "--target", "t2", "--label", "polite", "--annotator", "bob", "--note", "fine")
    out = tmp_path / "eval.jsonl"
    result = tracewh("export-labels", out, "--rubric", "tone", "-w", store)
    assert result.code == 0 and "wrote 2 labelled targets" in result.err
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["target_id"] for r in exported] == ["t1", "t2"]
    t1 = exported[0]
    assert [(c["rater"], c["label"], c["revisions"]) for c in t1["labels"]] == [("ann", "rude", 1)]
    assert [(h["label"], h["superseded"]) for h in t1["history"]] == [("polite", True), ("rude", False)]
    assert exported[1]["labels"][0]["note"] == "fine"

    parquet = tmp_path / "eval.parquet"
    assert tracewh("export-labels", parquet, "--rubric", "tone", "-w", store).code == 0
    table = pq.read_table(parquet).to_pylist()
    assert [r["target_id"] for r in table] == ["t1", "t2"] and len(table[0]["history"]) == 2

    missing = tracewh("export-labels", out, "--rubric", "nope", "-w", store)
    assert missing.code == 2 and "no human labels for rubric 'nope'" in missing.err


def test_warehouse_label_takes_dicts_and_reports_what_it_did(store):
    wh = tw.open(store)
    first = wh.label([{"rubric": "tone", "target_id": "t1", "annotator": "ann", "label": "polite"},
                      {"rubric": "tone", "target_id": "t1", "annotator": "ann", "label": "rude", "note": "on reflection"}])
    assert (first.added, first.superseded, first.unchanged) == (2, 1, 0)  # the second corrects the first
    again = wh.label([{"rubric": "tone", "target_id": "t1", "annotator": "ann", "label": "rude", "note": "on reflection"}])
    assert (again.added, again.unchanged) == (0, 1)
    assert wh.query("select label, revisions from labels").arrow().to_pylist() == [{"label": "rude", "revisions": 1}]
