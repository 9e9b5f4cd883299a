"""Real Inspect AI eval logs for tests, written by inspect_ai itself, offline.

`write_logs(folder)` runs a few tiny evals against Inspect's built-in mock model
(`mockllm/model`, with scripted outputs) and writes every log in both formats
(`.eval` zip and `.json`). Nothing talks to a network: the mock model is given
explicit token usage on every output (its default usage counter would need
tiktoken's encoding file, which is downloaded on first use).

inspect_ai is not a tracewh dependency: this module only imports it inside
`write_logs`, so it can be imported (and the caller can skip) without it.
docs/formats/inspect.md describes what the logs contain.

Files written, as `<NAME_STAMP>_<kind>.<fmt>` (see `log_file_name`; Inspect's own names
carry the creation time and a random id):

- agentic.eval / agentic.json -- status "success". Task `tracewh_agentic`, 4 samples
  (ids 1, "two", 3, "flaky") x 2 epochs, fail_on_error=False, retry_on_error=1.
  A setup solver writes the store (StoreEvent), rewrites the prompt (StateEvent),
  opens a span, runs a @subtask (SubtaskEvent), records transcript().info (InfoEvent)
  and, for sample 1, a Python log record (LoggerEvent; Inspect adds a warning one for
  each sample error). Then a react() agent with tools add / lookup / divide and a
  handoff() to a `researcher` react agent. Sample 1: tool call, ToolError (type
  "unknown"), bad arguments (type "parsing"), submit. Sample "two": handoff, the
  researcher calls lookup and submits, the parent submits. Sample 3: divide by zero
  raises inside the tool -> sample error, retried once and failing again
  (`error` + one `error_retries` entry). Sample "flaky": the setup solver raises
  on the first attempt of each epoch, the retry succeeds (`error_retries`, no
  `error`). Token usage with cache reads and reasoning tokens; one assistant turn
  carries a ContentReasoning block. Six scorers: match (C/I), includes (C/I),
  model_graded_qa with a mock `grader` model role (C/P/I), `letter` (C/I/P),
  `tool_profile` (dict value), `turns` (numeric, outside [0, 1], NaN "unscored"
  for sample "flaky").
- error.eval / error.json -- status "error": task `tracewh_error`, the second of
  three samples raises and fail_on_error is left at its default.
- cancelled.eval / cancelled.json -- status "cancelled": task `tracewh_interrupted`;
  while sample "b" runs, the eval's cancel scope is cancelled (what Ctrl+C does).
- started.eval / started.json -- status "started": copies of the same
  `tracewh_interrupted` log files taken from inside sample "b", while the eval was
  still running (an in-progress .eval has `_journal/start.json` and no
  `header.json`).

As a script: `python tests/inspect_logs.py OUT_DIR` writes the logs and prints
their paths.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import logging
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

# Environment for a quiet, non-interactive, offline Inspect run (set only while
# write_logs runs, then restored).
_ENV = {
    "INSPECT_DISPLAY": "none",
    "INSPECT_LOG_LEVEL": "warning",
    "INSPECT_LOG_LEVEL_TRANSCRIPT": "info",  # LoggerEvents for warnings and up
    "INSPECT_EVAL_MODEL": "mockllm/model",
    "INSPECT_TELEMETRY": "",  # no telemetry hook package, even if the caller set one
    "NO_COLOR": "1",
    # belt and braces: nothing below may reach a provider or download anything
    "OPENAI_API_KEY": "",
    "ANTHROPIC_API_KEY": "",
    "HF_HUB_OFFLINE": "1",
}

LOG_NAMES = ("agentic", "error", "cancelled", "started")
FORMATS = ("eval", "json")
# Inspect names logs `<created>_<task>_<id>.<fmt>`; its listing functions (list_eval_logs,
# samples_df, evals_df, ...) skip a `.json` file whose name does not start with an ISO
# timestamp, so the stable names keep that shape with a fixed stamp.
NAME_STAMP = "2026-01-01T00-00-00+00-00"


def log_file_name(kind: str, fmt: str) -> str:
    """Stable file name of one generated log, e.g. log_file_name("agentic", "eval")."""
    if kind not in LOG_NAMES or fmt not in FORMATS:
        raise ValueError(f"unknown log {kind!r}.{fmt!r}")
    return f"{NAME_STAMP}_{kind}.{fmt}"


@contextlib.contextmanager
def _environ(values: dict[str, str]):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v



@functools.cache
def _xdg_home() -> Path:
    """Inspect's XDG folders for this process, removed when it exits."""
    home = Path(tempfile.mkdtemp(prefix="inspect-xdg-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    return home

def write_logs(folder: Path) -> list[Path]:
    """Run the evals and write the logs into `folder`; returns the written paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="inspect-logs-"))
    written: list[Path] = []
    try:
        # Inspect keeps traces, a sample buffer and control sockets under the XDG data and
        # cache dirs: point them into a scratch folder so a run leaves nothing behind. That
        # folder lives as long as this process: Inspect's log handler stays on the root logger
        # and writes its trace file there whenever anything logs later (an asyncio error in a
        # browser test failed on the file gone).
        scratch = {"INSPECT_LOG_DIR": str(work / "default"), "XDG_DATA_HOME": str(_xdg_home() / "data"),
                   "XDG_CACHE_HOME": str(_xdg_home() / "cache")}
        with _environ(_ENV | scratch):
            kit = _Kit()
            for fmt in FORMATS:
                run_dir = work / fmt
                out = {"agentic": kit.run_agentic(run_dir / "agentic", fmt),
                       "error": kit.run_error(run_dir / "error", fmt)}
                out["cancelled"], out["started"] = kit.run_interrupted(run_dir / "interrupted", fmt)
                for kind in LOG_NAMES:
                    written.append(_move(out[kind], folder / log_file_name(kind, fmt)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return written


def _move(src: Path, dest: Path) -> Path:
    if dest.exists():
        dest.unlink()
    shutil.copyfile(src, dest)
    return dest


def _only_log(log_dir: Path, fmt: str) -> Path:
    logs = sorted(p for p in log_dir.glob(f"*.{fmt}"))
    if len(logs) != 1:
        raise RuntimeError(f"expected one .{fmt} log in {log_dir}, found {logs}")
    return logs[0]


class _Kit:
    """The tasks, tools, scorers and scripted mock models (built on first use)."""

    def __init__(self) -> None:
        # imported here so the module imports without inspect_ai installed
        import anyio
        from inspect_ai import Task, eval, eval_async
        from inspect_ai.agent import as_solver, handoff, react
        from inspect_ai.dataset import MemoryDataset, Sample
        from inspect_ai.log import transcript
        from inspect_ai.model import (
            ChatCompletionChoice,
            ChatMessageAssistant,
            ContentReasoning,
            ContentText,
            ModelOutput,
            ModelUsage,
            get_model,
        )
        from inspect_ai.scorer import (
            CORRECT,
            INCORRECT,
            PARTIAL,
            Score,
            Target,
            accuracy,
            includes,
            match,
            mean,
            model_graded_qa,
            scorer,
            stderr,
        )
        from inspect_ai.solver import Generate, TaskState, generate, solver
        from inspect_ai.tool import ToolCall, ToolError, tool
        from inspect_ai.util import span, store, subtask

        self.anyio, self.eval, self.eval_async, self.Task = anyio, eval, eval_async, Task
        self.MemoryDataset, self.Sample, self.get_model = MemoryDataset, Sample, get_model
        self.generate = generate
        self.attempts: dict[tuple, int] = {}  # (task, sample id, epoch) -> setup runs
        log = logging.getLogger("tracewh.inspect_logs")
        log.setLevel(logging.INFO)  # let info records reach Inspect's transcript handler

        # ---- tools -------------------------------------------------------------------

        @tool
        def add():
            async def execute(a: int, b: int) -> int:
                """Add two integers.

                Args:
                  a: First integer.
                  b: Second integer.
                """
                store().set("adds", store().get("adds", 0) + 1)
                return a + b

            return execute

        @tool
        def lookup():
            async def execute(key: str) -> str:
                """Look up a fact by key.

                Args:
                  key: Fact key, lowercase.
                """
                facts = {"france": "Paris"}
                if key not in facts:
                    raise ToolError(f"no fact stored under {key!r}")
                return facts[key]

            return execute

        @tool
        def divide():
            async def execute(a: float, b: float) -> float:
                """Divide a by b.

                Args:
                  a: Dividend.
                  b: Divisor.
                """
                return a / b  # b == 0 raises: not a ToolError, so the sample fails

            return execute

        researcher = react(
            name="researcher",
            description="Looks facts up with the lookup tool and reports them.",
            prompt="You research facts. Use lookup, then submit what you found.",
            tools=[lookup()],
        )

        # ---- solvers -----------------------------------------------------------------

        @subtask
        async def normalise(text: str) -> str:
            store().set("normalised", True)
            return " ".join(text.split())

        attempts = self.attempts

        @solver
        def setup():
            async def solve(state: TaskState, generate: Generate) -> TaskState:
                key = ("agentic", state.sample_id, state.epoch)
                attempts[key] = attempts.get(key, 0) + 1
                state.store.set("attempt", attempts[key])
                state.store.set("sample", str(state.sample_id))
                async with span("prep", type="prep"):
                    text = await normalise(state.user_prompt.text)
                    state.user_prompt.text = f"{text} [epoch {state.epoch}]"
                    transcript().info({"sample": str(state.sample_id), "attempt": attempts[key]},
                                      source="tracewh-setup")
                if state.sample_id == 1:
                    log.info("setup done for sample 1")  # recorded as a LoggerEvent
                if state.sample_id == "flaky" and attempts[key] == 1:
                    # this attempt's events are not kept: error_retries holds only the
                    # events back to the attempt's last ModelEvent (here: none)
                    log.warning("flaky sample failing on purpose (attempt 1)")
                    raise RuntimeError("flaky setup failed on the first attempt")
                return state

            return solve

        agent = react(
            prompt="You are a careful assistant. Use the tools when they help, "
                   "hand research questions to the researcher, and submit a short final answer.",
            tools=[add(), lookup(), divide(), handoff(researcher)],
        )
        self.agentic_solver = [setup(), as_solver(agent)]

        # ---- scorers -----------------------------------------------------------------

        def tool_messages(state: TaskState) -> list:
            return [m for m in state.messages if m.role == "tool"]

        @scorer(metrics=[accuracy(), stderr()])
        def letter():
            """C when the answer equals the target, P when it contains it, else I."""

            async def score(state: TaskState, target: Target) -> Score:
                answer = state.output.completion.strip()
                if answer == target.text:
                    value = CORRECT
                elif target.text.lower() in answer.lower():
                    value = PARTIAL
                else:
                    value = INCORRECT
                return Score(value=value, answer=answer, explanation=f"target {target.text!r}")

            return score

        @scorer(metrics={"tool_calls": [mean()], "tool_errors": [mean()], "handoff": [mean()]})
        def tool_profile():
            """A dict-valued score: tool calls, tool errors and handoffs in the conversation."""

            async def score(state: TaskState, target: Target) -> Score:
                tools = tool_messages(state)
                return Score(
                    value={
                        "tool_calls": len(tools),
                        "tool_errors": sum(1 for m in tools if m.error is not None),
                        "handoff": int(any(m.function == "transfer_to_researcher" for m in tools)),
                    },
                    metadata={"functions": [m.function for m in tools]},
                )

            return score

        @scorer(metrics=[mean()])
        def turns():
            """Numeric outside [0, 1]: assistant turns x 1.5; NaN (unscored) for 'flaky'."""

            async def score(state: TaskState, target: Target) -> Score:
                if state.sample_id == "flaky":
                    return Score.unscored(reason="scoring_failed", explanation="not scored on purpose")
                n = sum(1 for m in state.messages if m.role == "assistant")
                return Score(value=n * 1.5, explanation=f"{n} assistant turns")

            return score

        self.agentic_scorers = [
            match(),
            includes(),
            model_graded_qa(partial_credit=True),
            letter(),
            tool_profile(),
            turns(),
        ]

        # ---- scripted mock models ----------------------------------------------------

        def usage(input_msgs: list, out_tokens: int, *, cache: bool, reasoning: int | None) -> ModelUsage:
            # synthetic but deterministic; Inspect's convention: input_tokens excludes
            # cached tokens, total_tokens counts them
            inp = 100 + 10 * len(input_msgs)
            cache_read = 40 if cache else None
            return ModelUsage(
                input_tokens=inp,
                output_tokens=out_tokens,
                total_tokens=inp + out_tokens + (cache_read or 0),
                input_tokens_cache_read=cache_read,
                reasoning_tokens=reasoning,
            )

        def sample_key(input_msgs: list) -> str:
            first_user = next(m for m in input_msgs if m.role == "user")
            found = re.search(r"\[(s\w+)\]", first_user.text)
            return found.group(1) if found else "?"

        def call(name: str, args: dict, call_id: str, input_msgs: list, *, thought: str | None = None) -> ModelOutput:
            content: list = []
            if thought:
                content.append(ContentReasoning(reasoning=thought))
            if name != "submit":  # react appends the submitted answer to the text
                content.append(ContentText(text=f"Calling {name}."))
            message = ChatMessageAssistant(
                content=content or "",
                tool_calls=[ToolCall(id=call_id, function=name, arguments=args)],
                model="model",
                source="generate",
            )
            out = ModelOutput(
                model="model",
                choices=[ChatCompletionChoice(message=message, stop_reason="tool_calls")],
            )
            out.usage = usage(input_msgs, 12, cache=len(input_msgs) > 2, reasoning=8 if thought else None)
            return out

        # each agent's script: the n-th step is chosen by how many of its own tool
        # results are already in the conversation it is given
        scripts = {
            ("main", "s1"): [
                ("add", {"a": 2, "b": 3}, "I will add the numbers."),
                ("lookup", {"key": "addition"}, None),
                ("add", {"a": "two", "b": 3}, None),
                ("submit", {"answer": "5"}, None),
            ],
            ("main", "stwo"): [
                ("transfer_to_researcher", {}, None),
                ("submit", {"answer": "Paris"}, None),
            ],
            ("researcher", "stwo"): [
                ("lookup", {"key": "france"}, None),
                ("submit", {"answer": "The capital is Paris"}, None),
            ],
            ("main", "s3"): [
                ("divide", {"a": 1, "b": 0}, None),
                ("submit", {"answer": "0"}, None),
            ],
            ("main", "sflaky"): [("submit", {"answer": "yes"}, None)],
        }

        def agent_model(input_msgs, tools, tool_choice, config) -> ModelOutput:
            mine = {t.name for t in tools}
            who = "main" if "transfer_to_researcher" in mine else "researcher"
            key = sample_key(input_msgs)
            # count this agent's own completed tool calls since its last system prompt
            start = max(i for i, m in enumerate(input_msgs) if m.role == "system") if who == "researcher" else 0
            done = [m for m in input_msgs[start:] if m.role == "tool" and m.function in mine]
            script = scripts.get((who, key), [("submit", {"answer": "unknown"}, None)])
            name, args, thought = script[min(len(done), len(script) - 1)]
            if key == "sflaky" and name == "submit":
                first_user = next(m for m in input_msgs if m.role == "user")
                epoch = re.search(r"\[epoch (\d+)\]", first_user.text)
                args = {"answer": "yes" if epoch and epoch.group(1) == "1" else "Yes, definitely"}
            return call(name, args, f"call_{who}_{key}_{len(done)}", input_msgs, thought=thought)

        def grader_model(input_msgs, tools, tool_choice, config) -> ModelOutput:
            prompt = input_msgs[-1].text
            answer = re.search(r"\[Submission\]: (.*?)\n\*\*\*", prompt, re.S)
            criterion = re.search(r"\[Criterion\]: (.*?)\n\*\*\*", prompt, re.S)
            a = answer.group(1).strip() if answer else ""
            c = criterion.group(1).strip() if criterion else ""
            grade = "C" if a == c else ("P" if c.lower() in a.lower() and c else "I")
            out = ModelOutput.from_content(model="grader", content=f"The submission was compared.\n\nGRADE: {grade}")
            out.usage = usage(input_msgs, 9, cache=False, reasoning=None)
            return out

        def plain_model(input_msgs, tools, tool_choice, config) -> ModelOutput:
            out = ModelOutput.from_content(model="model", content=f"ok {input_msgs[-1].text}")
            out.usage = usage(input_msgs, 3, cache=False, reasoning=None)
            return out

        self.agent_model = lambda: get_model("mockllm/model", custom_outputs=agent_model)
        self.grader_model = lambda: get_model("mockllm/model", custom_outputs=grader_model)
        self.plain_model = lambda: get_model("mockllm/model", custom_outputs=plain_model)

        # ---- small solvers for the error / interrupted runs --------------------------

        @solver
        def fail_on(sample_id):
            async def solve(state: TaskState, generate: Generate) -> TaskState:
                if state.sample_id == sample_id:
                    raise ValueError(f"sample {sample_id} fails on purpose")
                return state

            return solve

        self.fail_on = fail_on
        kit = self

        @solver
        def interrupt_on(sample_id):
            async def solve(state: TaskState, generate: Generate) -> TaskState:
                if state.sample_id == sample_id:
                    # snapshot the in-progress log exactly as it is on disk now ...
                    live = _only_log(kit.live_dir, kit.live_fmt)
                    shutil.copyfile(live, kit.live_snapshot)
                    # ... then do what Ctrl+C does: cancel the eval's scope
                    kit.cancel_scope.cancel()
                    await kit.anyio.sleep(5)
                return state

            return solve

        self.interrupt_on = interrupt_on

    # ---- runs ------------------------------------------------------------------------

    def _common(self, log_dir: Path, fmt: str) -> dict:
        return dict(log_dir=str(log_dir), log_format=fmt, max_samples=1,
                    log_buffer=1, score_display=False)

    def run_agentic(self, log_dir: Path, fmt: str) -> Path:
        ds = self.MemoryDataset(
            [
                self.Sample(id=1, input="[s1]   What is 2 + 3?", target="5", metadata={"kind": "arith"}),
                self.Sample(id="two", input="[stwo] What is the capital of France?", target="Paris",
                            metadata={"kind": "handoff"}),
                self.Sample(id=3, input="[s3] What is 1 divided by 0?", target="0", metadata={"kind": "error"}),
                self.Sample(id="flaky", input="[sflaky] Is this sample flaky?", target="yes",
                            metadata={"kind": "retry"}),
            ],
            name="tracewh_agentic_ds",
        )
        task = self.Task(dataset=ds, solver=self.agentic_solver, scorer=self.agentic_scorers,
                         name="tracewh_agentic", version=2, metadata={"suite": "tracewh"})
        self.attempts.clear()
        [log] = self.eval(task, model=self.agent_model(), model_roles={"grader": self.grader_model()},
                          epochs=2, fail_on_error=False, retry_on_error=1, tags=["tracewh", "fixture"],
                          metadata={"generator": "tests/inspect_logs.py"}, temperature=0.0,
                          **self._common(log_dir, fmt))
        if log.status != "success":
            raise RuntimeError(f"agentic eval ended {log.status}: {log.error}")
        return _only_log(log_dir, fmt)

    def run_error(self, log_dir: Path, fmt: str) -> Path:
        ds = self.MemoryDataset([self.Sample(id=i, input=f"Say {i}.", target=str(i)) for i in (1, 2, 3)])
        task = self.Task(dataset=ds, solver=[self.fail_on(2), self.generate()], scorer=None,
                         name="tracewh_error")
        [log] = self.eval(task, model=self.plain_model(), **self._common(log_dir, fmt))
        if log.status != "error":
            raise RuntimeError(f"error eval ended {log.status}")
        return _only_log(log_dir, fmt)

    def run_interrupted(self, log_dir: Path, fmt: str) -> tuple[Path, Path]:
        from inspect_ai.scorer import includes

        ds = self.MemoryDataset([self.Sample(id=s, input=f"Echo {s}.", target=s) for s in ("a", "b", "c")])
        task = self.Task(dataset=ds, solver=[self.interrupt_on("b"), self.generate()], scorer=includes(),
                         name="tracewh_interrupted")
        self.live_dir, self.live_fmt = log_dir, fmt
        self.live_snapshot = log_dir.parent / f"started-snapshot.{fmt}"
        log_dir.mkdir(parents=True, exist_ok=True)
        model = self.plain_model()
        result: list = []

        async def main() -> None:
            with self.anyio.CancelScope() as scope:
                self.cancel_scope = scope
                result.extend(await self.eval_async(task, model=model, **self._common(log_dir, fmt)))

        self.anyio.run(main)
        status = json.loads(_header_bytes(_only_log(log_dir, fmt)))["status"]
        if status != "cancelled":
            raise RuntimeError(f"interrupted eval ended {status}")
        return _only_log(log_dir, fmt), self.live_snapshot


def _header_bytes(path: Path) -> bytes:
    """The header JSON of a finished log (no inspect_ai needed for .json)."""
    if path.suffix == ".json":
        return path.read_bytes()
    from inspect_ai.log import read_eval_log  # .eval members are zstd: use Inspect

    return read_eval_log(str(path), header_only=True).model_dump_json().encode()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/inspect_logs.py OUT_DIR")
    for p in write_logs(Path(sys.argv[1])):
        print(p)
