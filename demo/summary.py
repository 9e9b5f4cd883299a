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


DCB_QUALITY = """
pivot (select model, suite, round(mean_q, 2) as q from dcb_quality where condition = 'blind')
on suite in ('gaia', 'tau', 'bfcl') using first(q) group by model order by model
"""

DCB_FIDELITY = """
select condition, n, round(fid1_pct, 1) as fid1_pct, round(fid3_pct, 1) as fid3_pct
from dcb_fidelity order by condition
"""

DCB_SELF_PREFERENCE = """
select orchestrator, vendor, n, round(same_vendor_pct, 1) as same_vendor_pct,
       round(chance_pct, 1) as chance_pct, round(ratio, 2) as ratio
from dcb_self_preference order by ratio desc nulls last
"""

DCB_CEILING = """
select model, suite, round(actual, 2) as actual, round(ceiling, 2) as ceiling, round(gap, 2) as gap
from dcb_ceiling where rho = 0.8 order by gap desc, model, suite limit 8
"""

ECB_TABLE1 = """
select model, round(workflow_task, 1) as wf, round(workflow_multi_subtask, 1) as wf_multi_sub,
       round(workflow_multi_task, 1) as wf_multi_task, round(workflow_avg, 1) as wf_avg,
       round(approval_task, 1) as appr, round(approval_multi_subtask, 1) as appr_multi_sub,
       round(approval_multi_task, 1) as appr_multi_task, round(approval_avg, 1) as appr_avg, round(avg, 1) as avg
from ecb_table1 order by avg desc
"""

ECB_DIAGNOSTICS = """
select model, kind, count(*) as n from (
    select model, kind from ecb_violations
    union all select model, 'pseudo_tool_call' from ecb_pseudo_tool_calls
    union all select model, 'reread_loop' from ecb_rereads)
group by all order by model, kind
"""


def headline_queries() -> list[tuple[str, str]]:
    return [("Runs: success, calls, tokens and cost per model and condition", RUNS),
            ("Delegation flow: who handed work to whom, and what the delegates cost", DELEGATION_FLOW),
            ("DELEGATE-52 RS@k (Table 1 shape): reconstruction score after k interactions", D52_RS_AT_K),
            ("DELEGATE-52 critical errors: share of degradation from drops of 10+ points", D52_CRITICAL),
            ("DecisionBench quality (blind, Stage 2) per model and suite", DCB_QUALITY),
            ("DecisionBench delegation fidelity per condition (%)", DCB_FIDELITY),
            ("DecisionBench vendor self-preference (same-vendor share vs chance)", DCB_SELF_PREFERENCE),
            ("DecisionBench counterfactual ceiling (rho = 0.8): largest gaps", DCB_CEILING),
            ("EntCollabBench pass rates (Table 1 shape, %)", ECB_TABLE1),
            ("EntCollabBench diagnostics: violations, pseudo tool calls, re-read loops", ECB_DIAGNOSTICS)]
