"""The span attributes the mapping reads, in the order it trusts them (docs/formats/otel.md §5-§7).

GenAI semantic conventions first (current names, then the deprecated ones still in the wild),
then OpenInference. `tracewh.*` attributes are what `tracewh export-otlp` writes beside them
(analytics/otlp_export.py): the event's own kind and columns, read back first so a store
exported and ingested again keeps them.
"""

from __future__ import annotations

from typing import Any

from ....schema import KIND_NAMES

# Kinds: gen_ai.operation.name, else openinference.span.kind; anything else is a `span` event.
GENAI_KINDS = {"chat": "llm_call", "text_completion": "llm_call", "generate_content": "llm_call",
               "execute_tool": "tool_call", "invoke_agent": "delegation", "create_agent": "delegation"}
OPENINFERENCE_KINDS = {"LLM": "llm_call", "TOOL": "tool_call", "AGENT": "delegation"}
OPERATION = "gen_ai.operation.name"
OPENINFERENCE_KIND = "openinference.span.kind"

MODEL = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "llm.response.model_name",
         "llm.request.model_name")
PROVIDER = ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
AGENT = ("gen_ai.agent.name", "agent.name")
TOOL_NAME = ("gen_ai.tool.name", "tool.name")
TOOL_CALL_ID = ("gen_ai.tool.call.id", "tool.id")
TOOL_ARGUMENTS = ("gen_ai.tool.call.arguments", "input.value")  # OpenInference: arguments in input.value (§6)
TOOL_RESULT = ("gen_ai.tool.call.result", "output.value")
FINISH_REASONS = ("gen_ai.response.finish_reasons", "llm.finish_reason")
COST = ("llm.cost.total",)
ERROR_TYPE = "error.type"

# Token columns of inference spans only: the conventions also put summed usage on agent spans,
# which counted again would double every total (§7 "Token double counting").
TOKENS = {
    "prompt_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt"),
    "completion_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion"),
    "cached_tokens": ("gen_ai.usage.cache_read.input_tokens", "llm.token_count.prompt_details.cache_read"),
    "reasoning_tokens": ("gen_ai.usage.reasoning.output_tokens", "llm.token_count.completion_details.reasoning"),
}

# tracewh's own attributes (resource, then span)
BENCHMARK_ATTR = "tracewh.benchmark"
RUN_ATTR = "tracewh.run_id"
KIND_ATTR = "tracewh.kind"
EXPORTED_ATTR = "tracewh.event_id"  # written by export-otlp on every span: the event's own id, kept
PAYLOAD_ATTR = "tracewh.payload"  # the event's payload as JSON text, restored as is
SYNTHETIC_TIME_ATTR = "tracewh.synthetic_time"  # the event had no time; the span's was made up
PLACEHOLDER_ATTR = "tracewh.placeholder"  # a span made up for a parent no exported event held
COLUMN_PREFIX = "tracewh."
# What export-otlp writes beside its tracewh.* attributes (analytics/otlp_export.py): on a span it
# exported these restate carried columns; anything else was added later and is kept.
EXPORTED_ATTRIBUTES = frozenset({
    OPERATION, OPENINFERENCE_KIND, "gen_ai.request.model", "llm.model_name", "gen_ai.provider.name", "gen_ai.agent.name",
    "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.reasoning.output_tokens", "llm.token_count.prompt", "llm.token_count.completion",
    "gen_ai.response.finish_reasons", "gen_ai.tool.name", "tool.name", "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments", "agent.name"})
EXPORTED_RESOURCE = frozenset({"service.name", "openinference.project.name"})
INTEGER_COLUMNS = ("seq", "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens")
NUMBER_COLUMNS = ("cost_usd", "score", "latency_s")
TEXT_COLUMNS = ("event_id", "task_id", "subtask", "agent", "model", "trace_id", "span_id", "parent_span_id",
                "finish_reason", "tool_name", "supersedes")
CARRIED_COLUMNS = INTEGER_COLUMNS + NUMBER_COLUMNS + TEXT_COLUMNS


def first(attributes: dict[str, Any], names: tuple[str, ...]) -> Any:
    """The value of the first of `names` the span carries (None and "" count as absent)."""
    for name in names:
        value = attributes.get(name)
        if value is not None and value != "" and value != []:
            return value
    return None


def operation(attributes: dict[str, Any]) -> str | None:
    """What the span says it is, as sent: gen_ai.operation.name, else openinference.span.kind."""
    value = first(attributes, (OPERATION, OPENINFERENCE_KIND))
    return value if isinstance(value, str) else None


def classify(attributes: dict[str, Any]) -> str:
    """The event kind of a span: tracewh's own kind, GenAI's operation, OpenInference's span kind, or `span`."""
    carried = attributes.get(KIND_ATTR)
    if carried in KIND_NAMES:
        return carried
    genai = attributes.get(OPERATION)
    if isinstance(genai, str) and genai.lower() in GENAI_KINDS:
        return GENAI_KINDS[genai.lower()]
    openinference = attributes.get(OPENINFERENCE_KIND)
    if isinstance(openinference, str) and openinference.upper() in OPENINFERENCE_KINDS:
        return OPENINFERENCE_KINDS[openinference.upper()]
    return "span"
