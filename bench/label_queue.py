"""How fast a person labels through the queue page: from pressing a label's number key to the
next item being on screen, in a real browser (Debian's chromium, driven by Playwright)
against a real `tracewh serve` over the demo store (`tracewh demo`, 2 tasks per run).

    .venv/bin/python bench/label_queue.py             # 8 items
    .venv/bin/python bench/label_queue.py --items 20

Every keypress commits a label (a new store version, through Warehouse.label) and the page
then shows the annotator's next item of the queue (whose view reads the new version). Target:
median <= 0.3 s. Prints the median and PASS/FAIL.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serving import serve  # noqa: E402
from web_trace import chromium, launch  # noqa: E402

TARGET_S = 0.3
RUBRIC = """\
name: {name}
version: 1
targets: select run_id || '/' || task_id as target_id, run_id, task_id, n_events from tasks order by run_id, task_id
prompt: "{{{{ n_events }}}}"
labels: [good, bad, unsure]
judges: [openai:gpt-5-nano]
"""


def write_rubric(folder: Path, name: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(RUBRIC.format(name=name), encoding="utf-8")
    return path


def label_seconds(page: Any, key: str = "1") -> float:
    """Press a label's key on the page's current item; seconds until another item (or the end) is
    shown and takes keys."""
    before = page.locator("#target-id").inner_text()
    start = time.perf_counter()
    page.keyboard.press(key)
    wait_for_item(page, f"(t) => t !== {json.dumps(before)}")
    return time.perf_counter() - start


def wait_for_item(page: Any, test: str) -> None:
    """Until the page shows an item whose id passes `test` (JS: id => bool), or the end of the
    queue, and its keys work."""
    page.wait_for_function(f"() => {{ const t = document.querySelector('#target-id'); "
                           f"return document.body.dataset.keys === 'ready' && "
                           f"(document.querySelector('#empty') || (t && ({test})(t.textContent))); }}",
                           timeout=30_000)


def measure(browser: Any, base: str, rubric: str, items: int, annotator: str = "bench") -> list[float]:
    """Label `items` items of the queue as `annotator` (a fresh browser context); each one's seconds."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base}/ui/queues/{rubric}")
    page.fill("#annotator", annotator)
    page.click("#annotator-form button[type=submit]")
    wait_for_item(page, "() => true")
    times = []
    for _ in range(items):
        if page.locator("#empty").count():
            break
        times.append(label_seconds(page))
    context.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=8)
    args = parser.parse_args()
    executable = chromium()
    if executable is None:
        print("no chromium found (apt-get install chromium, or set TRACEWH_CHROMIUM)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    from tracewh.demo.build import build_demo

    with tempfile.TemporaryDirectory(prefix="tracewh-label-bench-") as folder:
        wh, _ = build_demo(Path(folder), tasks=2)
        wh.queue_add(write_rubric(Path(folder), "bench_queue"), reviews=1)
        with serve(wh.path) as base, sync_playwright() as p:
            browser = launch(p, executable)
            times = measure(browser, base, "bench_queue", args.items)
            browser.close()
    median = statistics.median(times)
    print(f"labelled {len(times)} items: keypress to next item median {median * 1000:.0f} ms "
          f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}); target <= {TARGET_S * 1000:.0f} ms")
    print("PASS" if median <= TARGET_S else "FAIL")
    return 0 if median <= TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
