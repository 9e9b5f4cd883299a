"""Figures: each renders from its view, honours --where, and is not a blank image."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib.image as mpimg
import pytest
from helpers import plain, tracewh


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("home")
    tracewh("demo", "--tasks", "4", env=os.environ | {"TRACEWH_HOME": str(home)}, check=True)
    return home / "demo" / "warehouse"


def non_trivial(path: Path) -> bool:
    pixels = mpimg.imread(path)
    return path.stat().st_size > 10_000 and pixels.std() > 0.05 and min(pixels.shape[:2]) > 300


@pytest.mark.parametrize("kind", ["rs-curves", "critical-curves", "pareto", "vendor-flow", "role-accuracy"])
def test_each_plot_renders(demo, tmp_path, kind):
    out = tmp_path / f"{kind}.png"
    tracewh("plot", kind, "--out", out, "-w", demo, check=True)
    assert non_trivial(out)


def test_plots_respect_where_and_write_pdf_and_svg(demo, tmp_path):
    tracewh("plot", "rs-curves", "--out", tmp_path / "a.png", "--where", "model = 'gpt-4.1'", "-w", demo, check=True)
    tracewh("plot", "rs-curves", "--out", tmp_path / "b.png", "-w", demo, check=True)
    assert (tmp_path / "a.png").read_bytes() != (tmp_path / "b.png").read_bytes()
    for suffix in ("pdf", "svg"):
        tracewh("plot", "pareto", "--out", tmp_path / f"p.{suffix}", "-w", demo, check=True)
    assert (tmp_path / "p.pdf").read_bytes().startswith(b"%PDF") and b"<svg" in (tmp_path / "p.svg").read_bytes()
    empty = tracewh("plot", "rs-curves", "--out", tmp_path / "c.png", "--where", "model = 'nobody'", "-w", demo)
    assert empty.code == 2 and "nothing to plot" in plain(empty.err)
    assert tracewh("plot", "pie", "--out", tmp_path / "d.png", "-w", demo).code == 2
    assert tracewh("plot", "pareto", "--out", tmp_path / "d.png", "--where", "1=1; drop view runs", "-w", demo).code == 2


def test_role_accuracy_respects_where(demo, tmp_path):
    tracewh("plot", "role-accuracy", "--out", tmp_path / "all.png", "-w", demo, check=True)
    tracewh("plot", "role-accuracy", "--out", tmp_path / "one.png", "--where", "model = 'gpt-5.4' and not multi",
            "-w", demo, check=True)
    assert non_trivial(tmp_path / "one.png")
    assert (tmp_path / "one.png").read_bytes() != (tmp_path / "all.png").read_bytes()


def test_rs_at_k_ticks_are_the_k_measured_and_pareto_panels_are_readable(demo):
    """RS@k is measured at even k: ticks at 2, 4, ..., not 2.5, 5, 7.5. Pareto: at most two panels a
    row (four in a row, scaled to a page, were unreadable) and one legend in a readable size."""
    import tracewh as tw
    from tracewh.analytics.plots import pareto, rs_curves

    wh = tw.open(demo)
    ks = sorted(k for (k,) in wh.sql("select distinct k from d52_rs_at_k").fetchall())
    figure = rs_curves(wh, None)
    assert list(figure.axes[0].get_xticks()) == ks
    figure = pareto(wh, None)
    panels = [ax for ax in figure.axes if ax.get_visible()]
    columns = {round(ax.get_position().x0, 3) for ax in panels}
    assert len(panels) == wh.sql("select count(distinct suite) from dcb_quality").fetchall()[0][0] and len(columns) <= 2
    width, _ = figure.get_size_inches()
    assert width / len(columns) >= 5  # inches a panel
    (legend,) = figure.legends
    assert min(t.get_fontsize() for t in legend.get_texts()) >= 9
