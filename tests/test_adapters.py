"""Every source adapter has the one shape (ingest/adapters/base.py) and is registered once.

Each package under ingest/adapters/ holds __init__.py (exporting ADAPTER, its docstring
citing the format's page), records.py and events.py; ADAPTERS lists every package's
ADAPTER, and only those, in claiming order.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from tracewh.ingest import adapters
from tracewh.ingest.adapters import ADAPTERS, Adapter

FOLDER = Path(adapters.__file__).parent
PACKAGES = sorted(p.name for p in FOLDER.iterdir() if p.is_dir() and p.name != "__pycache__")
REPO = Path(__file__).resolve().parent.parent


def test_every_registry_entry_is_an_adapter():
    assert ADAPTERS and all(isinstance(adapter, Adapter) for adapter in ADAPTERS)


def test_names_are_unique():
    names = [adapter.name for adapter in ADAPTERS]
    assert len(names) == len(set(names))


def test_every_package_is_in_the_registry_and_nothing_else():
    exported = [importlib.import_module(f"{adapters.__name__}.{package}").ADAPTER for package in PACKAGES]
    assert sorted(map(id, exported)) == sorted(map(id, ADAPTERS))
    assert sorted(adapter.name for adapter in ADAPTERS) == PACKAGES  # an adapter is named after its package


def test_multi_file_formats_claim_first():
    assert [adapter.name for adapter in ADAPTERS[:2]] == ["decisionbench", "entcollabbench"]


@pytest.mark.parametrize("package", PACKAGES)
def test_package_layout(package):
    files = {p.name for p in (FOLDER / package).iterdir()}
    assert {"__init__.py", "records.py", "events.py"} <= files
    module = importlib.import_module(f"{adapters.__name__}.{package}")
    assert isinstance(module.ADAPTER, Adapter)
    pages = re.findall(r"docs/[\w/]+\.md", module.__doc__ or "")
    assert pages, f"{package}/__init__.py should cite the page describing its format"
    assert all((REPO / page).is_file() for page in pages), pages
