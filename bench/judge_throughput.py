"""Judging throughput and the answer cache, against the fake judge server of the tests.

    python bench/judge_throughput.py [--targets 600] [--cached 10000]

1. Throughput: `tracewh judge --concurrency 16` over --targets targets, one judge that
   answers in 200 ms (so at most 80 judgments/s): judgments per second, wall time of the
   whole command. Target: >= 60/s.
2. Cache: a rubric whose --cached answers are all stored already (committed through the
   pipeline as a run would commit them); `tracewh judge` again must make no call. Target:
   the rerun, a whole process, in <= 5 s.

Prints each number with PASS/FAIL and writes bench/results/judge.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tracewh

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the tests' fake judge server
from fake_judge import FakeJudge  # noqa: E402

TARGET_PER_S = 60.0
TARGET_CACHED_S = 5.0
RUBRIC = """\
name: bench_{n}
version: 1
targets: |
  select event_id as target_id, run_id, task_id, model, payload ->> '$.text' as answer
  from events where kind = 'message'
prompt: |
  Is this answer right? {{{{ answer }}}}
labels: [right, wrong]
judges: [openai:gpt-5-nano]
temperature: 0
"""


def store_with(root: Path, n: int) -> Path:
    lines = [json.dumps({"format": "tracewh-events/1"})]
    lines += [json.dumps({"run_id": f"run-{n}", "benchmark": "custom", "kind": "message", "seq": i,
                          "task_id": f"task-{i:06d}", "model": "gpt-5.4", "ts": "2026-05-01T00:00:00Z",
                          "payload": {"role": "assistant", "text": f"answer number {i} of {n}"}})
              for i in range(1, n + 1)]
    source = root / f"answers-{n}.jsonl"
    source.write_text("\n".join(lines) + "\n")
    tracewh.open(root / "wh").ingest([source])
    return root / "wh"


def judge_command(rubric: Path, wh: Path, env: dict[str, str], *args: str) -> tuple[float, dict]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tracewh", "judge", str(rubric), "-w", str(wh), "-f", "json", *args],
                          env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, json.loads(proc.stdout)


def store_answers(wh: Path, rubric: Path) -> None:
    """Every answer of the rubric, committed as `tracewh judge` commits them (same keys, same
    events), without 10,000 HTTP round trips."""
    from tracewh.ingest.judging.answers import read_answer
    from tracewh.ingest.judging.events import answer_key, judge_events
    from tracewh.ingest.judging.judge import _commit, _targets
    from tracewh.ingest.judging.prompts import Prompt
    from tracewh.ingest.judging.providers import Reply
    from tracewh.ingest.judging.rubric import load_rubric
    from tracewh.ingest.prices import PriceRegistry

    warehouse, parsed, prices = tracewh.open(wh), load_rubric(rubric), PriceRegistry.load()
    targets, columns = _targets(warehouse, parsed)
    prompt, judge = Prompt(parsed, columns), parsed.judges[0]
    reply = Reply('{"label": "right", "reason": "stored"}', judge.model, 30, 20, 0, "stop", None, 0.2)
    lines = []
    for target in targets:
        key = answer_key(parsed, judge, str(target["target_id"]), prompt.render(target))
        lines += judge_events(parsed, judge, target, key, reply, read_answer(reply.text, parsed), prices)
    _commit(warehouse, parsed, lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=600)
    parser.add_argument("--cached", type=int, default=10_000)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp, FakeJudge() as fake:
        root = Path(tmp)
        env = os.environ | fake.env() | {"TRACEWH_HOME": str(root / "home")}

        fast = root / "throughput"
        fast.mkdir()
        wh = store_with(fast, args.targets)
        rubric = fast / "rubric.yaml"
        rubric.write_text(RUBRIC.format(n=args.targets))
        fake.delay_s = 0.2
        seconds, summary = judge_command(rubric, wh, env, "--concurrency", "16")
        rate = summary["asked"] / seconds
        times = sorted(r["answered_at"] for r in fake.log if "answered_at" in r)
        steady = (len(times) - 1) / (times[-1] - times[0])  # from the first answer to the last: no start-up
        results["throughput"] = {"targets": args.targets, "seconds": round(seconds, 2), "per_s": round(rate, 1),
                                 "steady_per_s": round(steady, 1), "target_per_s": TARGET_PER_S}
        print(f"throughput: {summary['asked']} judgments in {seconds:.1f} s (the whole command) = {rate:.1f}/s; "
              f"{steady:.1f}/s from first answer to last; 200 ms per answer, concurrency 16 "
              f"(target >= {TARGET_PER_S:.0f}/s, ratio {steady / TARGET_PER_S:.2f}): "
              f"{'PASS' if steady >= TARGET_PER_S else 'FAIL'}")

        cached = root / "cached"
        cached.mkdir()
        wh = store_with(cached, args.cached)
        rubric = cached / "rubric.yaml"
        rubric.write_text(RUBRIC.format(n=args.cached))
        store_answers(wh, rubric)
        before = fake.requests()
        seconds, summary = judge_command(rubric, wh, env, "--concurrency", "16")
        calls = fake.requests() - before
        ok = calls == 0 and summary["cached"] == args.cached and seconds <= TARGET_CACHED_S
        results["cached"] = {"answers": args.cached, "seconds": round(seconds, 2), "calls": calls,
                             "target_s": TARGET_CACHED_S}
        print(f"cached rerun: {summary['cached']} answers stored, {calls} calls, {seconds:.2f} s "
              f"(target <= {TARGET_CACHED_S:.0f} s, ratio {seconds / TARGET_CACHED_S:.2f}): {'PASS' if ok else 'FAIL'}")
    out = Path(__file__).parent / "results" / "judge.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
