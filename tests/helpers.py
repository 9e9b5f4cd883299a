"""Test helpers: run the real `tracewh` command, build native-format inputs."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracewh.schema.native import dumps_event, header

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@dataclass
class Result:
    code: int
    out: str
    err: str


def tracewh(*args: str | Path, env: dict[str, str] | None = None, check: bool = False) -> Result:
    """Run the installed CLI in a fresh process, as a user would."""
    proc = subprocess.run([sys.executable, "-m", "tracewh", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300)
    result = Result(proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise AssertionError(f"tracewh {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr}")
    return result


def native_lines(events: list[dict[str, Any]]) -> bytes:
    return header() + b"".join(dumps_event(e) for e in events)


def write_native(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_bytes(native_lines(events))
    return path


def write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def llm_call(run_id: str, seq: int, **fields: Any) -> dict[str, Any]:
    return {"run_id": run_id, "benchmark": "custom", "kind": "llm_call", "seq": seq, **fields}


def store_version(wh: Path) -> int | None:
    from tracewh.warehouse.store import Store

    return Store(wh).version()


def plain(text: str) -> str:
    """Terminal output without rich's box drawing and line wrapping, for matching messages."""
    import re

    return " ".join(re.sub(r"[│╭╮╰╯─┃━]", " ", text).split())
