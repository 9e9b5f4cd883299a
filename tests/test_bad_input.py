"""Bad input never half-lands: one clear message naming file, line and field; exit 2; store unchanged."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from helpers import llm_call, native_lines, store_version, tracewh, write_native, write_zip

import tracewh as tw

GOOD = [llm_call("r1", 1, prompt_tokens=10), llm_call("r1", 2, prompt_tokens=20)]


def _lines(*records: bytes) -> bytes:
    return native_lines([]) + b"".join(r + b"\n" for r in records)


OK_LINE = b'{"run_id":"r9","benchmark":"custom","kind":"llm_call"}'


def truncated_zip(tmp: Path) -> Path:
    data = write_zip(tmp / "full.zip", {"a.jsonl": native_lines(GOOD * 50)}).read_bytes()
    (tmp / "bad.zip").write_bytes(data[: len(data) // 2])
    return tmp / "bad.zip"


def corrupt_zip_member(tmp: Path) -> Path:
    path = tmp / "bad.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("a.jsonl", native_lines(GOOD * 50))
    data = bytearray(path.read_bytes())
    data[200] ^= 0xFF  # inside the member's data: the CRC no longer matches
    path.write_bytes(bytes(data))
    return path


def future_zip_version(tmp: Path) -> Path:
    """A zip whose directory asks for a zip version zipfile does not read (found by the input fuzz)."""
    data = bytearray(write_zip(tmp / "bad.zip", {"a.jsonl": native_lines(GOOD)}).read_bytes())
    entry = data.find(b"PK\x01\x02")  # the central directory entry: version made by, version needed
    data[entry + 5] = data[entry + 6] = 230
    (tmp / "bad.zip").write_bytes(bytes(data))
    return tmp / "bad.zip"


def escaping_zip(tmp: Path) -> Path:
    return write_zip(tmp / "bad.zip", {"ok.jsonl": native_lines(GOOD), "../../etc/evil.jsonl": native_lines(GOOD)})


def zip_bomb(tmp: Path) -> Path:
    return write_zip(tmp / "bad.zip", {"bomb.jsonl": b"\n" * (20 << 20)})


def second_file_bad(tmp: Path) -> Path:
    # The first file is fine; the second's error must still keep the first out of the store.
    return write_zip(tmp / "bad.zip", {"a.jsonl": native_lines(GOOD), "b.jsonl": _lines(OK_LINE, b"{oops")})


def written(data: bytes):
    return lambda tmp: (tmp / "bad.jsonl").write_bytes(data) and tmp / "bad.jsonl"


CASES = {
    "truncated zip": (truncated_zip, ["bad.zip", "not a readable zip"]),
    "corrupt zip member": (corrupt_zip_member, ["bad.zip!a.jsonl", "corrupt"]),
    "zip version not supported": (future_zip_version, ["bad.zip", "not a readable zip", "zip file version"]),
    "entry escaping the archive": (escaping_zip, ["../../etc/evil.jsonl", "escapes the archive"]),
    "absurd compression ratio": (zip_bomb, ["bomb.jsonl", "compression ratio"]),
    "invalid JSON": (written(_lines(OK_LINE, b'{"run_id": "r1",')), ["bad.jsonl, line 3", "invalid JSON"]),
    "not an object": (written(_lines(b"[1, 2]")), ["bad.jsonl, line 2", "expected a JSON object"]),
    "wrong type": (written(_lines(b'{"run_id":"r1","benchmark":"custom","kind":"llm_call","prompt_tokens":"12"}')),
                   ["bad.jsonl, line 2, field 'prompt_tokens'", "expected an integer"]),
    "unknown kind": (written(_lines(b'{"run_id":"r1","benchmark":"custom","kind":"llm_cal"}')),
                     ["bad.jsonl, line 2, field 'kind'", "unknown kind 'llm_cal'"]),
    "missing required field": (written(_lines(OK_LINE, b'{"benchmark":"custom","kind":"llm_call"}')),
                               ["bad.jsonl, line 3, field 'run_id'", "required field is missing"]),
    "unknown field": (written(_lines(b'{"run_id":"r1","benchmark":"custom","kind":"score","scroe":1}')),
                      ["bad.jsonl, line 2, field 'scroe'", "unknown field"]),
    "bad time": (written(_lines(b'{"run_id":"r1","benchmark":"custom","kind":"score","ts":"yesterday"}')),
                 ["bad.jsonl, line 2, field 'ts'", "ISO-8601"]),
    "non-UTF-8": (written(_lines(b'{"run_id":"r\xff1","benchmark":"custom","kind":"score"}')),
                  ["bad.jsonl, line 2", "not valid UTF-8"]),
    "bad error in a later file": (second_file_bad, ["bad.zip!b.jsonl, line 3", "invalid JSON"]),
    "unrecognised format": (written(b'{"hello": "world"}\n'), ["bad.jsonl, line 1", "no adapter recognises"]),
    "missing header": (written(b'{"format": "tracewh-events/1"}\n{"format": "tracewh-events/1"}\n'),
                       ["bad.jsonl, line 2, field 'format'", "header line in the middle"]),
}


@pytest.fixture
def seeded_store(tmp_path: Path) -> Path:
    """A store with one good batch, so 'unchanged' is a version that must not move."""
    wh = tmp_path / "wh"
    tracewh("ingest", write_native(tmp_path / "good.jsonl", GOOD), "-w", wh, check=True)
    return wh


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_refused_cleanly(tmp_path, seeded_store, case):
    make, expected = CASES[case]
    bad = make(tmp_path)
    before = store_version(seeded_store)

    result = tracewh("ingest", bad, "-w", seeded_store)

    assert result.code == 2, result.err
    message = " ".join(result.err.split())  # rich may wrap long lines
    for text in expected:
        assert text in message
    assert "Traceback" not in result.err
    assert store_version(seeded_store) == before
    assert tw.open(seeded_store).sql("select count(*) from events").fetchall() == [(2,)]
    assert list((seeded_store / "_staging").iterdir()) == []


def test_oversized_record_is_refused(tmp_path, seeded_store):
    big = write_native(tmp_path / "big.jsonl", [llm_call("r1", 1, payload={"text": "x" * (3 << 20)})])
    result = tracewh("ingest", big, "-w", seeded_store, "--max-line-mb", "1")
    assert result.code == 2 and "big.jsonl, line 2" in result.err and "longer than" in result.err
    assert store_version(seeded_store) == 1


def test_missing_path_and_unsupported_file(tmp_path, seeded_store):
    assert tracewh("ingest", tmp_path / "nope.zip", "-w", seeded_store).code == 2
    (tmp_path / "notes.txt").write_text("hi")
    result = tracewh("ingest", tmp_path / "notes.txt", "-w", seeded_store)
    assert result.code == 2 and "not a supported input" in result.err
