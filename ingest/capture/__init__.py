"""Live capture of OpenAI and Anthropic SDK calls into a crash-safe native-format spool."""

from .recorder import Recorder, ToolCall, record

__all__ = ["Recorder", "ToolCall", "record"]
