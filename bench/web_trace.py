"""How fast the web page opens a big run: one run whose one task holds 5,000 events, in a real
browser (Debian's chromium, driven by Playwright) against a real `tracewh serve`.

    .venv/bin/python bench/web_trace.py                 # 5,000 events, 5 opens each
    .venv/bin/python bench/web_trace.py --events 20000

The run is an orchestrator's task written in the native format: LLM calls with messages,
tool calls and results, delegations to peers nested up to three deep (each peer calling
models and tools), judgments, scores and state diffs. Measured, from the navigation's start
to the page being usable (the tree's script has set it up, its first row is on screen):
the run page (its tasks) and the task's trace, first on a freshly started server (cold: the
store's view catalog is built for the new version), then 5 times more (warm). Then the
interactions: unfolding a delegation and showing an LLM call's payload. Target: the warm
median of both pages <= 1 s. Prints PASS/FAIL, writes bench/results/web.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlencode


import tracewh
from tracewh.schema.native import dumps_event, header

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serving import serve  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "web.json"
TARGET_S = 1.0
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
# Playwright's own browser download is not used: Debian's chromium, headless, quiet, offline.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
RUN_ID = "web-bench-run"
TASK_ID = "big-task"
START = datetime(2026, 5, 4, 9, 0, tzinfo=timezone.utc)


def chromium() -> str | None:
    """The system's chromium ($TRACEWH_CHROMIUM first), or None."""
    found = [os.environ.get("TRACEWH_CHROMIUM", ""), *CHROMIUM_CANDIDATES, shutil.which("chromium") or ""]
    return next((path for path in found if path and os.access(path, os.X_OK)), None)


def launch(playwright: Any, executable: str) -> Any:
    return playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)


# ------------------------------------------------------------------------- the run
class _Task:
    """Events of one task in order: seq, clock and span ids."""

    def __init__(self, rng: random.Random, run_id: str, task_id: str):
        self.rng, self.run_id, self.task_id = rng, run_id, task_id
        self.events: list[dict[str, Any]] = []
        self.clock = START

    def span(self) -> str:
        return "%016x" % self.rng.getrandbits(64)

    def add(self, kind: str, parent: str | None, **fields: Any) -> str | None:
        self.clock += timedelta(seconds=self.rng.uniform(0.05, 0.6))
        self.events.append({"run_id": self.run_id, "benchmark": "webbench", "kind": kind, "seq": len(self.events) + 1,
                            "ts": self.clock, "task_id": self.task_id, "parent_span_id": parent, **fields})
        return fields.get("span_id")

    def llm_call(self, parent: str, agent: str, model: str, step: int) -> str:
        latency = round(self.rng.uniform(0.4, 4.0), 3)
        prompt, completion = self.rng.randint(800, 9000), self.rng.randint(40, 900)
        span = self.add("llm_call", parent, span_id=self.span(), agent=agent, model=model, latency_s=latency,
                        prompt_tokens=prompt, completion_tokens=completion, cost_usd=round(prompt * 2e-6 + completion * 1e-5, 6),
                        finish_reason="tool_calls", payload={
                            "provider": "openai", "messages": [
                                {"role": "system", "content": f"You are {agent}. Solve the step; use tools."},
                                {"role": "user", "content": f"Step {step}: find the figure and check it. " * 4}],
                            "content": f"Calling a tool for step {step}.",
                            "tool_calls": [{"name": "web_search", "arguments": {"query": f"step {step}"}}]})
        self.clock += timedelta(seconds=latency)
        return span  # type: ignore[return-value]

    def tool(self, parent: str, agent: str, step: int) -> None:
        span = self.add("tool_call", parent, span_id=self.span(), agent=agent, tool_name="web_search",
                        payload={"arguments": {"query": f"step {step}", "top_k": 5}, "server": "search"})
        self.add("tool_result", span, agent=agent, tool_name="web_search", latency_s=0.3,
                 payload={"status": "ok", "result": f"3 results for step {step}: ..."})

    def delegation(self, parent: str, depth: int, step: int) -> None:
        peer = f"peer-{depth}"
        span = self.add("delegation", parent, span_id=self.span(), agent="orchestrator" if depth == 1 else f"peer-{depth - 1}",
                        tool_name="call_model", payload={"to_agent": peer, "to_model": "claude-sonnet-4.6", "depth": depth,
                                                         "status": "ok", "message": f"please check step {step}"})
        for _ in range(3):
            call = self.llm_call(span, peer, "claude-sonnet-4.6", step)  # type: ignore[arg-type]
            self.tool(call, peer, step)
        if depth < 3 and self.rng.random() < 0.4:
            self.delegation(span, depth + 1, step)  # type: ignore[arg-type]


def big_task_events(n_events: int, seed: int = 5, run_id: str = RUN_ID, task_id: str = TASK_ID) -> list[dict[str, Any]]:
    """About `n_events` events (never fewer) of one task, in seq order."""
    task = _Task(random.Random(seed), run_id, task_id)
    root = task.add("task_started", None, span_id=task.span(), agent="orchestrator", model="gpt-5.4",
                    payload={"instruction": "Reconcile the quarterly figures across the three systems."})
    step = 0
    while len(task.events) < n_events - 2:
        step += 1
        call = task.llm_call(root, "orchestrator", "gpt-5.4", step)  # type: ignore[arg-type]
        task.tool(call, "orchestrator", step)
        if step % 4 == 0:
            task.delegation(call, 1, step)
        if step % 10 == 0:
            task.add("judgment", root, span_id=task.span(), score=1.0, payload={"judge": "majority", "verdict": "pass"})
            task.add("state_diff", root, payload={"service": "erp", "table": "ledger", "key": f"L{step}", "op": "update",
                                                  "field": "amount", "before": step * 10, "after": step * 10 + 1})
    task.add("score", root, score=0.8, payload={"metric": "quality"})
    task.add("task_finished", root, payload={"status": "ok"})
    return task.events


def write_big_run(path: Path, n_events: int) -> Path:
    path.write_bytes(header() + b"".join(dumps_event(e) for e in big_task_events(n_events)))
    return path


# ------------------------------------------------------------------------- serving
# ------------------------------------------------------------------------- measuring
def open_seconds(page: Any, address: str, ready: str) -> float:
    """From the navigation's start to `ready` being visible (the page's own clock)."""
    page.goto(address, wait_until="domcontentloaded")
    page.wait_for_selector(ready, state="visible")
    return page.evaluate("performance.now()") / 1000


def measure(base: str, executable: str, opens: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    run_page = f"{base}/ui/run?{urlencode({'run': RUN_ID})}"
    trace_page = f"{base}/ui/trace?{urlencode({'run': RUN_ID, 'task': TASK_ID})}"
    trace_ready = '#trace[data-ready="true"] [role="treeitem"]'
    with sync_playwright() as p:
        browser = launch(p, executable)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        cold = {"run_page_s": open_seconds(page, run_page, "#tasks"), "trace_s": open_seconds(page, trace_page, trace_ready)}
        warm_run = [open_seconds(page, run_page, "#tasks") for _ in range(opens)]
        warm_trace = [open_seconds(page, trace_page, trace_ready) for _ in range(opens)]
        interactions = _interactions(page)
        html_bytes = len(page.content().encode())
        browser.close()
    return {"cold": cold, "run_page_s": warm_run, "trace_s": warm_trace, "interactions": interactions,
            "trace_html_bytes": html_bytes}


def _interactions(page: Any) -> dict[str, float]:
    started = time.perf_counter()
    page.locator('[role="treeitem"][aria-expanded="false"].k-delegation .twisty').first.click()
    unfold = time.perf_counter() - started
    started = time.perf_counter()
    page.locator('[role="treeitem"].k-llm_call').first.click()
    page.wait_for_selector("#payload h2")
    return {"unfold_delegation_s": unfold, "show_payload_s": time.perf_counter() - started}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--opens", type=int, default=5)
    args = parser.parse_args()
    executable = chromium()
    if executable is None:
        print("no chromium found (apt-get install chromium, or set TRACEWH_CHROMIUM)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="tracewh-web-bench-") as folder:
        wh = tracewh.open(Path(folder) / "wh")
        wh.ingest([write_big_run(Path(folder) / "run.jsonl", args.events)])
        events = wh.sql("select count(*) from events where task_id = ?", [TASK_ID]).fetchall()[0][0]
        with serve(wh.path) as base:
            figures = measure(base, executable, args.opens)
    return report(figures, events)


def report(figures: dict[str, Any], events: int) -> int:
    run_p50, trace_p50 = statistics.median(figures["run_page_s"]), statistics.median(figures["trace_s"])
    passed = run_p50 <= TARGET_S and trace_p50 <= TARGET_S
    print(f"one task of {events:,} events; trace page {figures['trace_html_bytes'] / 1e6:.2f} MB of HTML")
    print(f"run page     warm p50 {run_p50:.3f} s   cold {figures['cold']['run_page_s']:.3f} s")
    print(f"trace page   warm p50 {trace_p50:.3f} s   cold {figures['cold']['trace_s']:.3f} s")
    print(f"unfold a delegation {figures['interactions']['unfold_delegation_s']:.3f} s, "
          f"show an LLM call's payload {figures['interactions']['show_payload_s']:.3f} s")
    print(f"{'PASS' if passed else 'FAIL'}: warm median of both pages <= {TARGET_S:g} s")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"events": events, "target_s": TARGET_S, "passed": passed, "run_page_p50_s": run_p50,
                                   "trace_p50_s": trace_p50, **figures, "machine": {
                                       "cpus": os.cpu_count(), "python": platform.python_version(),
                                       "platform": platform.platform()}}, indent=2) + "\n")
    print(f"wrote {RESULTS}")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
