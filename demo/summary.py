"""The headline tables `tracewh demo` prints, as SQL over the views."""

from __future__ import annotations

from .agent_runs import BENCHMARK

RUNS = f"""
select r.model, r.attrs ->> '$.condition' as condition, r.n_tasks as tasks,
       round(100 * avg(s.score), 1) as success_pct,
       r.n_llm_calls as llm_calls, r.total_tokens as tokens, round(r.cost_usd, 3) as cost_usd,
       r.n_delegations as delegations
from runs r join scores s using (run_id)
where r.benchmark = '{BENCHMARK}'
group by all order by model, condition
"""

DELEGATION_FLOW = f"""
select d.model as delegator, d.to_model as delegate, count(distinct d.event_id) as delegations,
       round(sum(c.cost_usd), 4) as delegate_cost_usd
from delegations d join llm_calls c on c.parent_span_id = d.span_id and c.run_id = d.run_id
where d.benchmark = '{BENCHMARK}'
group by all order by delegator, delegate
"""


def headline_queries() -> list[tuple[str, str]]:
    return [("Runs: success, calls, tokens and cost per model and condition", RUNS),
            ("Delegation flow: who handed work to whom, and what the delegates cost", DELEGATION_FLOW)]
