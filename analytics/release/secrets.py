"""The secret scan: API-key shapes and e-mail addresses in what a release would publish.

Run by DuckDB over the written shards (every text column, the payload's JSON text included), so
the scan sees exactly the bytes that would be published, after `--no-content`, and a store of
any size is read as a stream, never held. One pass finds the cells any pattern matches; only
those are taken apart per pattern. A value is allowed when an `--allow` names it: the value
itself, its detector's name (`email`), or a regular expression matching all of it.

The patterns are written here, in RE2 syntax (DuckDB's regular expressions): detect-secrets, the
maintained scanner, runs its Python patterns line by line in Python, which would mean pulling
every payload out of DuckDB, and its detectors miss shapes this scan needs (OpenAI project keys,
Anthropic, Hugging Face and Google keys, e-mail addresses). The shapes follow the providers'
published key formats, as gitleaks' rules spell them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import orjson

from ...errors import UsageError
from ...warehouse.sqltext import literal, literal_list


@dataclass(frozen=True)
class Detector:
    name: str
    pattern: str  # RE2

    @property
    def loose(self) -> str:
        """The pattern without its word boundaries: what finds the cells to look at in the JSON text,
        where an escape (`\\n`) glues a letter to the value after it."""
        return self.pattern.replace(r"\b", "")


DETECTORS: tuple[Detector, ...] = (
    Detector("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    # After `sk-ant-`'s hyphen the legacy shape needs 32 letters and digits: an Anthropic key is never one.
    Detector("openai-key", r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|\bsk-[A-Za-z0-9]{32,}"),
    Detector("aws-access-key-id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    Detector("github-token", r"\bgh[pousr]_[A-Za-z0-9]{36,}|\bgithub_pat_[A-Za-z0-9_]{22,}"),
    Detector("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}"),
    Detector("huggingface-token", r"\bhf_[A-Za-z0-9]{34,}"),
    Detector("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    Detector("private-key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"),
    Detector("jwt", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    Detector("bearer-token", r"\b[Bb]earer\s+[A-Za-z0-9._~+/-]{20,}=*"),
    Detector("email", r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
)
NOT_SCANNED = frozenset({"event_id", "batch_id"})  # ids tracewh made: hashes, never a user's text
PLACE_COLUMNS = ("run_id", "event_id", "kind")
SHOWN = 20  # places listed in the refusal
CONTEXT = 16  # characters shown either side of a finding
# A JSON escape (\n, \", \u00e9) would glue its letter to the text after it: blanked before extracting.
JSON_ESCAPE = r"\\(?:u[0-9a-fA-F]{4}|.)"


@dataclass(frozen=True)
class Finding:
    detector: str
    value: str
    count: int  # cells holding it
    run_id: str | None  # of the first place (in run, event order)
    event_id: str | None
    kind: str | None
    field: str  # file group and column, plus the path inside the payload: payload.messages[0].content
    excerpt: str  # the text around it, every finding in it masked

    def describe(self) -> str:
        where = ", ".join(p for p in (f"run {self.run_id}" if self.run_id else "",
                                      f"event {self.event_id}" if self.event_id else "",
                                      self.kind or "") if p)
        more = f" (and {self.count - 1} more cell{'s' * (self.count > 2)})" if self.count > 1 else ""
        return f"{self.detector} {mask(self.value)}: {where}, {self.field}{more}: {self.excerpt}"


class SecretsFound(UsageError):
    """The release would publish secret-shaped values no --allow names; nothing was written."""

    def __init__(self, findings: list[Finding], total: int):
        self.findings = findings
        shown = "\n".join(f"  {f.describe()}" for f in findings)
        rest = f"\n  and {total - len(findings)} more values" if total > len(findings) else ""
        super().__init__(f"the release would publish {total} secret-shaped value{'s' * (total != 1)} (nothing was "
                         "written); remove them from the store, release with --no-content if they are content, or "
                         f"name each with --allow VALUE, --allow DETECTOR or --allow REGEX:\n{shown}{rest}")


def mask(value: str) -> str:
    """Enough of a value to recognise it, never enough to use it."""
    if len(value) <= 8:
        return value[:1] + "…"
    return f"{value[:4]}…{value[-2:]} ({len(value)} chars)"


def allowed(finding_detector: str, value: str, allow: Sequence[str]) -> bool:
    for entry in allow:
        if entry in (value, finding_detector):
            return True
        try:
            if re.fullmatch(entry, value):
                return True
        except re.error:
            continue
    return False


def scan(groups: dict[str, list[Path]], allow: Sequence[str]) -> int:
    """Scan each group of Parquet files (a label, e.g. `events` or `views/runs`, and its files);
    raise SecretsFound listing the values no `allow` entry names. Returns how many distinct
    values were found and allowed."""
    con = duckdb.connect()
    try:
        _find(con, groups)
        values = con.execute("select detector, value, count(*) from found group by all order by all").fetchall()
        refused = [(d, v, n) for d, v, n in values if not allowed(d, v, allow)]
        if refused:
            raise SecretsFound([_place(con, groups, *r) for r in refused[:SHOWN]], len(refused))
        return len(values)
    finally:
        con.close()


def _find(con: duckdb.DuckDBPyConnection, groups: dict[str, list[Path]]) -> None:
    """Table `found`: (grp, run_id, event_id, kind, field, detector, value), one row a finding."""
    any_pattern = "|".join(f"(?:{d.loose})" for d in DETECTORS)
    detectors = ", ".join(f"({literal(d.name)}, {literal(d.pattern)}, {literal(d.loose)})" for d in DETECTORS)
    con.execute(f"create temp table detectors as select * from (values {detectors}) d(name, pattern, loose)")
    con.execute("create temp table found(grp varchar, run_id varchar, event_id varchar, kind varchar, "
                "field varchar, detector varchar, value varchar)")
    for label, files in groups.items():
        scan_of = f"read_parquet({literal_list([str(f) for f in files])})"
        columns = con.execute(f"describe select * from {scan_of}").fetchall()
        texts = [name for name, kind, *_ in columns if _holds_text(kind) and name not in NOT_SCANNED]
        if not texts:
            continue
        names = {name for name, *_ in columns}
        # The places under names of their own: run_id is scanned too, and unpivoted away.
        places = ", ".join(f'"{c}" AS place_{c}' if c in names else f"NULL::VARCHAR AS place_{c}"
                           for c in PLACE_COLUMNS)
        cells = ", ".join(f'"{c}"' for c in texts)
        as_text = ", ".join(f'CAST("{c}" AS VARCHAR) AS "{c}"' for c in texts)  # JSON, lists, structs: as text
        con.execute(f"""
            insert into found
            select {literal(label)}, place_run_id, place_event_id, place_kind, field, d.name,
                   unnest(regexp_extract_all(regexp_replace(text, {literal(JSON_ESCAPE)}, ' ', 'g'), d.pattern))
            from (select * from (unpivot (select {places}, {as_text} from {scan_of})
                                 on {cells} into name field value text)
                  where regexp_matches(text, {literal(any_pattern)})) hits, detectors d
            where regexp_matches(text, d.loose)""")


def _holds_text(duckdb_type: str) -> bool:
    """Whether a column can hold text: anything but numbers, booleans and times (a view's JSON,
    lists and structs are scanned as their text)."""
    return not re.match(r"BOOLEAN|TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|U\w*INT|FLOAT|DOUBLE|DECIMAL|DATE|TIME|"
                        r"INTERVAL", duckdb_type)


def _place(con: duckdb.DuckDBPyConnection, groups: dict[str, list[Path]], detector: str, value: str,
           count: int) -> Finding:
    """Where a value is first found, and the text around it."""
    grp, run_id, event_id, kind, column = con.execute(
        "select grp, run_id, event_id, kind, field from found where detector = $1 and value = $2 "
        "order by grp, run_id nulls last, event_id nulls last, field limit 1", [detector, value]).fetchone()
    where = "event_id = $1" if event_id is not None else f'contains("{column}", $1)'
    text, = con.execute(f'select "{column}" from read_parquet({literal_list([str(f) for f in groups[grp]])}) '
                        f"where {where} limit 1", [event_id if event_id is not None else value]).fetchone()
    field = f"{grp}.{column}"
    if column == "payload":
        field += _json_path(text, value)
    return Finding(detector, value, count, run_id, event_id, kind, field, _excerpt(text, value))


def _json_path(text: str, value: str) -> str:
    """Where in the payload the value sits: .messages[0].content ('' when the JSON hides it)."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return ""
    stack: list[tuple[str, object]] = [("", data)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            stack += [(f"{path}.{k}", v) for k, v in reversed(node.items())]
        elif isinstance(node, list):
            stack += [(f"{path}[{i}]", v) for i, v in reversed(list(enumerate(node)))]
        elif isinstance(node, str) and value in node:
            return path
    return ""


def _excerpt(text: str, value: str) -> str:
    """The text around the value's first place, every secret-shaped value in it masked before
    the context is cut (a value cut in half would no longer be recognised)."""
    at = text.find(value)
    if at < 0:
        return mask(value)
    before, after = _masked(text[:at]), _masked(text[at + len(value):])
    around = (f"{'…' if len(before) > CONTEXT else ''}{before[-CONTEXT:]}[{mask(value)}]"
              f"{after[:CONTEXT]}{'…' if len(after) > CONTEXT else ''}")
    return " ".join(around.split())


def _masked(text: str) -> str:
    for detector in DETECTORS:
        text = re.sub(detector.pattern, lambda m: mask(m.group(0)), text)
    return text
