"""EntCollabBench database state: canonical snapshots and their record-level diff.

Follows the benchmark driver's rules (docs/formats/entcollabbench.md §9.2-9.3), so a
diff computed here from raw snapshots reads like the one the driver stores:
top-level fields whose lower-cased name is non-semantic are dropped; each table is
keyed on at most one field, inferred after that drop; without a key the diff is a
set difference (an update reads as a delete plus an insert).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

DEFAULT_IGNORED_FIELDS = frozenset({
    "id", "created_at", "updated_at", "deleted_at", "createdon", "updatedon", "sys_created_on", "sys_updated_on",
    "sys_created_by", "sys_updated_by", "last_modified", "last_modified_at",
})
KEY_CANDIDATES = ("number", "sys_id", "kb_number", "id", "case_id", "incident_id", "change_id", "task_id",
                  "user_id", "email", "name")
TABLE_CONTAINERS = ("table_data", "tables", "data")
PAYLOAD_METADATA = frozenset({"success", "database_id", "service", "database_info", "table_counts", "timestamp",
                              "status", "error", "message"})


@dataclass(frozen=True)
class Change:
    """One changed row (insert/delete: the whole row) or one changed field of a row (update)."""

    server: str
    table: str
    op: str  # insert | delete | update
    row_key: str | None
    field: str | None
    before: Any
    after: Any


def _dump(row: Any) -> str:
    return orjson.dumps(row, option=orjson.OPT_SORT_KEYS, default=str).decode()


def snapshot_tables(server_entry: dict[str, Any]) -> dict[str, list[dict[str, Any]]] | None:
    """The tables of one server in a raw snapshot; None when its export failed."""
    if server_entry.get("status", "ok") != "ok":
        return None
    payload = server_entry.get("payload")
    if not isinstance(payload, dict):
        return None
    container = next((payload[k] for k in TABLE_CONTAINERS if isinstance(payload.get(k), dict)), None)
    if container is None:
        container = {k: v for k, v in payload.items() if k not in PAYLOAD_METADATA}
    return {t: [r for r in rows if isinstance(r, dict)] for t, rows in container.items() if isinstance(rows, list)}


def canonical_rows(rows: list[dict[str, Any]], ignored: frozenset[str]) -> list[dict[str, Any]]:
    kept = [{k: v for k, v in row.items() if k.lower() not in ignored} for row in rows]
    return sorted(kept, key=_dump)


def infer_key(rows: list[dict[str, Any]]) -> str | None:
    """The first candidate present in row 0 whose values are all non-empty and unique."""
    if not rows:
        return None
    extra = sorted(k for k in rows[0] if k.endswith("_id") and k not in KEY_CANDIDATES)
    for candidate in (*KEY_CANDIDATES, *extra):
        if candidate not in rows[0]:
            continue
        values = [row.get(candidate) for row in rows]
        if all(v not in (None, "") for v in values) and len({_dump(v) for v in values}) == len(values):
            return candidate
    return None


def diff_table(server: str, table: str, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> Iterator[Change]:
    key = infer_key(after) or infer_key(before)
    if key is None:
        yield from _set_difference(server, table, before, after)
        return
    old = {_key_text(r, key): r for r in before}
    new = {_key_text(r, key): r for r in after}
    for k in sorted(new.keys() - old.keys()):
        yield Change(server, table, "insert", k, None, None, new[k])
    for k in sorted(old.keys() - new.keys()):
        yield Change(server, table, "delete", k, None, old[k], None)
    for k in sorted(old.keys() & new.keys()):
        for field in sorted(old[k].keys() | new[k].keys()):
            a, b = old[k].get(field), new[k].get(field)
            if _dump(a) != _dump(b):
                yield Change(server, table, "update", k, field, a, b)


def _key_text(row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    return value if isinstance(value, str) else _dump(value)


def _set_difference(server: str, table: str, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> Iterator[Change]:
    old, new = Counter(map(_dump, before)), Counter(map(_dump, after))
    for text in sorted((new - old).elements()):
        yield Change(server, table, "insert", None, None, None, orjson.loads(text))
    for text in sorted((old - new).elements()):
        yield Change(server, table, "delete", None, None, orjson.loads(text), None)


class Malformed(Exception):
    """A snapshot or stored diff not shaped as the driver writes it: the field (a path from the
    object read) and what is wrong; the adapter names file, line and field."""

    def __init__(self, field: str, problem: str):
        super().__init__(problem)
        self.field, self.problem = field, problem


def _object(value: Any, field: str) -> dict[str, Any]:
    """`value` when an object, {} when null; anything else is Malformed."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Malformed(field, f"expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise Malformed(field, f"expected a list, got {type(value).__name__}")
    return value


def diff_snapshots(initial: dict[str, Any], final: dict[str, Any], ignored: dict[str, frozenset[str]]) -> Iterator[Change]:
    """Record-level changes between two raw snapshots (a trajectory's initial_state_snapshot and
    final_state_snapshot), server by server and table by table.

    `ignored` maps a server to its non-semantic fields ('*' for the default)."""
    first = _object(initial.get("servers"), "initial_state_snapshot.servers")
    last = _object(final.get("servers"), "final_state_snapshot.servers")
    for server in sorted(set(first) | set(last)):
        before = snapshot_tables(_object(first.get(server), f"initial_state_snapshot.servers.{server}"))
        after = snapshot_tables(_object(last.get(server), f"final_state_snapshot.servers.{server}"))
        if before is None or after is None:
            continue  # an export failed: no diff, as the driver does
        drop = ignored.get(server, ignored["*"])
        for table in sorted(set(before) | set(after)):
            yield from diff_table(server, table, canonical_rows(before.get(table, []), drop),
                                  canonical_rows(after.get(table, []), drop))


def stored_diff_changes(diff: dict[str, Any]) -> Iterator[tuple[Change, dict[str, Any]]]:
    """The changes of a diff the driver stored (canonical_diff), with each table's counts and truncation.
    Malformed names the first part not shaped as the driver writes it (a path from `diff`)."""
    for server, entry in sorted(_object(diff.get("servers"), "servers").items()):
        where = f"servers.{server}"
        for table, t in sorted(_object(_object(entry, where).get("tables"), f"{where}.tables").items()):
            at = f"{where}.tables.{table}"
            t = _object(t, at)
            keys = _list(t.get("key_fields"), f"{at}.key_fields")
            if not all(isinstance(k, str) for k in keys):
                raise Malformed(f"{at}.key_fields", "expected a list of field names")
            summary = {"counts": t.get("counts"), "truncated": t.get("truncated"), "key_fields": keys}
            for row in _list(t.get("inserted"), f"{at}.inserted"):
                yield Change(server, table, "insert", _row_key(row, keys), None, None, row), summary
            for row in _list(t.get("deleted"), f"{at}.deleted"):
                yield Change(server, table, "delete", _row_key(row, keys), None, row, None), summary
            for i, upd in enumerate(_list(t.get("updated"), f"{at}.updated")):
                upd = _object(upd, f"{at}.updated[{i}]")
                for field, change in sorted(_object(upd.get("changed_fields"), f"{at}.updated[{i}].changed_fields").items()):
                    change = change if isinstance(change, dict) else {}
                    yield Change(server, table, "update", upd.get("key"), field,
                                 change.get("before"), change.get("after")), summary


def _row_key(row: Any, keys: list[str]) -> str | None:
    if not keys or not isinstance(row, dict):
        return None
    return "|".join(_key_text(row, k) for k in keys)
