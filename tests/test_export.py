"""Paper exports: every format against a golden file, a pivoted LaTeX Table-1 shape, provenance, Parquet metadata."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from d52_logs import jsonl, relay_lines
from helpers import tracewh, write_zip

GOLDEN = Path(__file__).parent / "golden"
ENV = os.environ | {"SOURCE_DATE_EPOCH": "1790000000"}  # a fixed export time: goldens compare byte for byte
RS_QUERY = "select model, k, rs from d52_rs_at_k order by model, k"


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("export")
    lines = []
    for model, scores in {"gpt_4&o": (0.9, 0.8), "model-b": (0.95, 0.7)}.items():
        lines += relay_lines(model, model, "json", "json1", [{"score": s} for s in scores])
    tracewh("ingest", write_zip(tmp / "r.zip", {"results_json_x.jsonl": jsonl(lines)}), "-w", tmp / "wh", check=True)
    return tmp / "wh"


def export(wh: Path, *args: str) -> str:
    return tracewh("export", *args, "-w", wh, env=ENV, check=True).out


def matches_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("TRACEWH_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text(), f"differs from {path} (TRACEWH_UPDATE_GOLDEN=1 rewrites it)"


@pytest.mark.parametrize("fmt, suffix", [("csv", "csv"), ("json", "json"), ("markdown", "md")])
def test_text_formats_match_their_golden_files(wh, fmt, suffix):
    matches_golden(f"rs_at_k.{suffix}", export(wh, "-q", RS_QUERY, "--format", fmt, "--decimals", "1"))


def test_pivoted_latex_table_one_shape(wh):
    tex = export(wh, "-q", "select model, k, rs from d52_rs_at_k", "--pivot", "k", "--value", "rs", "--format", "latex",
                 "--decimals", "1", "--bold", "max", "--caption", "RS@k: 100% = intact", "--label", "tab:rs")
    matches_golden("rs_at_k_pivot.tex", tex)
    assert r"gpt\_4\&o & 90.0 & \textbf{80.0} \\" in tex and r"\caption{RS@k: 100\% = intact}" in tex
    assert tex.index(r"\toprule") < tex.index(r"\midrule") < tex.index(r"\bottomrule")
    engine = shutil.which("pdflatex")
    if engine:  # compile it when a LaTeX engine is installed
        doc = "\\documentclass{article}\\usepackage{booktabs}\\begin{document}\n" + tex + "\\end{document}\n"
        folder = GOLDEN.parent / "latex-build"
        folder.mkdir(exist_ok=True)
        (folder / "t.tex").write_text(doc)
        assert subprocess.run([engine, "-interaction=nonstopmode", "t.tex"], cwd=folder, capture_output=True).returncode == 0
        shutil.rmtree(folder)


def test_markdown_pivot_scale_and_bold_min(wh):
    md = export(wh, "d52_rs_at_k", "--pivot", "k", "--value", "rs", "--format", "markdown", "--scale", "0.01",
                "--decimals", "2", "--bold", "min", "--where", "mode = 'direct'")
    assert md.splitlines()[1] == "| model | mode | distractors | n_relays | 2 | 4 |"  # after the provenance comment
    assert "| model-b | direct | true | 1 | 0.95 | **0.70** |" in md


def test_every_export_carries_provenance(wh, tmp_path):
    csv_text = export(wh, "d52_relays")
    meta = json.loads(csv_text.splitlines()[0].removeprefix("# tracewh export: "))
    assert meta["store_version"] == "1" and meta["query"] == "select * from d52_relays order by all"
    assert meta["exported_at"] == "2026-09-21T14:13:20+00:00" and meta["tracewh_version"]
    out = tmp_path / "relays.parquet"
    tracewh("export", "d52_relays", "--format", "parquet", "--out", out, "-w", wh, check=True)
    table = pq.read_table(out)
    assert table.num_rows == 2
    assert table.schema.metadata[b"tracewh.store_version"] == b"1"
    assert table.schema.metadata[b"tracewh.query"] == b"select * from d52_relays order by all"


def test_export_refuses_writes_and_bad_options(wh):
    assert tracewh("export", "-q", "delete from events", "-w", wh).code == 2
    assert tracewh("export", "runs", "--format", "docx", "-w", wh).code == 2
    assert tracewh("export", "runs", "--pivot", "k", "-w", wh).code == 2


def test_a_view_exports_in_one_stable_order(wh):
    """Views define no order: an export lists a view's rows every column ascending, so RS@k
    runs k = 2, 4, ... within each model (DuckDB's hash aggregation gave k = 4 first)."""
    tex = export(wh, "d52_rs_at_k", "--format", "latex", "--decimals", "1")
    body = tex[tex.index(r"\midrule") + len(r"\midrule"):tex.index(r"\bottomrule")].strip().splitlines()
    keys = [(cells[0], int(cells[3])) for cells in (line.rstrip(r" \\").split(" & ") for line in body)]
    assert keys == [(r"gpt\_4\&o", 2), (r"gpt\_4\&o", 4), ("model-b", 2), ("model-b", 4)]
    filtered = export(wh, "d52_rs_at_k", "--where", "k = 4", "--format", "csv").splitlines()
    assert [line.split(",")[0] for line in filtered[2:]] == ["gpt_4&o", "model-b"]


def test_the_readme_table_one_export_gives_one_row_per_model(wh):
    """The README's LaTeX example: the columns chosen in the query, so each model is one row."""
    tex = export(wh, "-q", "select model, k, rs from d52_rs_at_k where mode = 'direct' and distractors", "--pivot", "k",
                 "--value", "rs", "--decimals", "1", "--bold", "max", "--format", "latex")
    assert r"model & 2 & 4 \\" in tex
    assert [line.split(" & ")[0] for line in tex.splitlines() if line.endswith(r"\\")][1:] == [r"gpt\_4\&o", "model-b"]


def test_exporting_from_a_missing_store_is_an_error_not_a_table_of_nothing(wh):
    result = tracewh("export", "runs", "-w", wh.parent / "whx")
    assert result.code == 2 and f"no tracewh store at {wh.parent / 'whx'}" in result.err and result.out == ""
    assert "store_version" not in result.out
