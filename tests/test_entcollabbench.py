"""EntCollabBench: hand-built run archives in the real field layout; every number below is computed by hand.

Model m-alpha, three archives (one per task set, as the benchmark writes them):

A  workflow multi-step, with trajectory, task file and agent_specs.json
   task_1 (3 subtasks): 1 passes (it_service_desk_l1 delegates to knowledge_base_specialist);
          2 fails (hr -> collab -> change -> dev; collab's delegation back to hr is blocked
          as a cycle; dev's delegation to qa is refused at depth; collab fails its vote);
          3 is skipped. Task file: subtask 3's reference agents are developer_engineer and
          qa_test_engineer, never judged.
   task_2 (2 subtasks): a resumed run: an older row (worker error) and the latest row (both
          subtasks pass); the trajectory also holds an older attempt. Raw snapshots, from
          which the state diff is computed at ingest.
B  workflow single-step, result file only (--attr model=m-alpha): task_1 passes,
   task_2 fails, task_3 failed to seed (no judge block).
C  approval single-step, with the task file (reference decisions), trajectory for task_1 only:
   knowledge_base_specialist asks the legal specialist, who reads policy_docs/nda.md five
   times, then decides.

Tokens (input + output of llm_response_meta, never agent_message usage):
A task_1 = 4940 (it) + 1730 (kb) + 1650 (hr) + 2820 (collab) + 1160 (change) + 880 (dev) = 13180;
A task_2 = 550 + 330 = 880; B = 1200, 600, 0 (driver totals); C task_1 = 930 + 7300 = 8230,
C task_2 = 770 (driver total, no trajectory).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from helpers import plain, store_version, tracewh, write_zip

import tracewh as tw
from tracewh.ingest.adapters.entcollabbench import records
from tracewh.ingest.pipeline import Listener
from tracewh.demo.entcollabbench_archive import (AgentLog, jsonl, report, result_line, skipped_subtask, subtask_result,
                                                 trajectory_line, traces, verdict)

IT, KB, HR, COLLAB = "it_service_desk_l1", "knowledge_base_specialist", "hr_service_specialist", "collaboration_ops_specialist"
CHANGE, DEV, QA, CS = "it_change_engineer", "developer_engineer", "qa_test_engineer", "customer_support_specialist"
LEGAL, FIN, PROC = "legal_approval_specialist", "finance_approval_specialist", "procurement_approval_specialist"
PSEUDO = "I'll hand this to QA now. <minimax:tool_call> <invoke name=\"ask_qa_test_engineer_by_http\">"
R1, R2, R3, R4, R5 = "task-1-1-1775383200000", "task-1-2-1775383300000", "task-2-1-1", "task-2-2-1", "task-1-1-9"


def subtask_1() -> dict:
    it = AgentLog(IT, R1, [f"user->{IT}"], 0)
    it.ai(calls=(it.mcp("itsm", "create_incident", {"short_description": "VPN down"}),), tokens=(1000, 50))
    it.result("mcp_itsm_call_tool", '{"number": "INC0001"}')
    it.ai(calls=(("mcp_calendar_list_tools", {"force_refresh": False}),), tokens=(1100, 20))
    it.result("mcp_calendar_list_tools", "Error: MCP server 'calendar' was not seeded for this benchmark session")
    it.ai(calls=((f"ask_{KB}_by_http", {"task_description": "update KB0001"}),), tokens=(1200, 40))
    it.delegate(KB)
    it.result(f"ask_{KB}_by_http", "KB0001 updated")
    it.ai("DONE: incident INC0001 opened, UNDONE: none, ERROR: none", tokens=(1500, 30))
    kb = AgentLog(KB, R1, it.child_trace(KB), 1, source=IT)
    kb.ai(calls=(kb.mcp("itsm", "update_knowledge_article", {"number": "KB0001", "body": "new"},
                        action="call_knowledge_tool"),), tokens=(800, 20))
    kb.result("mcp_itsm_call_knowledge_tool", '{"ok": true}')
    kb.ai("Updated KB0001", tokens=(900, 10))
    diff = {"servers": {"itsm": {"initial_status": "ok", "final_status": "ok", "tables": {
        "incident": {"inserted": [{"number": "INC0001", "short_description": "VPN down", "state": "new"}],
                     "deleted": [], "updated": [], "counts": {"inserted": 1, "deleted": 0, "updated": 0},
                     "truncated": {"inserted": False, "deleted": False, "updated": False}, "key_fields": ["number"],
                     "initial_row_count": 5, "final_row_count": 6},
        "knowledge": {"inserted": [], "deleted": [], "counts": {"inserted": 0, "deleted": 0, "updated": 1},
                      "updated": [{"key": "KB0001", "changed_fields": {"body": {"before": "old", "after": "new"}}}],
                      "truncated": {"inserted": False, "deleted": False, "updated": False}, "key_fields": ["kb_number"],
                      "initial_row_count": 3, "final_row_count": 3}}}}, "errors": []}
    return subtask_result(0, "task_1_1", R1, IT, traces(R1, {IT: it.done(), KB: kb.done()}, quiet=(HR, DEV)), diff)


def subtask_2() -> dict:
    hr = AgentLog(HR, R2, [f"user->{HR}"], 0, t=1775383300.0)
    hr.ai(calls=((f"ask_{COLLAB}_by_http", {"task_description": "announce onboarding"}),), tokens=(700, 30))
    hr.delegate(COLLAB)
    hr.result(f"ask_{COLLAB}_by_http", "announced")
    hr.ai("DONE: onboarding announced", tokens=(900, 20))
    collab = AgentLog(COLLAB, R2, hr.child_trace(COLLAB), 1, source=HR, t=1775383301.0)
    collab.ai(calls=(collab.mcp("hr", "get_employee", {"employee_id": "E1"}),), tokens=(600, 20))
    collab.result("mcp_hr_call_tool", '{"name": "Ann"}')
    collab.ai(calls=((f"ask_{HR}_by_http", {"task_description": "who is Ann?"}),), tokens=(650, 15))
    collab.blocked(HR)
    collab.result(f"ask_{HR}_by_http", "Error: delegation blocked: target already appears in recursion trace")
    collab.ai(calls=((f"ask_{CHANGE}_by_http", {"task_description": "open a change"}),), tokens=(700, 25))
    collab.delegate(CHANGE)
    collab.result(f"ask_{CHANGE}_by_http", "change created")
    collab.ai("DONE: posted", tokens=(800, 10))
    change = AgentLog(CHANGE, R2, collab.child_trace(CHANGE), 2, source=COLLAB, t=1775383302.0)
    change.ai(calls=((f"ask_{DEV}_by_http", {"task_description": "create a branch"}),), tokens=(500, 20))
    change.delegate(DEV)
    change.result(f"ask_{DEV}_by_http", "branch created")
    change.ai(PSEUDO, tokens=(600, 40))
    dev = AgentLog(DEV, R2, change.child_trace(DEV), 3, source=CHANGE, t=1775383303.0)
    dev.ai(calls=((f"ask_{QA}_by_http", {"task_description": "test the branch"}),), tokens=(400, 20))
    dev.result(f"ask_{QA}_by_http", "Error: Request denied. Maximum recursion depth (3) reached. Handle it yourself.")
    dev.ai("DONE: branch created", tokens=(450, 10))
    logs = {HR: hr.done(), COLLAB: collab.done(), CHANGE: change.done(), DEV: dev.done()}
    all_traces = {**traces(R2, logs), QA: {"status": "error", "error": "connection refused"}}
    return subtask_result(1, "task_1_2", R2, HR, all_traces, flow_error="inline judge failed",
                          inline_judge={"passed": False})


def snapshot(employees: list[dict], audit: list[dict], drive_ok: bool) -> dict:
    return {"servers": {
        "hr": {"server": "hr", "database_id": "db_1_x", "tables": [], "limit": 2000, "status": "ok",
               "payload": {"success": True, "table_data": {"employees": employees, "audit_log": audit}}},
        "drive": {"server": "drive", "status": "ok", "payload": {"tables": {}}} if drive_ok else
                 {"server": "drive", "status": "error", "error": "timeout"}}, "errors": []}


def task_2_trajectory(timestamp: str, tokens: int) -> dict:
    cs = AgentLog(CS, R3, [f"user->{CS}"], 0)
    cs.ai("DONE: case closed", tokens=(tokens, 50))
    qa = AgentLog(QA, R4, [f"user->{QA}"], 0)
    qa.ai("DONE: tests pass", tokens=(300, 30))
    before = snapshot([{"id": 1, "employee_id": "E1", "name": "Ann", "title": "Eng", "updated_at": "t0"},
                       {"id": 2, "employee_id": "E2", "name": "Bob", "title": "Ops", "updated_at": "t0"}],
                      [{"event": "login"}], drive_ok=False)
    after = snapshot([{"id": 1, "employee_id": "E1", "name": "Ann", "title": "Senior Eng", "updated_at": "t1"},
                      {"id": 3, "employee_id": "E3", "name": "Cy", "title": "QA", "updated_at": "t1"}],
                     [{"event": "login"}, {"event": "promote"}], drive_ok=True)
    return trajectory_line("task_2", timestamp, [
        subtask_result(0, "task_2_1", R3, CS, traces(R3, {CS: cs.done()})),
        subtask_result(1, "task_2_2", R4, QA, traces(R4, {QA: qa.done()}))],
        active_servers=["hr", "drive"], initial_state_snapshot=before, final_state_snapshot=after)


TASK_FILE = [
    {"task_id": "wf_multi_1", "type": "mcp", "description": "incident, onboarding, fix", "sub_task_list": [
        {"sub_task_id": "wf_multi_1_1", "beginning_agent": IT, "user_prompt": "…",
         "ground_truth": [{"agent": IT, "mcp_server_name": "itsm"}, {"agent": KB, "mcp_server_name": "itsm"}]},
        {"sub_task_id": "wf_multi_1_2", "beginning_agent": HR, "user_prompt": "…",
         "ground_truth": [{"agent": HR, "mcp_server_name": "hr"}, {"agent": COLLAB, "mcp_server_name": "teams"}]},
        {"sub_task_id": "wf_multi_1_3", "beginning_agent": DEV, "user_prompt": "…",
         "ground_truth": [{"agent": DEV, "mcp_server_name": "gitea"}, {"agent": QA, "mcp_server_name": "gitea"}]}]},
    {"task_id": "wf_multi_2", "type": "mcp", "description": "case and tests", "sub_task_list": [
        {"sub_task_id": "wf_multi_2_1", "beginning_agent": CS, "ground_truth": [{"agent": CS, "mcp_server_name": "csm"}]},
        {"sub_task_id": "wf_multi_2_2", "beginning_agent": QA,
         "ground_truth": [{"agent": QA, "mcp_server_name": "gitea"}, {"agent": DEV, "mcp_server_name": "gitea"}]}]},
]
SPECS = [{"name": a, "system_prompt": "…"} for a in (IT, KB, HR, CHANGE, QA, CS)] + [
    {"name": COLLAB, "system_prompt": "…", "delegate_to": [CHANGE, HR]},
    {"name": DEV, "system_prompt": "…", "delegate_to": [CHANGE]},
    *({"name": a, "system_prompt": "…", "delegate_to": []} for a in (LEGAL, FIN, PROC))]


def archive_a(tmp: Path) -> Path:
    results = [
        result_line("task_1", "2026-04-05T10:00:00.000Z", 0, [
            report("task_1_1", True, [verdict(IT, True), verdict(KB, True)], IT),
            report("task_1_2", False, [verdict(HR, True), verdict(COLLAB, False, (False, False, True))], HR),
            report("task_1_3", False, [], DEV, skipped=True)], tokens=(12000, 500)),
        {"timestamp": "2026-04-05T10:05:00.000Z", "task_id": "task_2", "task_passed": 0, "judge_error": "worker crashed"},
        result_line("task_2", "2026-04-05T11:00:00.000Z", 1, [
            report("task_2_1", True, [verdict(CS, True, (True, True, False))], CS),
            report("task_2_2", True, [verdict(QA, True), verdict(DEV, True)], QA)], tokens=(800, 80)),
    ]
    trajectory = [
        trajectory_line("task_1", "2026-04-05T10:00:00.000Z", [
            subtask_1(), subtask_2(), skipped_subtask(2, "task_1_3", DEV)],
            active_servers=["itsm", "hr", "email", "teams", "gitea"]),
        task_2_trajectory("2026-04-05T10:05:00.000Z", tokens=99_999),  # the older attempt: not counted
        task_2_trajectory("2026-04-05T11:00:00.000Z", tokens=500),
    ]
    return write_zip(tmp / "wf_multi.zip", {
        "result-mcp_multi_tasks.jsonl": jsonl(results), "traj/traj-mcp_multi_tasks.jsonl": jsonl(trajectory),
        "mcp_multi_tasks.json": json.dumps(TASK_FILE).encode(), "config/agent_specs.json": json.dumps(SPECS).encode()})


def archive_b(tmp: Path) -> Path:
    init_failed = {"timestamp": "2026-04-06T09:02:00.000Z", "task_id": "task_3", "task_passed": 0, "judge_skipped": True,
                   "judge_skip_reason": "seed failed", "runtime_summary": {
                       "status": "init_failed", "task_id": "task_3", "subtask_count": 1, "subtasks": [
                           {"sub_task_id": "task_3_1", "target_agent": HR, "agent_status": "skipped"}]},
                   "run_input_tokens": 0, "run_output_tokens": 0, "run_total_tokens": 0}
    results = [
        result_line("task_1", "2026-04-06T09:00:00.000Z", 1, [report("task_1_1", True, [verdict(CHANGE, True)], CHANGE)],
                    tokens=(1000, 200)),
        result_line("task_2", "2026-04-06T09:01:00.000Z", 0,
                    [report("task_2_1", False, [verdict(HR, False, (True, False, False))], HR)], tokens=(500, 100)),
        init_failed]
    return write_zip(tmp / "wf_single.zip", {"result-mcp_tasks.jsonl": jsonl(results)})


def archive_c(tmp: Path) -> Path:
    kb = AgentLog(KB, R5, [f"user->{KB}"], 0)
    kb.ai(calls=((f"ask_{LEGAL}_by_http", {"task_description": "review T-0001"}),), tokens=(400, 20))
    kb.delegate(LEGAL)
    kb.result(f"ask_{LEGAL}_by_http", "DECISION:approve, RATIONALE:…")
    kb.ai("Legal approved.", tokens=(500, 10))
    legal = AgentLog(LEGAL, R5, kb.child_trace(LEGAL), 1, source=KB)
    for path in ["policy_docs/nda.md"] * 5 + ["rulebook.md"]:
        legal.ai(calls=(("tool_workspace_read_file", {"file_path": path}),), tokens=(1000, 10))
        legal.result("tool_workspace_read_file", f"# {path}")
    legal.ai("DECISION:approve, RATIONALE:LEG-EVAL-0001 fires and the pre-approval evidence is present., ERROR:",
             tokens=(1200, 40))
    results = [
        result_line("task_1", "2026-04-07T09:00:00.000Z", 1, [report("task_1_1", True, [verdict(LEGAL, True)], KB)]),
        result_line("task_2", "2026-04-07T09:01:00.000Z", 0, [report("task_2_1", False, [
            verdict(FIN, False, (False, False, True)), verdict(PROC, True)], KB)], tokens=(700, 70))]
    trajectory = [trajectory_line("task_1", "2026-04-07T09:00:00.000Z",
                                  [subtask_result(0, "task_1_1", R5, KB, traces(R5, {KB: kb.done(), LEGAL: legal.done()}))],
                                  active_servers=[])]
    task_file = [
        {"task_id": "appr_1", "type": "approval", "sub_task_list": [{
            "sub_task_id": "appr_1_1", "beginning_agent": KB, "user_prompt": "…",
            "ground_truth_approval_results": {LEGAL: {"decision": "approve", "rule_citations": ["LEG-EVAL-0001"]}}}]},
        {"task_id": "appr_2", "type": "approval", "sub_task_list": [{
            "sub_task_id": "appr_2_1", "beginning_agent": KB, "user_prompt": "…",
            "ground_truth_approval_results": [{"agent_name": FIN, "decision": "reject", "rule_citations": ["FIN-ACCT-0005"]},
                                              {"agent_name": PROC, "decision": "require_docs", "rule_citations": []}]}]}]
    return write_zip(tmp / "approval.zip", {"result-approval_tasks.jsonl": jsonl(results),
                                            "traj/traj-approval_tasks.jsonl": jsonl(trajectory),
                                            "approval_tasks.json": json.dumps(task_file).encode()})


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ecb")
    wh = tmp / "wh"
    tracewh("ingest", archive_a(tmp), archive_c(tmp), "-w", wh, check=True)
    tracewh("ingest", archive_b(tmp), "-w", wh, "--attr", "model=m-alpha", check=True)
    return wh


def rows(wh: Path, query: str) -> list[tuple]:
    return tw.open(wh).sql(query).fetchall()


def test_tasks_take_the_latest_row_of_a_resumed_run_and_count_tokens_once(wh):
    assert rows(wh, "select run_id, task_id, subset, multi, n_subtasks, passed, tokens from ecb_tasks "
                    "order by run_id, task_id") == [
        ("ecb-m-alpha-approval_tasks", "task_1", "approval", False, 1, True, 8230),
        ("ecb-m-alpha-approval_tasks", "task_2", "approval", False, 1, False, 770),
        ("ecb-m-alpha-mcp_multi_tasks", "task_1", "workflow", True, 3, False, 13180),
        ("ecb-m-alpha-mcp_multi_tasks", "task_2", "workflow", True, 2, True, 880),
        ("ecb-m-alpha-mcp_tasks", "task_1", "workflow", False, 1, True, 1200),
        ("ecb-m-alpha-mcp_tasks", "task_2", "workflow", False, 1, False, 600),
        ("ecb-m-alpha-mcp_tasks", "task_3", "workflow", False, 1, False, 0)]


def test_subtasks_fail_after_the_first_failure(wh):
    assert rows(wh, "select task_id, subtask_index, target_agent, passed, skipped from ecb_subtasks "
                    "where run_id = 'ecb-m-alpha-mcp_multi_tasks' order by task_id, subtask_index") == [
        ("task_1", 1, IT, True, False), ("task_1", 2, HR, False, False), ("task_1", 3, DEV, False, True),
        ("task_2", 1, CS, True, False), ("task_2", 2, QA, True, False)]


def test_agent_judgments_carry_the_vote_counts(wh):
    assert rows(wh, "select task_id, subtask_index, agent, passed, votes_pass, votes_fail from ecb_agent_judgments "
                    "where run_id = 'ecb-m-alpha-mcp_multi_tasks' order by task_id, subtask_index, agent") == [
        ("task_1", 1, IT, True, 3, 0), ("task_1", 1, KB, True, 3, 0),
        ("task_1", 2, COLLAB, False, 1, 2), ("task_1", 2, HR, True, 3, 0),
        ("task_2", 1, CS, True, 2, 1), ("task_2", 2, DEV, True, 3, 0), ("task_2", 2, QA, True, 3, 0)]
    votes = rows(wh, "select json_array_length(votes) from judgments where agent = 'customer_support_specialist'")
    assert votes == [(3,)]


def test_rates_count_reference_pairs_of_skipped_subtasks_as_failed(wh):
    got = rows(wh, "select subset, multi, n_tasks, n_subtasks, n_pairs, round(r_agent, 2), round(r_subtask, 2), "
                   "round(r_task, 2) from ecb_rates where model = 'm-alpha' order by subset, multi")
    assert got == [
        ("approval", False, 2, 2, 3, 66.67, 50.0, 50.0),
        ("workflow", False, 3, 3, 2, 50.0, 33.33, 33.33),   # task_3 (no judge, no task file): no pairs
        ("workflow", True, 2, 5, 9, 66.67, 60.0, 50.0)]     # task_1 subtask 3: dev and qa, failed


def test_table1_matches_the_papers_shape(wh):
    got = rows(wh, "select model, round(workflow_task, 2), workflow_multi_subtask, workflow_multi_task, workflow_avg, "
                   "approval_task, approval_multi_subtask, approval_multi_task, approval_avg, round(avg, 2) from ecb_table1")
    assert got == [("m-alpha", 33.33, 60.0, 50.0, 40.0, 50.0, None, None, 50.0, 42.86)]


def test_role_accuracy(wh):
    got = rows(wh, "select multi, agent, n, passed, acc from ecb_role_accuracy order by multi, agent")
    assert got == [
        (False, FIN, 1, 0, 0.0), (False, HR, 1, 0, 0.0), (False, CHANGE, 1, 1, 100.0), (False, LEGAL, 1, 1, 100.0),
        (False, PROC, 1, 1, 100.0),
        (True, COLLAB, 1, 0, 0.0), (True, CS, 1, 1, 100.0), (True, DEV, 2, 1, 50.0), (True, HR, 1, 1, 100.0),
        (True, IT, 1, 1, 100.0), (True, KB, 1, 1, 100.0), (True, QA, 2, 1, 50.0)]


def test_tokens_per_task_and_per_success(wh):
    assert rows(wh, "select subset, multi, tokens_per_task, tokens_per_success from ecb_tokens order by subset, multi") == [
        ("approval", False, 4500.0, 8230.0), ("workflow", False, 600.0, 1200.0), ("workflow", True, 7030.0, 880.0)]


def test_delegation_tree_rebuilds_chains_refusals_and_cycles(wh):
    got = rows(wh, "select task_id, subtask_index, parent_agent, child_agent, depth, status from ecb_delegation_tree "
                   "order by run_id, task_id, subtask_index, depth, parent_agent, child_agent")
    assert got == [
        ("task_1", 1, KB, LEGAL, 1, "ok"),
        ("task_1", 1, IT, KB, 1, "ok"),
        ("task_1", 2, HR, COLLAB, 1, "ok"),
        ("task_1", 2, COLLAB, HR, 2, "blocked_cycle"),
        ("task_1", 2, COLLAB, CHANGE, 2, "ok"),
        ("task_1", 2, CHANGE, DEV, 3, "ok"),
        ("task_1", 2, DEV, QA, 4, "refused_depth")]


def test_callee_invocations_nest_under_their_delegation(wh):
    got = rows(wh, """select d.agent, d.to_agent, m.agent from delegations d
                      join events m on m.parent_span_id = d.span_id and m.kind = 'message'
                      where d.benchmark = 'entcollabbench' order by d.run_id desc, d.seq""")
    assert got == [(IT, KB, KB), (HR, COLLAB, COLLAB), (COLLAB, CHANGE, CHANGE), (CHANGE, DEV, DEV),  # mcp_multi_tasks
                   (KB, LEGAL, LEGAL)]  # approval_tasks


def test_tool_results_pair_with_their_calls_despite_empty_ids(wh):
    got = rows(wh, """select count(*), count(c.event_id) from events r
                      left join tool_calls c on c.span_id = r.parent_span_id and c.tool_name = r.tool_name
                      where r.benchmark = 'entcollabbench' and r.kind = 'tool_result'""")
    assert got == [(17, 17)]
    assert rows(wh, "select server, payload ->> '$.mcp_tool', arguments ->> '$.body' from tool_calls "
                    "where tool_name = 'mcp_itsm_call_knowledge_tool'") == [("itsm", "update_knowledge_article", "new")]


def test_violations(wh):
    got = rows(wh, "select task_id, subtask_index, agent, kind from ecb_violations order by run_id, task_id, subtask_index, agent, kind")
    assert got == [
        ("task_1", 1, IT, "unseeded_server"),
        ("task_1", 2, COLLAB, "cycle"),
        ("task_1", 2, COLLAB, "permission"),
        ("task_1", 2, DEV, "delegation_target"),
        ("task_1", 2, DEV, "depth")]
    assert rows(wh, "select detail from ecb_violations where kind = 'permission'") == [
        ("mcp_hr_call_tool is not among the tools of collaboration_ops_specialist",)]


def test_pseudo_tool_calls_and_rereads(wh):
    assert rows(wh, "select task_id, subtask_index, agent, excerpt from ecb_pseudo_tool_calls") == [
        ("task_1", 2, CHANGE, PSEUDO)]
    assert rows(wh, "select task_id, subtask_index, agent, file, reads from ecb_rereads") == [
        ("task_1", 1, LEGAL, "policy_docs/nda.md", 5)]


def test_state_changes_stored_and_computed_from_snapshots(wh):
    got = rows(wh, "select task_id, subtask_index, server, table_name, op, row_key, field, before, after "
                   "from ecb_state_changes order by task_id, table_name, op, row_key")
    assert [(t, k, s, tb, op, key, f, json.loads(b), json.loads(a)) for t, k, s, tb, op, key, f, b, a in got] == [
        ("task_1", 1, "itsm", "incident", "insert", "INC0001", None, None,
         {"number": "INC0001", "short_description": "VPN down", "state": "new"}),
        ("task_1", 1, "itsm", "knowledge", "update", "KB0001", "body", "old", "new"),
        ("task_2", None, "hr", "audit_log", "insert", None, None, None, {"event": "promote"}),
        ("task_2", None, "hr", "employees", "delete", "Bob", None, {"employee_id": "E2", "name": "Bob", "title": "Ops"}, None),
        ("task_2", None, "hr", "employees", "insert", "Cy", None, None, {"employee_id": "E3", "name": "Cy", "title": "QA"}),
        ("task_2", None, "hr", "employees", "update", "Ann", "title", "Eng", "Senior Eng")]


def test_approval_decision_parsed_from_the_final_answer(wh):
    got = rows(wh, "select agent, payload ->> '$.label', payload -> '$.rules', payload ->> '$.missing_info' "
                   "from events where benchmark = 'entcollabbench' and kind = 'decision'")
    assert got == [(LEGAL, "approve", '["LEG-EVAL-0001"]', "false")]


def test_approval_decisions_checked_against_the_reference(wh):
    got = rows(wh, "select task_id, agent, label, ref_label, rules, ref_rules, ref_missing_info, deterministic_pass, "
                   "judge_passed from ecb_approval_checks order by task_id, agent")
    assert got == [
        ("task_1", LEGAL, "approve", "approve", ["LEG-EVAL-0001"], ["LEG-EVAL-0001"], False, True, True),
        ("task_2", FIN, None, "reject", None, ["FIN-ACCT-0005"], False, False, False),  # no trajectory: no decision
        ("task_2", PROC, None, "require_docs", None, [], True, False, True)]


def test_reingest_adds_nothing(wh, tmp_path):
    before = store_version(wh)
    out = tracewh("ingest", archive_a(tmp_path), archive_c(tmp_path), "-w", wh, check=True)
    assert store_version(wh) == before, out.out


def test_a_grown_result_file_adds_only_the_new_attempt(tmp_path):
    """An archive ingested before the run resumed, then again after: views read the latest attempt only."""
    wh = tmp_path / "wh"
    first = [result_line("task_1", "2026-04-06T09:00:00.000Z", 0, [report("task_1_1", False, [verdict(HR, False)], HR)])]
    later = first + [result_line("task_1", "2026-04-06T10:00:00.000Z", 1, [report("task_1_1", True, [verdict(HR, True)], HR)])]
    for name, lines in (("early.zip", first), ("late.zip", later)):
        tracewh("ingest", write_zip(tmp_path / name, {"result-x.jsonl": jsonl(lines)}), "-w", wh,
                "--attr", "model=m", check=True)
    assert rows(wh, "select task_id, passed from ecb_tasks") == [("task_1", True)]
    assert rows(wh, "select agent, passed from ecb_agent_judgments") == [(HR, True)]
    assert rows(wh, "select count(*) from events where kind = 'judgment'") == [(2,)]  # history kept, not read


def test_subset_and_multi_attrs_override_inference(tmp_path):
    wh = tmp_path / "wh"
    tracewh("ingest", archive_b(tmp_path), "-w", wh, "--attr", "model=m", "--attr", "subset=approval",
            "--attr", "multi=true", check=True)
    assert rows(wh, "select distinct subset, multi from ecb_tasks") == [("approval", True)]


def test_non_semantic_fields_are_configurable_per_server(tmp_path):
    wh = tmp_path / "wh"
    tracewh("ingest", archive_a(tmp_path), "-w", wh, "--attr", "state_diff_ignore_fields.hr=title", check=True)
    assert rows(wh, "select op, row_key, field from ecb_state_changes where table_name = 'employees' order by op") == [
        ("delete", "Bob", None), ("insert", "Cy", None)]


@pytest.mark.parametrize("line, problem", [
    ({"timestamp": "2026-04-06T09:00:00Z", "task_passed": 1}, "line 1, field 'task_id': required field is missing"),
    ({"timestamp": "2026-04-06T09:00:00Z", "task_id": "task_1", "task_passed": "yes"},
     "line 1, field 'task_passed': expected number, got str"),
    ({"timestamp": "2026-04-06T09:00:00Z", "task_id": "task_1", "task_passed": 1,
      "judge": {"task": {"subtasks": [{"sub_task_id": "task_1_1", "passed": True, "agents": [{"passed": True}]}]}}},
     "field 'judge.task.subtasks[0].agents[0].agent_name': required field is missing"),
    ({"timestamp": "yesterday", "task_id": "task_1", "task_passed": 1},
     "line 1, field 'timestamp': expected an ISO-8601 time, got 'yesterday'"),
])
def test_bad_result_rows_are_refused_naming_file_line_and_field(tmp_path, line, problem):
    wh = tmp_path / "wh"
    archive = write_zip(tmp_path / "bad.zip", {"result-x.jsonl": jsonl([line])})
    out = tracewh("ingest", archive, "-w", wh, "--attr", "model=m")
    assert out.code == 2
    assert "bad.zip!result-x.jsonl" in plain(out.err) and problem in plain(out.err)
    assert store_version(wh) is None


def test_a_task_file_entry_that_is_no_task_is_refused(tmp_path):
    """Found by the full-count input fuzz: a number among the tasks was a traceback."""
    tasks = [{"task_id": "task_1", "beginning_agent": "a"}, 1.5]
    archive = write_zip(tmp_path / "bad.zip", {"result-x.jsonl": jsonl([{"timestamp": "2026-04-06T09:00:00Z", "task_id": "task_1", "task_passed": 1}]),
                                                  "x.json": json.dumps(tasks).encode()})
    out = tracewh("ingest", archive, "-w", tmp_path / "wh", "--attr", "model=m")
    assert out.code == 2 and "bad.zip!x.json" in plain(out.err)
    assert "field '[1]': expected a task (a JSON object), got float" in plain(out.err)
    assert store_version(tmp_path / "wh") is None


def test_a_trajectory_without_its_result_file_is_refused(tmp_path):
    archive = write_zip(tmp_path / "t.zip", {"traj/traj-x.jsonl": jsonl([trajectory_line("task_1", "2026-04-06T09:00:00Z", [])])})
    out = tracewh("ingest", archive, "-w", tmp_path / "wh")
    assert out.code == 2 and "trajectory file without its result file" in plain(out.err)


def test_without_a_model_name_the_error_says_how_to_give_one(tmp_path):
    archive = archive_b(tmp_path)
    out = tracewh("ingest", archive, "-w", tmp_path / "wh")
    assert out.code == 2 and "--attr model=NAME" in plain(out.err)


def test_a_response_streamed_again_after_summarization_counts_once(tmp_path):
    """agent.py dedups messages only within the current stream; after summarization an earlier
    AI message (and its llm_response_meta) can be logged again, at a later elapsed time."""
    log = AgentLog(HR, R1, [f"user->{HR}"], 0)
    log.ai("DONE: ok", tokens=(1000, 100))
    repeat = json.loads(json.dumps(log.events[-1]))
    repeat["data"]["elapsed_ms_from_request_start"] = 99_000
    log.events.append(repeat)
    log.ai("DONE: really", tokens=(10, 1))
    results = [result_line("task_1", "2026-04-06T09:00:00.000Z", 1, [report("task_1_1", True, [verdict(HR, True)], HR)])]
    trajectory = [trajectory_line("task_1", "2026-04-06T09:00:00.000Z",
                                  [subtask_result(0, "task_1_1", R1, HR, traces(R1, {HR: log.done()}))])]
    archive = write_zip(tmp_path / "s.zip", {"result-x.jsonl": jsonl(results), "traj/traj-x.jsonl": jsonl(trajectory)})
    tracewh("ingest", archive, "-w", tmp_path / "wh", check=True)
    assert rows(tmp_path / "wh", "select tokens from ecb_tasks") == [(1111,)]


class _Bytes(Listener):
    def __init__(self):
        self.read = 0

    def advance(self, stored_bytes: int) -> None:
        self.read += stored_bytes


def test_a_file_read_twice_gives_the_same_events_kept_or_read_again(tmp_path, monkeypatch):
    """The reader's two readings of a result or trajectory file (which rows win, then their
    events): small files keep their rows between them, larger ones are read again."""
    archive = archive_a(tmp_path)
    stored, progress = {}, {}
    for name, kept_bytes in (("kept", records.KEPT_BYTES), ("read_again", 0)):
        monkeypatch.setattr(records, "KEPT_BYTES", kept_bytes)
        listener = _Bytes()
        tw.open(tmp_path / name).ingest([archive], progress=listener, workers=1)
        stored[name] = rows(tmp_path / name, "select * from events order by event_id")
        progress[name] = listener.read
    assert stored["kept"] == stored["read_again"] and len(stored["kept"]) > 50
    assert progress["kept"] == progress["read_again"] == sum(i.compress_size for i in zipfile.ZipFile(archive).infolist()
                                                             if i.filename.endswith(".jsonl"))
