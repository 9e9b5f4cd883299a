"""Fixtures shared by the tests."""

from pathlib import Path

import pytest


@pytest.fixture
def wh(tmp_path: Path) -> Path:
    return tmp_path / "wh"
