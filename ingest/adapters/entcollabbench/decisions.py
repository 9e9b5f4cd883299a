"""Approval decisions in the agents' final-answer text: `DECISION:<label>, RATIONALE:<reason>, ERROR:<error>`
(docs/formats/entcollabbench.md §17).

No benchmark code parses these (the LLM judge reads them); tables need label, cited
rule ids (e.g. LEG-EVAL-0001) and whether the agent flagged missing information.
"""

from __future__ import annotations

import re
from typing import Any

_DECISION = re.compile(r"DECISION\s*:\s*<?\s*([A-Za-z_ ]+?)\s*>?\s*(?:,|\n|$)", re.IGNORECASE)
_RATIONALE = re.compile(r"RATIONALE\s*:\s*(.*?)\s*(?:,?\s*ERROR\s*:\s*(.*?))?\s*$", re.IGNORECASE | re.DOTALL)
_RULE_ID = re.compile(r"\b[A-Z]{2,8}(?:-[A-Z0-9]{2,12})+-\d{3,5}\b")
_MISSING = re.compile(r"\bmissing\b|\bnot provided\b|\bno evidence\b", re.IGNORECASE)
LABELS = ("approve", "reject", "require_preapproval", "require_docs", "not_applicable", "out_of_scope", "error")


def parse_decision(text: str) -> dict[str, Any] | None:
    """Label, rationale, cited rules and missing-information flag; None when the text holds no decision."""
    found = _DECISION.search(text)
    if not found:
        return None
    label = re.sub(r"[\s-]+", "_", found.group(1).strip().lower())
    rest = _RATIONALE.search(text, found.end() - 1)
    rationale = rest.group(1).strip() if rest else ""
    error = (rest.group(2) or "").strip() if rest else ""
    return {
        "label": label,
        "known_label": label in LABELS,
        "rationale": rationale,
        "error": error or None,
        "rules": sorted(set(_RULE_ID.findall(rationale))),
        # require_docs means documents are missing; other labels may still say so in the rationale
        "missing_info": label == "require_docs" or bool(_MISSING.search(rationale)),
    }
