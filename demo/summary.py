"""The headline tables `tracewh demo` prints, as SQL over the views."""

from __future__ import annotations

from .agent_runs import BENCHMARK
from .delegate52_runs import N_ROUND_TRIPS

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


# Paper Table 1: models (rows, weakest first) x interactions k (columns), direct mode with
# distractors. The IN list fixes the column order (a bare PIVOT sorts k as text: 10, 12, ..., 2).
D52_RS_AT_K = f"""
pivot (select model, k, round(rs, 1) as rs from d52_rs_at_k where mode = 'direct' and distractors)
on k in ({", ".join(str(2 * r) for r in range(1, N_ROUND_TRIPS + 1))}) using first(rs)
group by model order by "{2 * N_ROUND_TRIPS}"
"""

D52_CRITICAL = """
select model, mode, distractors, n_relays, round(pct_critical, 1) as pct_critical,
       round(avg_drop, 1) as avg_drop, round(avg_crit_drop, 1) as avg_crit_drop
from d52_critical order by mode, distractors desc, pct_critical
"""


def headline_queries() -> list[tuple[str, str]]:
    return [("Runs: success, calls, tokens and cost per model and condition", RUNS),
            ("Delegation flow: who handed work to whom, and what the delegates cost", DELEGATION_FLOW),
            ("DELEGATE-52 RS@k (Table 1 shape): reconstruction score after k interactions", D52_RS_AT_K),
            ("DELEGATE-52 critical errors: share of degradation from drops of 10+ points", D52_CRITICAL)]
