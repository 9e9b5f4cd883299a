"""Which provider wrapper a client needs: OpenAI or Anthropic, sync or async."""

from __future__ import annotations

from typing import Any

from .llm_call import install_http_hooks
from .runlog import RunLog


def wrap_client(log: RunLog, client: Any) -> Any:
    """Record every chat/messages call of the client; returns the same object."""
    module = type(client).__module__.split(".")[0]
    if module == "openai":
        from . import openai_sdk as provider
    elif module == "anthropic":
        from . import anthropic_sdk as provider
    else:
        raise TypeError(f"tracewh can wrap OpenAI and Anthropic clients (sync or async), not {type(client).__name__}")
    is_async = type(client).__name__.startswith("Async")
    provider.wrap(log, client, is_async)
    log.safely("http hooks", install_http_hooks, client._client, is_async)
    return client
