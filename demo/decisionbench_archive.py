"""Write `decisionbench-run/1` archives (docs/formats/decisionbench.md): serialisation only.

One run per zip, as the harness releases them, or many runs as folders of one zip
(the adapter reads every folder holding a manifest.json).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

FIXED_TIME = (2026, 4, 25, 0, 0, 0)  # zip entry times: same content, same bytes


def run_members(manifest: dict[str, Any], records: list[dict[str, Any]], traces: dict[str, list[dict[str, Any]]],
                profiles: dict[str, str] | None = None, folder: str = "") -> dict[str, str]:
    """Archive members of one run. `traces`: task id -> trace lines; `profiles`: model -> card."""
    members = {"manifest.json": json.dumps({"format": "decisionbench-run/1", **manifest}, indent=1),
               "records.jsonl": _jsonl(records)}
    members |= {f"traces/{task_id}.jsonl": _jsonl(lines) for task_id, lines in traces.items()}
    members |= {f"profiles/{model}.md": text for model, text in (profiles or {}).items()}
    return {folder + name: text for name, text in members.items()}


def write_zip(path: Path, members: dict[str, str] | dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
    return path


def write_run_archive(path: Path, manifest: dict[str, Any], records: list[dict[str, Any]],
                      traces: dict[str, list[dict[str, Any]]], profiles: dict[str, str] | None = None) -> Path:
    return write_zip(path, run_members(manifest, records, traces, profiles))


def _jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)
