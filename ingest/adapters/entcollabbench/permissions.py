"""EntCollabBench permission model: which tools π(agent) and delegation targets D(agent) each agent has.

Defaults are the benchmark's published configuration (docs/formats/entcollabbench.md
§16). An archive may override them with `agent_specs.json` (delegate_to per agent, the
benchmark's own file) and `agent_toolsets.json` ({agent: [tool group, ...]}: the
groups of tool/toolsets.py, which the benchmark keeps in Python, written as JSON).
`mcp_auth_by_agent.json` is read only for which servers hold a credential; tokens are
never stored.
"""

from __future__ import annotations

from typing import Any

COMMON_SERVERS = ("calendar", "drive", "email", "teams")
MCP_ACTIONS = ("list_tools", "get_tool_schema", "call_tool")
WORKSPACE_TOOLS = ("tool_workspace_list_files", "tool_workspace_read_file")
MAX_DEPTH = 3

WORKFLOW_AGENTS = ("it_service_desk_l1", "it_change_engineer", "hr_service_specialist", "customer_support_specialist",
                   "developer_engineer", "qa_test_engineer", "knowledge_base_specialist", "collaboration_ops_specialist")
APPROVAL_AGENTS = ("finance_approval_specialist", "legal_approval_specialist", "procurement_approval_specialist")
AGENTS = WORKFLOW_AGENTS + APPROVAL_AGENTS


def _server_tools(*servers: str) -> list[str]:
    return [f"mcp_{s}_{a}" for s in servers for a in MCP_ACTIONS]


TOOL_GROUPS: dict[str, list[str]] = {
    "domain.mcp.common": _server_tools(*COMMON_SERVERS),
    "domain.mcp.itsm": _server_tools("itsm"),
    "domain.mcp.hr": _server_tools("hr"),
    "domain.mcp.csm": _server_tools("csm"),
    "domain.mcp.gitea": _server_tools("gitea"),
    # knowledge-only calls on three servers (KNOWLEDGE_TOOL_ALLOWLIST decides which MCP tools)
    "domain.mcp.kb_cross": [f"mcp_{s}_call_knowledge_tool" for s in ("itsm", "hr", "csm")],
    "domain.common.basic": list(WORKSPACE_TOOLS),
}

DEFAULT_TOOLSETS: dict[str, list[str]] = {
    "it_service_desk_l1": ["domain.mcp.common", "domain.mcp.itsm"],
    "it_change_engineer": ["domain.mcp.common", "domain.mcp.itsm"],
    "hr_service_specialist": ["domain.mcp.common", "domain.mcp.hr"],
    "customer_support_specialist": ["domain.mcp.common", "domain.mcp.csm"],
    "developer_engineer": ["domain.mcp.common", "domain.mcp.gitea"],
    "qa_test_engineer": ["domain.mcp.common", "domain.mcp.gitea"],
    "knowledge_base_specialist": ["domain.mcp.common", "domain.mcp.kb_cross"],
    "collaboration_ops_specialist": ["domain.mcp.common"],
    **{a: ["domain.common.basic"] for a in APPROVAL_AGENTS},
}


Problem = tuple[str, str] | None  # (field, what is wrong) of a config file's first unreadable entry


def specs_problem(specs: list[Any]) -> Problem:
    """agent_specs.json: an array of objects, each with a string `name` and, optionally, `delegate_to`
    a list of agent names (null or absent = every other agent)."""
    for i, spec in enumerate(specs):
        if not isinstance(spec, dict):
            return f"[{i}]", f"expected an agent spec (a JSON object), got {type(spec).__name__}"
        if not isinstance(spec.get("name"), str):
            return f"[{i}].name", f"expected the agent's name (a string), got {type(spec.get('name')).__name__}"
        if not _names(spec.get("delegate_to"), nullable=True):
            return f"[{i}].delegate_to", "expected a list of agent names (or null)"
    return None


def toolsets_problem(toolsets: dict[str, Any]) -> Problem:
    """agent_toolsets.json: {agent: [tool group, ...]}."""
    for agent, groups in toolsets.items():
        if not _names(groups):
            return agent, "expected a list of tool group names"
    return None


def auth_problem(auth: dict[str, Any]) -> Problem:
    """mcp_auth_by_agent.json: {agent: {server: token}} (only whether a token is there is read)."""
    for agent, servers in auth.items():
        if not isinstance(servers, dict):
            return agent, f"expected an object of server: token, got {type(servers).__name__}"
    return None


def _names(value: Any, nullable: bool = False) -> bool:
    return (value is None and nullable) or isinstance(value, list) and all(isinstance(v, str) for v in value)


def permission_entries(specs: list[dict[str, Any]] | None, toolsets: dict[str, list[str]] | None,
                       auth: dict[str, dict[str, str]] | None) -> list[dict[str, Any]]:
    """One entry per agent: its tool groups, the tool names they give, delegation targets, credentialed servers."""
    groups = toolsets if toolsets is not None else DEFAULT_TOOLSETS
    names = [s["name"] for s in specs] if specs else list(AGENTS)
    delegate_to = {s["name"]: s.get("delegate_to") for s in specs} if specs else \
        {a: ([] if a in APPROVAL_AGENTS else None) for a in AGENTS}
    entries = []
    for agent in sorted(set(names) | set(groups)):
        targets = delegate_to.get(agent)
        entries.append({
            "agent": agent,
            "tool_groups": groups.get(agent, []),
            "tools": sorted({t for g in groups.get(agent, []) for t in TOOL_GROUPS.get(g, [])}),
            # absent delegate_to = every other agent (the benchmark's rule)
            "delegate_to": sorted(targets if targets is not None else (n for n in names if n != agent)),
            "mcp_credentials": sorted(s for s, token in (auth or {}).get(agent, {}).items() if token),
        })
    return entries

