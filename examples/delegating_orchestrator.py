"""A tiny orchestrator that delegates to a peer model through call_model, recorded with tracewh.

Runs with no network: both SDK clients talk to a fake transport serving realistic replies.

    python examples/delegating_orchestrator.py [WAREHOUSE_DIR]

The orchestrator (gpt-5.4 over the OpenAI SDK) searches, then asks for call_model; the
harness hands the subtask to the peer (claude-sonnet-4-6 over the Anthropic SDK) inside
`rec.delegate`, feeds the answer back, and scores the task. The spool is then ingested
and the delegation read back from the DecisionBench views.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import anthropic
import httpx2
import openai

import tracewh
from tracewh.ingest.capture.fake_transport import FakeLLM, anthropic_message, openai_completion

TOOLS = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
         for name in ("web_search", "call_model", "read_profile")]


def run_task(rec: tracewh.Recorder, oa: openai.OpenAI, peer: anthropic.Anthropic, task_id: str) -> None:
    messages = [{"role": "user", "content": "Which museum holds the Mona Lisa, and when did it open?"}]
    with rec.task(task_id):
        while True:
            reply = oa.chat.completions.create(model="gpt-5.4", messages=messages, tools=TOOLS)
            calls = reply.choices[0].message.tool_calls or []
            if not calls:
                break
            for call in calls:
                args = json.loads(call.function.arguments)
                if call.function.name == "call_model":
                    with rec.delegate(to=args["model"], subtask=args["subtask"]):
                        answer = peer.messages.create(model=args["model"], max_tokens=200,
                                                      messages=[{"role": "user", "content": args["subtask"]}])
                    result = answer.content[0].text
                else:
                    with rec.tool(call.function.name, arguments=args) as tool:
                        tool.result = result = "The Louvre, Paris."
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        rec.score(quality=1.0)


def main(warehouse: Path) -> None:
    fake = FakeLLM([
        openai_completion("gpt-5.4", tool_calls=[("web_search", {"query": "Mona Lisa museum"})]),
        openai_completion("gpt-5.4", tool_calls=[("web_search", {"query": "Louvre opening year"})]),
        openai_completion("gpt-5.4", tool_calls=[("call_model", {"model": "claude-sonnet-4-6",
                                                                  "subtask": "When did the Louvre open?",
                                                                  "budget_usd": 0.05})]),
        anthropic_message("claude-sonnet-4-6", "It opened as a museum in 1793."),
        openai_completion("gpt-5.4", content="The Louvre; it opened in 1793."),
    ])
    pool = [{"model": "gpt-5.4", "vendor": "OpenAI"}, {"model": "claude-sonnet-4-6", "vendor": "Anthropic"}]
    spool = Path(tempfile.mkdtemp(prefix="tracewh-spool-"))
    attrs = {"suite": "gaia", "split": "stage2", "condition": "blind", "model": "gpt-5.4"}
    with tracewh.record("example-gaia-blind", "decisionbench", attrs, spool=spool, warehouse=warehouse) as rec:
        rec.registry("model_pool", pool)  # who could be delegated to: dcb_delegations ranks against it
        oa = rec.wrap(openai.OpenAI(api_key="fake", base_url=fake.openai_url,
                                    http_client=httpx2.Client(transport=fake.transport())))
        peer = rec.wrap(anthropic.Anthropic(api_key="fake", base_url=fake.anthropic_url,
                                            http_client=httpx2.Client(transport=fake.transport())))
        run_task(rec, oa, peer, "gaia/louvre")
    wh = tracewh.open(warehouse)
    print(wh.sql("select task_id, step, model, peer, peer_vendor, dominant_skill from dcb_delegations"))
    print(wh.sql("select task_id, quality, n_steps, n_delegations, round(cost_usd, 6) as cost_usd from dcb_tasks"))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="tracewh-example-")) / "wh")
