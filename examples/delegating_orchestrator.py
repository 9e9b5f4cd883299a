"""A tiny orchestrator that delegates to a peer model through call_model, recorded with tracewh.

Runs with no network: both SDK clients talk to an in-process HTTP transport (httpx's
MockTransport) that serves the five replies below, shaped like the providers' real ones.

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


def openai_reply(content: str | None = None, tool: tuple[str, dict] | None = None) -> dict:
    calls = [{"id": f"call_{tool[0]}", "type": "function",
              "function": {"name": tool[0], "arguments": json.dumps(tool[1])}}] if tool else []
    message = {"role": "assistant", "content": content, **({"tool_calls": calls} if calls else {})}
    return {"id": "chatcmpl-example", "object": "chat.completion", "created": 1776000000, "model": "gpt-5.4",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280}}


def anthropic_reply(text: str) -> dict:
    return {"id": "msg_example", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 500, "output_tokens": 60}}


def scripted(replies: list[dict]) -> httpx2.MockTransport:
    """An in-process 'provider' that answers each request with the next reply."""
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json=replies.pop(0)))


def main(warehouse: Path) -> None:
    replies = [
        openai_reply(tool=("web_search", {"query": "Mona Lisa museum"})),
        openai_reply(tool=("web_search", {"query": "Louvre opening year"})),
        openai_reply(tool=("call_model", {"model": "claude-sonnet-4-6", "subtask": "When did the Louvre open?",
                                          "budget_usd": 0.05})),
        anthropic_reply("It opened as a museum in 1793."),
        openai_reply(content="The Louvre; it opened in 1793."),
    ]
    transport = scripted(replies)
    pool = [{"model": "gpt-5.4", "vendor": "OpenAI"}, {"model": "claude-sonnet-4-6", "vendor": "Anthropic"}]
    spool = Path(tempfile.mkdtemp(prefix="tracewh-spool-"))
    attrs = {"suite": "gaia", "split": "stage2", "condition": "blind", "model": "gpt-5.4"}
    with tracewh.record("example-gaia-blind", "decisionbench", attrs, spool=spool, warehouse=warehouse) as rec:
        rec.registry("model_pool", pool)  # who could be delegated to: dcb_delegations ranks against it
        oa = rec.wrap(openai.OpenAI(api_key="fake", base_url="http://provider.test/v1",
                                    http_client=httpx2.Client(transport=transport)))
        peer = rec.wrap(anthropic.Anthropic(api_key="fake", base_url="http://provider.test",
                                            http_client=httpx2.Client(transport=transport)))
        run_task(rec, oa, peer, "gaia/louvre")
    wh = tracewh.open(warehouse)
    print(wh.sql("select task_id, step, model, peer, peer_vendor, dominant_skill from dcb_delegations"))
    print(wh.sql("select task_id, quality, n_steps, n_delegations, round(cost_usd, 6) as cost_usd from dcb_tasks"))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="tracewh-example-")) / "wh")
