"""A fake LLM judge: a real HTTP server on 127.0.0.1 speaking OpenAI chat completions
(POST /v1/chat/completions) and Anthropic messages (POST /v1/messages), for the real
`openai` and `anthropic` clients pointed at it by OPENAI_BASE_URL / ANTHROPIC_BASE_URL.

    with FakeJudge() as fake:
        env = fake.env()                   # base URLs and test keys for a `tracewh judge` process
        fake.fail_next(429, 2)             # the next two requests get 429 (the SDKs retry them)
        fake.delay_s = 0.2                 # every answer takes 200 ms
        fake.decide = lambda model, prompt, space: "not json"   # an invalid answer
        fake.answered()                    # [(model, prompt)] of every request answered 200

By default an answer is deterministic: a label of the request's own answer schema (the enum
of OpenAI's response_format, of Anthropic's forced tool), or a number on its scale, chosen
by a hash of model and prompt. `decide` may return a dict (sent as the JSON answer) or a
string (sent as the raw text: for invalid answers).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Decide = Callable[[str, str, dict[str, Any]], "dict[str, Any] | str"]


def default_decision(model: str, prompt: str, space: dict[str, Any]) -> dict[str, Any]:
    digest = int(hashlib.sha256(f"{model}\0{prompt}".encode()).hexdigest(), 16)
    if "label" in space:
        labels = space["label"]["enum"]
        return {"label": labels[digest % len(labels)], "reason": f"{model} read it"}
    low, high = space["score"]["minimum"], space["score"]["maximum"]
    return {"score": low + digest % int(high - low + 1), "reason": f"{model} scored it"}


class FakeJudge:
    def __init__(self) -> None:
        self.decide: Decide = default_decision
        self.delay_s = 0.0
        self.log: list[dict[str, Any]] = []  # every request: provider, model, prompt, status, answered_at
        self._failures: list[int] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                status, reply = fake._reply(self.path, body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                if status == 429 or status >= 500:  # retried by the SDKs, after 1 ms here
                    self.send_header("retry-after-ms", "1")
                    self.send_header("x-should-retry", "true")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeJudge:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def env(self) -> dict[str, str]:
        return {"OPENAI_BASE_URL": f"{self.url}/v1", "OPENAI_API_KEY": "test-key",
                "ANTHROPIC_BASE_URL": self.url, "ANTHROPIC_API_KEY": "test-key"}

    def fail_next(self, status: int, times: int = 1) -> None:
        with self._lock:
            self._failures.extend([status] * times)

    def answered(self) -> list[tuple[str, str]]:
        """(model, prompt) of every request answered with 200, in order."""
        with self._lock:
            return [(r["model"], r["prompt"]) for r in self.log if r["status"] == 200]

    def requests(self) -> int:
        with self._lock:
            return len(self.log)

    def _reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        provider = "anthropic" if path.endswith("/messages") else "openai"
        prompt = body["messages"][-1]["content"]
        with self._lock:
            status = self._failures.pop(0) if self._failures else 200
            entry = {"provider": provider, "model": body["model"], "prompt": prompt, "status": status}
            self.log.append(entry)
        if status != 200:
            return status, {"type": "error", "error": {"type": "rate_limit_error" if status == 429 else "api_error",
                                                       "message": f"injected {status}"}}
        if self.delay_s:
            time.sleep(self.delay_s)
        entry["answered_at"] = time.monotonic()
        if provider == "openai":
            space = body["response_format"]["json_schema"]["schema"]["properties"]
        else:
            space = body["tools"][0]["input_schema"]["properties"]
        decision = self.decide(body["model"], prompt, space)
        usage_in, usage_out = max(1, len(prompt) // 4), 25
        n = next(self._ids)
        if provider == "openai":
            text = decision if isinstance(decision, str) else json.dumps(decision)
            return 200, {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1776000000,
                         "model": body["model"], "choices": [{"index": 0, "finish_reason": "stop",
                                                              "message": {"role": "assistant", "content": text}}],
                         "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out,
                                   "total_tokens": usage_in + usage_out}}
        content = ([{"type": "text", "text": decision}] if isinstance(decision, str)
                   else [{"type": "tool_use", "id": f"toolu_{n}", "name": "answer", "input": decision}])
        return 200, {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": body["model"],
                     "content": content, "stop_reason": "end_turn" if isinstance(decision, str) else "tool_use",
                     "stop_sequence": None, "usage": {"input_tokens": usage_in, "output_tokens": usage_out}}


if __name__ == "__main__":  # a server to try `tracewh judge` by hand: prints its environment
    with FakeJudge() as fake:
        print(" ".join(f"{k}={v}" for k, v in fake.env().items()), flush=True)
        threading.Event().wait()
