"""The layout's promises: storage below ingest and queries, one way in (the Warehouse), the
same answer from every door."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from helpers import llm_call, tracewh, write_native

import tracewh as tw
from tracewh.errors import QueryError

PACKAGE = Path(tw.__file__).parent  # the installed package: the repo itself (-e), or site-packages/tracewh
REPO = Path(__file__).resolve().parents[1]  # the source tree, whichever way tracewh is installed


def _loaded_after_import(module: str) -> set[str]:
    code = f"import sys, json, {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


@pytest.mark.parametrize("module", sorted(p.stem for p in (PACKAGE / "warehouse").glob("*.py") if p.stem != "__init__"))
def test_storage_imports_nothing_above_it(module):
    loaded = _loaded_after_import(f"tracewh.warehouse.{module}")
    above = sorted(m for m in loaded if re.match(r"tracewh\.(ingest|cli|service|analytics|api|queries)\b", m))
    assert above == []


def test_the_cli_loads_no_quality_gate_or_engine_until_a_command_needs_it():
    loaded = _loaded_after_import("tracewh.cli.app")
    heavy = sorted(m for m in loaded if m.split(".")[0] in ("great_expectations", "polars", "pyarrow", "sqlglot",
                                                            "duckdb", "deltalake", "pandas"))
    assert heavy == []


@pytest.mark.parametrize("door", ["cli", "service"])
def test_doors_reach_the_store_only_through_the_warehouse(door):
    for source in (PACKAGE / door).rglob("*.py"):
        text = source.read_text()
        code = re.sub(r"^\s*(from|import) .*$", "", text, flags=re.M)  # a module named engine is no reach
        assert not re.search(r"\.(store|con|engine)\b(?!\w)", code), f"{source.name} reaches into a Warehouse"
        assert not re.search(r"^\s*(import|from) (duckdb|deltalake)", text, re.M), f"{source.name} talks to the engine"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("doors")
    tracewh("ingest", write_native(tmp / "run.jsonl", [llm_call("r", i) for i in range(3)]), "-w", tmp / "wh", check=True)
    return tmp / "wh"


@pytest.mark.parametrize("query", ["delete from events", "select * from llm_call", "select count(*) frm events",
                                   "copy events to 'out.csv'", "select 1; select 2", "select nope from runs"])
def test_every_door_gives_the_same_error(store, query, new_service):
    cli = tracewh("sql", query, "-w", store)
    assert cli.code == 2
    with pytest.raises(QueryError) as python:
        tw.open(store).query(query)
    http = new_service(store).post("/sql", json={"query": query})
    assert http.status_code == 400
    message = str(python.value)
    assert " ".join(cli.err.split()) == " ".join(f"error: {message}".split())
    assert http.json()["detail"] == message


def _source_packages(root: Path) -> set[str]:
    return {"tracewh" + ("." + ".".join(p.parent.relative_to(root).parts) if p.parent != root else "")
            for p in root.rglob("__init__.py")
            if not {"tests", "bench", ".venv", "build"} & set(p.relative_to(root).parts)}


def test_every_package_ships():
    """pyproject lists packages by hand (the repo root is the package): none may be forgotten, and
    an installed tracewh (a wheel, not -e) holds each of them and the views and web assets."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert _source_packages(REPO) == listed
    installed = _source_packages(PACKAGE)
    assert installed >= listed, f"not installed: {sorted(listed - installed)}"
    for data in ("queries/core/events.sql", "queries/delegate52/d52_rs_at_k.sql", "service/web/templates/base.html"):
        assert (PACKAGE / data).is_file(), f"{data} is not installed"


def test_the_tests_pass_against_a_wheel(tmp_path):
    """`pip install .` (a wheel), not only `pip install -e .`: the wheel goes into a fresh venv that
    borrows this one's dependencies, and a subset of the tests (layout, text rendering, the CLI's
    demo, schema and Python API) runs against it, in about a minute. Built from a copy of the
    sources, so the repo gets no build/ folder."""
    import shutil
    import sysconfig

    source = tmp_path / "src"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".venv", ".git", "tests", "bench", "build", "*.egg-info",
                                                                "__pycache__", "spark-warehouse", ".pytest_cache"))
    run = partial(subprocess.run, capture_output=True, text=True, timeout=300)
    built = run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "--no-index",
                 "-w", str(tmp_path / "dist")])
    assert built.returncode == 0, built.stdout + built.stderr
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True).stdout.strip()
    # This venv's packages without its editable tracewh: a plain path entry, whose own .pth files
    # (the editable finder's) are not read.
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = run([python, "-m", "pip", "install", "--no-deps", "--no-index", *map(str, (tmp_path / "dist").glob("*.whl"))])
    assert installed.returncode == 0, installed.stdout + installed.stderr
    where = run([python, "-c", "import tracewh; print(tracewh.__file__)"], check=True, cwd=tmp_path).stdout.strip()
    assert where.startswith(site), where
    tests = REPO / "tests"
    result = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests / "test_layout.py"),
                  str(tests / "test_text_render.py"), str(tests / "test_cli.py"),  # the CLI: the demo (views, web assets) and schema
                  "-k", "not wheel and (test_layout or test_text_render or demo_twice or schema_page or query_result)"],
                 cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(("tracewh", *(parts[:-1] if parts[-1] == "__init__" else parts)))


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The package's own modules `path` imports anywhere in it (lazy and TYPE_CHECKING imports too)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            # `from . import x` names the submodule x; `from .m import f` the module m
            targets = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules] or [base]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in modules and t != name)
    return found


def test_no_module_imports_itself_back():
    """Imports run one way: no circle of modules, counting every import in a file (a lazy import
    inside a function still ties the two modules together for a reader)."""
    from graphlib import CycleError, TopologicalSorter

    paths = [p for p in PACKAGE.rglob("*.py") if not {"tests", "bench", "examples", ".venv"} & set(p.relative_to(PACKAGE).parts)]
    modules = {_module_name(p) for p in paths}
    graph = {_module_name(p): _imports(p, modules) for p in paths}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        pytest.fail(f"import circle: {' -> '.join(error.args[1])}")
