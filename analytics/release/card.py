"""README.md, the dataset card: YAML front matter as the Hugging Face Hub reads it (licence,
name, one config per Parquet folder so `datasets` and the Hub's viewer find the files), then the
contents, provenance, privacy, how to load it and the event schema, rendered from
templates/card.md.j2 with the schema's own column and kind docs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
import yaml

from ...schema import COLUMNS, KINDS, SCHEMA_VERSION

TEMPLATES = Path(__file__).parent / "templates"
UNSPECIFIED = "other"  # the Hub's word for a licence outside its list; license_name says which


def front_matter(title: str, license: str, views: list[str]) -> str:  # noqa: A002 - the Hub's key
    configs = [{"config_name": "events", "data_files": [{"split": "train", "path": "events/*.parquet"}],
                "default": True}]
    configs += [{"config_name": v, "data_files": [{"split": "train", "path": f"views/{v}/*.parquet"}]} for v in views]
    meta: dict[str, Any] = {"license": license}
    if license == UNSPECIFIED:
        meta["license_name"] = "unspecified"
    meta |= {"pretty_name": title, "tags": ["tracewh", "agent-traces", "llm-agents"], "configs": configs}
    return yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)


def licence_text(license: str) -> str:  # noqa: A002
    if license == UNSPECIFIED:
        return ("No licence was chosen when this release was written (`license: other`, `license_name: "
                "unspecified`): ask its authors before reusing it.")
    return f"`{license}` (the identifier in the front matter, as the Hugging Face Hub lists licences)."


def _cell(value: object) -> str:
    """Text for a Markdown table cell: a `|` would end the cell, a newline the row."""
    return " ".join(str(value).split()).replace("|", "\\|")


def render_card(values: Mapping[str, Any]) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=False, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["cell"] = _cell
    return env.get_template("card.md.j2").render(columns=COLUMNS, kinds=KINDS, schema_version=SCHEMA_VERSION, **values)
