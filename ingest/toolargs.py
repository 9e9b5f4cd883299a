"""Tool-call arguments arrive as a JSON string, a dict, or BFCL's {name: "<JSON>"}: normalise to a dict.

Invalid JSON is kept, never fatal: {"_raw": "<text>"} (harness outputs contain it).
"""

from __future__ import annotations

from typing import Any

import orjson


def parse_arguments(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = orjson.loads(value) if value.strip() else {}
        except orjson.JSONDecodeError:
            return {"_raw": value}
        return parsed if isinstance(parsed, dict) else {"_value": parsed}
    return {"_value": value}
