"""croissant.json: the release described in Croissant 1.0 (MLCommons' JSON-LD vocabulary for ML
datasets, read by mlcroissant, Hugging Face, Kaggle and dataset search engines).

Every shard is a FileObject with its size and sha256; the shards of `events/` (and of each view)
are a FileSet, which a RecordSet reads, one Field per Parquet column, typed from the Arrow schema
and described with the event schema's own column docs (schema/events.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ...schema import COLUMNS
from ...schema.release import CROISSANT_1_0 as CONFORMS_TO
from .shards import Shard

PARQUET = "application/x-parquet"
# The Croissant 1.0 JSON-LD context, as the specification (and mlcroissant) spell it.
CONTEXT = {
    "@language": "en", "@vocab": "https://schema.org/", "citeAs": "cr:citeAs", "column": "cr:column",
    "conformsTo": "dct:conformsTo", "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"}, "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/", "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"}, "extract": "cr:extract", "field": "cr:field",
    "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject", "fileSet": "cr:fileSet", "format": "cr:format",
    "includes": "cr:includes", "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath", "key": "cr:key",
    "md5": "cr:md5", "parentField": "cr:parentField", "path": "cr:path", "recordSet": "cr:recordSet",
    "references": "cr:references", "regex": "cr:regex", "repeated": "cr:repeated", "replace": "cr:replace",
    "samplingRate": "cr:samplingRate", "sc": "https://schema.org/", "separator": "cr:separator", "source": "cr:source",
    "subField": "cr:subField", "transform": "cr:transform",
}
EVENT_DOCS = {c.name: c.doc for c in COLUMNS}


def data_type(arrow: pa.DataType) -> str:
    """The schema.org type of an Arrow column."""
    if pa.types.is_boolean(arrow):
        return "sc:Boolean"
    if pa.types.is_integer(arrow):
        return "sc:Integer"
    if pa.types.is_floating(arrow) or pa.types.is_decimal(arrow):
        return "sc:Float"
    if pa.types.is_timestamp(arrow):
        return "sc:DateTime"
    if pa.types.is_date(arrow):
        return "sc:Date"
    return "sc:Text"  # strings, and nested values (lists, structs) as their text


def croissant(meta: Mapping[str, Any], tables: Mapping[str, tuple[list[Shard], pa.Schema, str]]) -> str:
    """The JSON-LD text. `meta`: name, description, license, date, version, url and citation (optional);
    `tables`: record set name -> (its shards, their Arrow schema, a description)."""
    distribution: list[dict[str, Any]] = []
    record_sets = []
    for name, (shards, schema, description) in tables.items():
        folder = shards[0].path.rsplit("/", 1)[0]
        distribution += [{"@type": "cr:FileObject", "@id": s.path, "name": s.path, "contentUrl": s.path,
                          "encodingFormat": PARQUET, "contentSize": f"{s.bytes} B", "sha256": s.sha256} for s in shards]
        file_set = f"{folder}/parquet-files"
        distribution.append({"@type": "cr:FileSet", "@id": file_set, "name": file_set, "encodingFormat": PARQUET,
                             "includes": f"{folder}/*.parquet",
                             "description": f"The {len(shards)} Parquet shard(s) of {name}."})
        docs = EVENT_DOCS if name == "events" else {}
        record_sets.append({
            "@type": "cr:RecordSet", "@id": name, "name": name, "description": description,
            "field": [{"@type": "cr:Field", "@id": f"{name}/{f.name}", "name": f.name,
                       **({"description": docs[f.name]} if f.name in docs else {}),
                       "dataType": data_type(f.type),
                       "source": {"fileSet": {"@id": file_set}, "extract": {"column": f.name}}} for f in schema],
        })
    document = {
        "@context": CONTEXT, "@type": "sc:Dataset", "conformsTo": CONFORMS_TO,
        "name": meta["name"], "description": meta["description"], "license": meta["license"],
        **({"url": meta["url"]} if meta.get("url") else {}),
        **({"citeAs": meta["citation"]} if meta.get("citation") else {}),
        "version": meta["version"], "datePublished": meta["date"],
        "keywords": ["tracewh", "agent traces", "LLM agents"],
        "distribution": distribution, "recordSet": record_sets,
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
