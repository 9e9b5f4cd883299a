"""DecisionBench C2 profile cards: one markdown card per model from Stage-1 events only.

Deterministic: the same store gives byte-identical cards (no times, fixed ordering and
number formats).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from . import Queryable

TAGGER_VERSION = "tracewh-sql-1"
VARIANTS = ("c2",)


def _fmt(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def card(model: str, n_tasks: int, suites: list[str], skills: list[tuple]) -> str:
    """skills: (skill, pass_rate, n, avg_steps, avg_output_tokens, cost_per_task), best first."""
    lines = ["---", f"model: {model}", "variant: c2_static", f"tagger_version: {TAGGER_VERSION}",
             f"n_tasks: {n_tasks}", f"suites: [{', '.join(suites)}]", "---", "",
             f"# {model} — derived skill profile (C2)", "",
             f"Generated automatically from {n_tasks} Stage-1 tasks across {len(suites)} benchmark"
             f"{'s' if len(suites) != 1 else ''}. No LLM judgment; reproducible from trace archives alone.", ""]
    # Top three, and the bottom three of the rest (so a model with few skills lists none twice).
    strengths = skills[:3]
    weaknesses = list(reversed(skills[3:]))[:3]
    for title, chosen in (("Strengths", strengths), ("Weaknesses", weaknesses)):
        lines += [f"## {title}", ""] + [f"- {s[0]}: {_fmt(s[1], 1)}% pass over {s[2]} tasks" for s in chosen] + [""]
    lines += ["## All measured skills", "", "| skill | pass % | n | avg steps | avg output tokens | $/task |",
              "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {s[0]} | {_fmt(s[1], 1)} | {s[2]} | {_fmt(s[3], 1)} | {_fmt(s[4], 0)} | {_fmt(s[5], 4)} |" for s in skills]
    return "\n".join(lines) + "\n"


def profile_cards(wh: Queryable) -> dict[str, str]:
    """model -> card text, for every model with Stage-1 tasks."""
    totals = wh.sql("""select model, count(*), list(distinct suite order by suite) from dcb_tasks
                       where split = 'stage1' group by model order by model""").fetchall()
    cards = {}
    for model, n_tasks, suites in totals:
        skills = wh.sql("""select skill, pass_rate, n_tasks, avg_steps, avg_output_tokens, cost_per_task
                           from dcb_skill_stats where model = $model
                           order by pass_rate desc, cost_per_success asc nulls last, skill""",
                        params={"model": model}).fetchall()
        cards[model] = card(model, n_tasks, suites, skills)
    return cards


def write_cards(wh: Queryable, out: Path, variant: str = "c2") -> list[Path]:
    if variant not in VARIANTS:
        raise UsageError(f"variant {variant!r}: tracewh derives only c2 cards from events "
                         "(c1 is curated by hand, c3 is written by LLM judges)")
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for model, text in profile_cards(wh).items():
        path = out / f"{model.replace('/', '_')}.md"
        path.write_text(text)
        paths.append(path)
    return paths
