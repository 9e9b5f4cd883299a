"""Bad input, fuzzed from real inputs: whatever the bytes, ingest succeeds or refuses cleanly.

The seeds are real: the demo's generated archives (agent runs, DELEGATE-52 relays, a
DecisionBench run, EntCollabBench runs), the τ-bench result file and the Inspect logs in
tests/data, and tracewh's own native export, plain and gzipped (each cut to a few records,
so that a mutated input takes a fraction of a second). Each case stacks one to three
mutations: byte flips, truncations, insertions, duplicated, dropped or reordered lines,
members mutated inside their zip, gzip streams mutated, wrong types spliced into records.

The cases run in a worker process (this file run as a script: `python tests/test_input_fuzz.py
WORKDIR FIRST COUNT`), which ingests each through `Warehouse.ingest`, as `tracewh ingest` does,
and reports one JSON line per case; the test reads them as they come. Allowed: success, or a
TracewhError with exit code 2 after which the store has its version and event count. Never a
traceback, never a case over 60 s, never a worker above 1.5 GB of peak memory.

The type swaps are systematic where the mutations are random: every field of every record
shape of the seeds (and of the BFCL, EntCollabBench-with-permissions and OTLP fixtures of the
other tests) replaced by null, a huge int, a 10,000-deep array, a string for an object or list,
a float for a list, an object for a string; the same worker ingests each and the same outcome is
required, the refusal in one line. CI runs a seeded sample of each seed's swaps; TRACEWH_HEAVY=1
runs every one.

Then hand-made cases through the real CLI: a FIFO, /dev/zero and /dev/urandom, a symbolic link
out of the folder, a gzip bomb, a small zip member of newlines, a zip member that cannot be
opened, a truncated τ-bench array, and records at and over the size limit.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
import random
import re
import select
import shutil
import subprocess
import sys
import time
import traceback
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # as a worker script, helpers sit beside this file
from hardening import HEAVY, count, one_line  # noqa: E402
from helpers import DATA, llm_call, write_native, write_zip  # noqa: E402

CASE_SECONDS = 60
PEAK_MB = 1536
FUZZ_CASES = count(ci=120, heavy=3200)
RESET_EVERY = 100  # cases between fresh copies of the base store (a store of thousands of versions slows ingest)


# -- the seeds: real inputs, cut small -------------------------------------------------------------

def build_seeds(folder: Path) -> list[Path]:
    from tracewh.demo.agent_runs import write_demo_runs
    from tracewh.demo.decisionbench_runs import write_decisionbench_demo
    from tracewh.demo.delegate52_runs import write_delegate52_demo
    from tracewh.demo.entcollabbench_runs import write_entcollabbench_demo

    made, seeds = folder / "generated", folder / "seeds"
    seeds.mkdir(parents=True)
    agent = write_demo_runs(made, tasks=2)[0]
    relays = write_delegate52_demo(made)
    sweep = write_decisionbench_demo(made)
    ecb = write_entcollabbench_demo(made)[0]
    found = [
        shutil.copy(agent, seeds / "agent-run.zip"),
        cut_zip(relays, seeds / "delegate52.zip", lambda names: names[:2], lines=6),
        cut_zip(sweep, seeds / "decisionbench.zip", lambda names: [n for n in names if n.startswith(names[0].split("/")[0] + "/")][:6]),
        cut_zip(ecb, seeds / "entcollabbench.zip", lambda names: [n for n in names if "approval_tasks_80" in n], lines=3),
        cut_tau(DATA / "taubench" / "gpt-4o-airline.json", seeds / "gpt-4o-airline.json"),
        shutil.copy(DATA / "inspect" / "popularity.eval", seeds / "popularity.eval"),
        shutil.copy(DATA / "inspect" / "log_tool_call_error.json", seeds / "log_tool_call_error.json"),
    ]
    exports = native_exports(folder, [agent, Path(found[2])], seeds)
    return [Path(p) for p in found] + exports + other_tests_fixtures(made, seeds)


def other_tests_fixtures(made: Path, seeds: Path) -> list[Path]:
    """The other tests' fixtures of formats the demo has none of: a BFCL result and score file, an
    EntCollabBench run with its agent_specs.json, OpenTelemetry SDK spans as OTLP/JSON lines."""
    from otel_spans import write_samples
    from test_entcollabbench import archive_a
    from test_suites import BFCL_RESULT

    bfcl = {"result/gpt-5.4/multi_turn/BFCL_v4_multi_turn_base_result.json": json.dumps(BFCL_RESULT) + "\n",
            "score/gpt-5.4/multi_turn/BFCL_v4_multi_turn_base_score.json": "".join(json.dumps(r) + "\n" for r in [
                {"accuracy": 0.0, "correct_count": 0, "total_count": 1},
                {"id": BFCL_RESULT["id"], "model_name": "gpt-5.4", "test_category": "multi_turn_base", "valid": False,
                 "error": {"error_message": ["state mismatch"], "error_type": "multi_turn:instance_state_mismatch"}}])}
    otlp = write_samples(made / "otel")["genai.otlp.jsonl"]
    return [write_zip(seeds / "bfcl.zip", bfcl), Path(shutil.copy(archive_a(made), seeds / "entcollabbench-specs.zip")),
            Path(shutil.copy(otlp, seeds / "genai.otlp.jsonl"))]


def cut_zip(source: Path, target: Path, choose, lines: int | None = None) -> Path:
    """A zip of the members `choose` picks, JSON-lines members cut to their first `lines` records."""
    with zipfile.ZipFile(source) as z, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for name in choose([i.filename for i in z.infolist()]):
            data = z.read(name)
            if lines and name.endswith(".jsonl"):
                data = b"".join(data.splitlines(keepends=True)[:lines])
            out.writestr(name, data)
    return target


def cut_tau(source: Path, target: Path, items: int = 3) -> Path:
    target.write_text(json.dumps(json.loads(source.read_text())[:items], indent=2))
    return target


def native_exports(folder: Path, archives: list[Path], seeds: Path) -> list[Path]:
    import tracewh as tw

    wh = tw.open(folder / "export-store")
    wh.ingest(archives)
    runs = [r for (r,) in wh.sql("select run_id from runs order by run_id limit 2").fetchall()]
    return [seeds / name for name in ("native.jsonl", "native.jsonl.gz") if wh.export_events(seeds / name, runs) > 0]


# -- mutations ---------------------------------------------------------------------------------------

ODD = [None, True, 0, -1, 2**70, 1.5, float("nan"), "", "x" * 10_000, "\u202e\u0000 é🧪", [], [1, "a", None], {},
       {"nested": {"deeper": [None]}}, json.loads("[" * 200 + "]" * 200)]
JUNK = [b"\n", b"{", b"}", b'"', b"\x00", b"\xff\xfe", b"\\u0000", b"[", b"]", b",", b"NaN", b"-", b"\xe2\x80",
        b"\n\n\n", b'{"a":' * 50, os.urandom(64)]


def flip(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] ^= rng.randint(1, 255)
    return bytes(out)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))] if data else data


def insert(rng: random.Random, data: bytes) -> bytes:
    at = rng.randint(0, len(data))
    return data[:at] + rng.choice(JUNK) * rng.randint(1, 3) + data[at:]


def shuffle_lines(rng: random.Random, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    if len(lines) < 2:
        return data + data
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    action = rng.choice(["duplicate", "drop", "swap", "reverse"])
    if action == "duplicate":
        lines.insert(j, lines[i])
    elif action == "drop":
        lines.pop(i)
    elif action == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines.reverse()
    return b"".join(lines)


def splice_type(rng: random.Random, data: bytes) -> bytes:
    """A wrong-typed value at a random place of one record (or of the whole document)."""
    lines = data.splitlines(keepends=True)
    whole = len(lines) < 2 or not lines[0].strip().startswith(b"{")
    targets = [data] if whole else lines
    k = rng.randrange(len(targets))
    try:
        record = json.loads(targets[k])
    except ValueError:
        return insert(rng, data)
    _replace_somewhere(rng, record)
    targets[k] = json.dumps(record, allow_nan=True).encode() + (b"" if whole else b"\n")
    return targets[0] if whole else b"".join(targets)


def _replace_somewhere(rng: random.Random, value: Any, depth: int = 0) -> None:
    keys = list(value) if isinstance(value, dict) else list(range(len(value))) if isinstance(value, list) else []
    if not keys:
        return
    key = rng.choice(keys)
    if depth < 4 and isinstance(value[key], (dict, list)) and value[key] and rng.random() < 0.7:
        _replace_somewhere(rng, value[key], depth + 1)
    else:
        value[key] = rng.choice(ODD)


BYTES = [flip, truncate, insert]
CONTENT = [flip, truncate, insert, shuffle_lines, splice_type, splice_type]


def mutate_zip(rng: random.Random, data: bytes) -> bytes:
    """The zip's own bytes, or one member's content (the zip rewritten around it, CRCs correct),
    or its list of members."""
    if rng.random() < 0.3:
        return rng.choice(BYTES)(rng, data)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members = {i.filename: z.read(i) for i in z.infolist()}
    except Exception:  # noqa: BLE001 - an earlier mutation broke the zip (any of zipfile's errors): keep breaking it
        return flip(rng, data)
    names = list(members)
    name = rng.choice(names)
    if rng.random() < 0.15 and len(names) > 1:
        members.pop(name)
    else:
        members[name] = rng.choice(CONTENT)(rng, members[name])
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for member, content in members.items():
            z.writestr(member, content)
    return out.getvalue()


def mutate_gzip(rng: random.Random, data: bytes) -> bytes:
    if rng.random() < 0.4:
        return rng.choice(BYTES)(rng, data)
    try:
        plain = gzip.decompress(data)
    except (OSError, EOFError, ValueError, zlib.error):  # an earlier mutation broke the stream: keep breaking it
        return flip(rng, data)
    return gzip.compress(rng.choice(CONTENT)(rng, plain), mtime=0)


def mutate(rng: random.Random, seed: Path) -> bytes:
    data = seed.read_bytes()
    kind = mutate_zip if seed.suffix in (".zip", ".eval") else mutate_gzip if seed.suffix == ".gz" else \
        lambda r, d: r.choice(CONTENT)(r, d)
    for _ in range(rng.randint(1, 3)):
        data = kind(rng, data)
    return data


# -- the worker: ingest each case, report it ----------------------------------------------------------

def outcome(wh_path: Path, case: Path) -> dict[str, Any]:
    """Ingest `case`: what happened, and whether a refusal left the store as it was."""
    import tracewh as tw
    from tracewh.errors import TracewhError

    def state() -> tuple:
        wh = tw.open(wh_path)
        return wh.version, wh.sql("select count(*) from events").fetchall()[0][0]

    before, started = state(), time.perf_counter()
    try:
        tw.open(wh_path).ingest([case])
        result = {"outcome": "ingested"}
    except TracewhError as e:
        result = {"outcome": "refused", "error": type(e).__name__, "exit_code": e.exit_code, "message": str(e)[:300],
                  "one_line": "\n" not in str(e).strip(), "unchanged": state() == before}
    except Exception:  # noqa: BLE001 - the finding: reported, not raised
        result = {"outcome": "crashed", "traceback": traceback.format_exc()[-3000:]}
    return result | {"seconds": round(time.perf_counter() - started, 3)}


def run_worker(workdir: Path, first: int, n: int) -> None:
    seeds = sorted((workdir / "seeds").iterdir())
    cases, base, store = workdir / "cases", workdir / "base", workdir / "store"
    cases.mkdir(exist_ok=True)
    for i in range(first, first + n):
        if (i - first) % RESET_EVERY == 0:
            shutil.rmtree(store, ignore_errors=True)
            shutil.copytree(base, store)
        rng = random.Random(f"case-{i}")
        seed = seeds[i % len(seeds)]
        case = cases / f"{i}-{seed.name}"
        case.write_bytes(mutate(rng, seed))
        result = outcome(store, case)
        if result["outcome"] == "ingested" or (result["outcome"] == "refused" and result["exit_code"] == 2):
            case.unlink()  # kept only when it is a finding
        print(json.dumps({"case": i, "seed": seed.name, "file": str(case)} | result), flush=True)
    print(json.dumps({"peak_rss_mb": _own_peak_mb()}), flush=True)


def run_swap_worker(workdir: Path, plan: Path) -> None:
    """Ingest each swap of `plan` (JSON lines of Swap fields), reporting them as run_worker does."""
    swaps = [Swap(**(fields | {"path": tuple(fields["path"])})) for fields in map(json.loads, plan.read_text().splitlines())]
    cases, base, store = workdir / "swap-cases", workdir / "base", workdir / "swap-store"
    cases.mkdir(exist_ok=True)
    for i, swap in enumerate(swaps):
        if i % RESET_EVERY == 0:
            shutil.rmtree(store, ignore_errors=True)
            shutil.copytree(base, store)
        case = cases / f"{i}-{swap.seed}"
        case.write_bytes(apply_swap(workdir / "seeds" / swap.seed, swap))
        result = outcome(store, case)
        if acceptable(result):
            case.unlink()  # kept only when it is a finding
        print(json.dumps({"case": i, "swap": swap.describe(), "file": str(case)} | result), flush=True)
    print(json.dumps({"peak_rss_mb": _own_peak_mb()}), flush=True)


def acceptable(result: dict[str, Any]) -> bool:
    """Ingested, or refused with exit code 2, the store as it was, in one line (the quality gate's
    refusal is its report, a few lines naming the expectation and rows)."""
    return result["outcome"] == "ingested" or (
        result["outcome"] == "refused" and result["exit_code"] == 2 and result["unchanged"]
        and (result["one_line"] or result["error"] == "QualityError"))


def _own_peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- the tests ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """Seeds, and a base store holding one batch (so that "unchanged" is a version that must not move)."""
    import tracewh as tw

    folder = tmp_path_factory.mktemp("input-fuzz")
    build_seeds(folder)
    tw.open(folder / "base").ingest([write_native(folder / "first.jsonl", [llm_call("first", 1)])])
    return folder


def test_every_seed_is_valid_input(workdir, tmp_path):
    import tracewh as tw

    seeds = sorted((workdir / "seeds").iterdir())
    assert {s.name for s in seeds} >= {"agent-run.zip", "delegate52.zip", "decisionbench.zip", "entcollabbench.zip",
                                       "gpt-4o-airline.json", "popularity.eval", "native.jsonl.gz"}
    for seed in seeds:
        report = tw.open(tmp_path / seed.name).ingest([seed])
        assert report.added > 0, seed.name


@pytest.mark.heavy
def test_mutated_real_inputs_are_ingested_or_refused_cleanly(workdir):
    results = [json.loads(line) for line in worker_lines(workdir, 0, FUZZ_CASES)]
    cases, peak = results[:-1], results[-1]["peak_rss_mb"]
    assert len(cases) == FUZZ_CASES
    crashed = [c for c in cases if c["outcome"] == "crashed"]  # every one, not the first: a full run is long
    assert not crashed, f"{len(crashed)} crashed:\n" + "\n".join(
        f"case {c['case']} ({c['file']}):\n{c['traceback']}" for c in crashed[:5])
    for case in cases:
        if case["outcome"] == "refused":
            assert case["exit_code"] == 2, f"case {case['case']} ({case['file']}): {case['error']} {case['message']}"
            assert case["unchanged"], f"case {case['case']} ({case['file']}): the store changed"
        assert case["seconds"] < CASE_SECONDS, case
    assert peak <= PEAK_MB, f"the worker's peak memory was {peak:.0f} MB"
    summary = {(c["seed"], c["outcome"]) for c in cases}
    print(f"\n{len(cases)} mutated inputs; peak RSS {peak:.0f} MB; slowest {max(c['seconds'] for c in cases):.1f} s; "
          f"{sum(c['outcome'] == 'ingested' for c in cases)} ingested, {sum(c['outcome'] == 'refused' for c in cases)} "
          f"refused; seeds x outcomes seen: {len(summary)}")


def worker_lines(workdir: Path, *args: Any):
    """The worker's report lines as they come; a case silent for CASE_SECONDS fails the test."""
    worker = subprocess.Popen([sys.executable, __file__, str(workdir), *map(str, args)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, bufsize=1)
    read = 0
    try:
        while True:
            ready, _, _ = select.select([worker.stdout], [], [], CASE_SECONDS + 30)  # + the store reset's time
            assert ready, f"no answer for {CASE_SECONDS + 30} s after {read} cases ({args}): a hang"
            read += 1
            line = worker.stdout.readline()
            if not line:
                break
            yield line
    finally:
        worker.kill()
        worker.wait()
    assert worker.returncode in (0, -9), worker.stderr.read()


@pytest.mark.heavy
def test_mutated_inputs_through_the_real_cli(workdir, tmp_path):
    from helpers import tracewh

    seeds = sorted((workdir / "seeds").iterdir())
    shutil.copytree(workdir / "base", tmp_path / "wh")
    for i in range(count(ci=4, heavy=60)):
        seed = seeds[i % len(seeds)]
        case = tmp_path / f"cli-{i}-{seed.name}"
        case.write_bytes(mutate(random.Random(f"cli-{i}"), seed))
        result = tracewh("ingest", case, "-w", tmp_path / "wh")
        assert result.code in (0, 2) and "Traceback" not in result.err and "internal error" not in result.err, \
            (case, result.err)


# -- type swaps: every field of every adapter's records, given a value of the wrong type -----------------
#
# Each seed's records (JSON lines, or whole JSON documents, also inside zips and .eval logs) are
# walked path by path; a path is a field of a record shape (list indices read as `*`, so the
# 40th message of a trajectory is the same field as the first), taken where it first occurs.
# Each path gets each wrong value its type calls for, one case at a time.

BOMB_DEPTH = 10_000
BOMB = "tracewh-fuzz-depth-bomb"  # stands in the record until it is serialized, then becomes the bomb
SWAPS_PER_SEED = None if HEAVY else 5  # in CI a seeded sample of each seed's swaps; every one with TRACEWH_HEAVY=1


def swaps_for(value: Any) -> list[tuple[str, Any]]:
    """(name, wrong value) for a value: null, a huge int and a depth bomb anywhere; a string where an
    object or list was, a float where a list was, an object where a string was."""
    swaps = [("null", None), ("huge int", 2**70), ("depth bomb", BOMB)]
    if isinstance(value, (dict, list)):
        swaps.append(("string", "not an object"))
    if isinstance(value, list):
        swaps.append(("float", 1.5))
    if isinstance(value, str):
        swaps.append(("object", {"swapped": "in"}))
    return swaps


@dataclass(frozen=True)
class Swap:
    """One case: in `member` (of a zip; "" for the seed itself), record `record` (a line index, or -1
    for the whole document), the value at `path` replaced by the swap called `swap`."""

    seed: str
    member: str
    record: int
    path: tuple
    swap: str

    def describe(self) -> str:
        where = f"{self.seed}!{self.member}" if self.member else self.seed
        line = "" if self.record < 0 else f" line {self.record + 1}"
        return f"{where}{line} at {'/'.join(map(str, self.path)) or '(root)'}: {self.swap}"


def documents(data: bytes) -> list[tuple[int, Any]]:
    """(record index, record) of a JSON document (-1) or of each line of JSON lines; [] for anything else."""
    try:
        return [(-1, json.loads(data))]
    except ValueError:
        pass
    records = []
    for i, line in enumerate(data.splitlines()):
        try:
            records.append((i, json.loads(line)))
        except ValueError:
            continue
    return records


def paths(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """(path, value) of every value under `value`, the root left out."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield path + (key,), child
        yield from paths(child, path + (key,))


def members(seed: Path) -> dict[str, bytes]:
    """The seed's swappable contents by member name ("" for a plain file); gzip'd seeds have none."""
    if seed.suffix in (".zip", ".eval"):
        with zipfile.ZipFile(seed) as z:
            return {i.filename: z.read(i) for i in z.infolist() if not i.is_dir()}
    return {} if seed.suffix == ".gz" else {"": seed.read_bytes()}


def all_swaps(seed: Path) -> list[Swap]:
    """Every (field, wrong value) of the seed, each field of a record shape once."""
    found, seen = [], set()
    for member, data in members(seed).items():
        for record, value in documents(data):
            for path, old in paths(value):
                shape = (re.sub(r"\d+", "#", member), tuple("*" if isinstance(k, int) else k for k in path))
                if shape in seen:
                    continue
                seen.add(shape)
                found += [Swap(seed.name, member, record, path, name) for name, _ in swaps_for(old)]
    return found


def apply_swap(seed: Path, swap: Swap) -> bytes:
    """The seed's bytes with the swap made (a zip is rewritten around its changed member)."""
    contents = members(seed)
    data = contents[swap.member]
    records = dict(documents(data))
    record = records[swap.record]
    parent = record
    for key in swap.path[:-1]:
        parent = parent[key]
    parent[swap.path[-1]] = dict(swaps_for(parent[swap.path[-1]]))[swap.swap]
    text = json.dumps(record, ensure_ascii=False).replace(json.dumps(BOMB), "[" * BOMB_DEPTH + "]" * BOMB_DEPTH)
    if swap.record < 0:
        changed = text.encode()
    else:
        lines = data.splitlines(keepends=True)
        lines[swap.record] = text.encode() + b"\n"
        changed = b"".join(lines)
    if not swap.member:
        return changed
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, content in contents.items():
            z.writestr(name, changed if name == swap.member else content)
    return out.getvalue()


def swap_plan(seeds: list[Path], per_seed: int | None) -> list[Swap]:
    """Every swap of every seed, or a seeded sample of `per_seed` swaps of each."""
    plan = []
    for seed in seeds:
        swaps = all_swaps(seed)
        plan += swaps if per_seed is None or per_seed >= len(swaps) else random.Random(seed.name).sample(swaps, per_seed)
    return plan


@pytest.mark.heavy
def test_every_field_of_every_adapter_given_a_wrong_type_is_ingested_or_refused_cleanly(workdir):
    """Each seed's fields swapped for a wrong type (a sample of them in CI, all with TRACEWH_HEAVY=1):
    success, or exit 2 with one line and the store unchanged; never an internal error."""
    seeds = [s for s in sorted((workdir / "seeds").iterdir()) if members(s)]
    plan = swap_plan(seeds, SWAPS_PER_SEED)
    (workdir / "swaps.jsonl").write_text("".join(json.dumps(dataclasses.asdict(s)) + "\n" for s in plan))
    results = [json.loads(line) for line in worker_lines(workdir, "swaps", workdir / "swaps.jsonl")]
    cases, peak = results[:-1], results[-1]["peak_rss_mb"]
    assert len(cases) == len(plan) and {s.seed for s in plan} == {s.name for s in seeds}
    findings = [c for c in cases if not acceptable(c)]
    assert not findings, f"{len(findings)} of {len(cases)} swaps not refused cleanly:\n" + "\n".join(
        f"{c['swap']} ({c['file']}): {c.get('traceback') or c}" for c in findings[:5])
    assert max(c["seconds"] for c in cases) < CASE_SECONDS and peak <= PEAK_MB
    refused = [c for c in cases if c["outcome"] == "refused"]
    print(f"\n{len(cases)} type swaps over {len(seeds)} seeds: {len(cases) - len(refused)} ingested, "
          f"{len(refused)} refused; slowest {max(c['seconds'] for c in cases):.1f} s; peak RSS {peak:.0f} MB")


def test_a_type_swap_refused_through_the_cli_is_one_line(workdir, tmp_path):
    """The worker ingests through Warehouse.ingest; `tracewh ingest` prints the same refusal, one line."""
    from helpers import tracewh

    native = workdir / "seeds" / "native.jsonl"
    swap = next(s for s in all_swaps(native) if s.path == ("prompt_tokens",) and s.swap == "depth bomb")
    case = tmp_path / "native.jsonl"
    case.write_bytes(apply_swap(native, swap))
    shutil.copytree(workdir / "base", tmp_path / "wh")
    result = tracewh("ingest", case, "-w", tmp_path / "wh")
    assert result.code == 2 and one_line(result.err) and "native.jsonl, line" in result.err, result.err


# -- hand-made cases, through the real CLI ----------------------------------------------------------

@dataclass
class Measured:
    code: int
    err: str
    seconds: float
    peak_mb: float


# `python -m tracewh`, which writes its own peak memory (VmHWM) to a file as it exits. (A child's
# ru_maxrss from wait4 is no use: Linux carries the parent's peak over into it at fork and exec.)
CLI_REPORTING_PEAK = """
import atexit, runpy, sys
from pathlib import Path
out = Path(sys.argv.pop(1))
def report():
    status = Path('/proc/self/status').read_text()
    out.write_text(next(l for l in status.splitlines() if l.startswith('VmHWM:')).split()[1])
atexit.register(report)
runpy.run_module('tracewh', run_name='__main__')
"""


def ingest_measured(*paths: Path, wh: Path, timeout: float = CASE_SECONDS) -> Measured:
    """`tracewh ingest` in its own process: exit code, stderr, wall time and peak memory."""
    peak = wh.parent / "peak-kb"
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CLI_REPORTING_PEAK, str(peak), "ingest", *map(str, paths), "-w", str(wh)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    err = proc.stderr.decode(errors="replace")
    return Measured(proc.returncode, err, time.perf_counter() - started, int(peak.read_text()) / 1024)


@pytest.fixture
def store(workdir, tmp_path) -> Path:
    shutil.copytree(workdir / "base", tmp_path / "wh")
    return tmp_path / "wh"


def refused(result: Measured, *words: str, within: float = 10) -> bool:
    message = " ".join(result.err.split())
    return (result.code == 2 and one_line(result.err) and result.seconds < within
            and all(w in message for w in words))


def test_a_fifo_is_refused_at_once(tmp_path, store):
    os.mkfifo(tmp_path / "events.jsonl")
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "folder" / "events.jsonl")
    assert refused(r := ingest_measured(tmp_path / "events.jsonl", wh=store), "not a regular file"), r
    assert refused(r := ingest_measured(tmp_path / "folder", wh=store), "not a regular file"), r


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused_at_once(tmp_path, store, device):
    (tmp_path / "events.jsonl").symlink_to(device)
    assert refused(r := ingest_measured(Path(device), wh=store), "not a regular file"), r
    assert refused(r := ingest_measured(tmp_path / "events.jsonl", wh=store), "not a regular file"), r


def test_a_symlink_out_of_the_folder_is_refused(tmp_path, store):
    write_native(tmp_path / "outside.jsonl", [llm_call("secret", 1)])
    (tmp_path / "runs").mkdir()
    write_native(tmp_path / "runs" / "mine.jsonl", [llm_call("mine", 1)])
    (tmp_path / "runs" / "link.jsonl").symlink_to(tmp_path / "outside.jsonl")
    assert refused(r := ingest_measured(tmp_path / "runs", wh=store), "symbolic link to outside"), r


def test_a_gzip_bomb_is_refused_early(tmp_path, store):
    from helpers import native_lines

    bomb = tmp_path / "events.jsonl.gz"
    with gzip.GzipFile(bomb, "wb", compresslevel=9) as out:
        out.write(native_lines([]))  # a native file's header: the file is recognised, then read
        for _ in range(512):  # 512 MB of newlines in about half a megabyte
            out.write(b"\n" * (1 << 20))
    assert bomb.stat().st_size < 1 << 20
    result = ingest_measured(bomb, wh=store)
    assert refused(result, "decompression bomb"), result
    assert result.peak_mb < 400, result


@pytest.mark.exclusive  # timed (tests/conftest.py)
@pytest.mark.parametrize("megabytes", [1, 8, 64])
def test_a_small_zip_member_of_newlines_ends_in_seconds(tmp_path, store, megabytes):
    """Once 8 KB of compressed newlines cost a minute of parsing: small members skipped the ratio check."""
    from helpers import native_lines

    archive = tmp_path / "newlines.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("events.jsonl", native_lines([]) + b"\n" * (megabytes << 20))
    assert zipfile.ZipFile(archive).infolist()[0].compress_size < megabytes * 1100
    result = ingest_measured(archive, wh=store)
    assert result.code in (0, 2) and result.seconds < 10 and "Traceback" not in result.err, result


@pytest.mark.parametrize("damage", ["unknown compression method", "encrypted", "broken local header"])
def test_a_zip_member_that_cannot_be_opened_is_named(tmp_path, store, damage):
    archive = tmp_path / "run.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:
        z.writestr("events.jsonl", b"".join(json.dumps(llm_call("r", i)).encode() + b"\n" for i in range(3)))
    data = bytearray(archive.read_bytes())
    central = data.rindex(b"PK\x01\x02")
    if damage == "unknown compression method":
        data[8:10] = data[central + 10:central + 12] = (99).to_bytes(2, "little")
    elif damage == "encrypted":
        data[6] |= 1
        data[central + 8] |= 1
    else:
        data[0:4] = b"PK\x09\x09"  # the central directory still points here
    archive.write_bytes(bytes(data))
    assert refused(r := ingest_measured(archive, wh=store), "run.zip!events.jsonl"), r


def test_a_truncated_tau_bench_array_names_the_item(tmp_path, store):
    whole = cut_tau(DATA / "taubench" / "gpt-4o-airline.json", tmp_path / "whole.json", items=4).read_text()
    cut = tmp_path / "gpt-4o-airline.json"
    cut.write_text(whole[: int(len(whole) * 0.8)])
    assert refused(r := ingest_measured(cut, wh=store), "gpt-4o-airline.json", "array item 4", "invalid JSON"), r


def record_of(path: Path, size: int) -> Path:
    """A native file whose second line (after the header) is one record of about `size` bytes,
    written in pieces (the test process stays small)."""
    from helpers import native_lines

    head, tail = json.dumps(llm_call("big", 1, payload={"text": "@"})).encode().split(b"@")
    with open(path, "wb") as out:
        out.write(native_lines([]) + head)
        for start in range(0, size, 1 << 20):
            out.write(b"x" * min(1 << 20, size - start))
        out.write(tail + b"\n")
    return path


def test_a_record_at_the_size_limit_stays_within_memory(tmp_path, store):
    record_of(tmp_path / "at-limit.jsonl", (32 << 20) - 1024)
    result = ingest_measured(tmp_path / "at-limit.jsonl", wh=store, timeout=120)
    assert result.code in (0, 2) and "Traceback" not in result.err, result
    assert result.peak_mb <= PEAK_MB, result


def test_a_record_over_the_limit_is_refused_cheaply(tmp_path, store):
    record_of(tmp_path / "over.jsonl", 200 << 20)
    result = ingest_measured(tmp_path / "over.jsonl", wh=store)
    assert refused(result, "over.jsonl, line 2", "longer than", within=30), result
    assert result.peak_mb < 400, result


if __name__ == "__main__":  # the worker process of the mutation and the type-swap tests
    if sys.argv[2] == "swaps":
        run_swap_worker(Path(sys.argv[1]), Path(sys.argv[3]))
    else:
        run_worker(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
