"""Write a `decisionbench-run/1` archive (shared/formats/decisionbench.md): serialisation only."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

FIXED_TIME = (2026, 4, 25, 0, 0, 0)  # zip entry times: same content, same bytes


def write_run_archive(path: Path, manifest: dict[str, Any], records: list[dict[str, Any]],
                      traces: dict[str, list[dict[str, Any]]], profiles: dict[str, str] | None = None) -> Path:
    """`traces` maps task id -> its trace lines; `profiles` maps model -> card markdown."""
    members = {"manifest.json": json.dumps({"format": "decisionbench-run/1", **manifest}, indent=1),
               "records.jsonl": _jsonl(records)}
    members |= {f"traces/{task_id}.jsonl": _jsonl(lines) for task_id, lines in traces.items()}
    members |= {f"profiles/{model}.md": text for model, text in (profiles or {}).items()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
    return path


def _jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)
