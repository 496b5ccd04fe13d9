"""Recognizing an upstream's refusal of a prompt that does not fit the model's context window.

Each upstream says it its own way; all of them become one ``ProviderError`` with code
``context_length_exceeded`` and a message telling the person what to do:

- OpenAI: HTTP 400, ``error.code`` ``"context_length_exceeded"`` ("This model's maximum context length
  is ..."); vLLM and other compatible servers say "maximum context length" without the code;
- llama.cpp ``llama-server``: HTTP 400, ``error.type`` ``"exceed_context_size_error"`` ("the request
  exceeds the available context size");
- Anthropic: HTTP 400 ``invalid_request_error`` "prompt is too long: N tokens > M maximum";
- Ollama (which shortens the prompt silently unless asked not to): "the input length exceeds the
  context length".

The markers are matched in the upstream's error text (the body of a refused request, or an error
frame inside the stream), lower-cased.
"""

from __future__ import annotations

from chatgate.errors import ProviderError

__all__ = ["CONTEXT_FULL", "CONTEXT_LENGTH_EXCEEDED", "context_full", "is_length_refusal"]

CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
"""The error code a client gets, in both protocols, when the conversation no longer fits the model."""

CONTEXT_FULL = (
    "This conversation has grown too long for the model. Start a new conversation, or reset this one, to go on."
)
"""What the person is told."""

_MARKERS = (
    "context_length_exceeded",
    "exceed_context_size_error",
    "exceeds the available context size",
    "maximum context length",
    "prompt is too long",
    "exceeds the context length",
)


def is_length_refusal(text: str) -> bool:
    """Whether an upstream's error ``text`` says the prompt does not fit the context window."""
    lowered = text.lower()
    return any(marker in lowered for marker in _MARKERS)


def context_full(detail: str) -> ProviderError:
    """The error a length refusal (or a prompt the budget cannot fit) becomes; ``detail`` is for the log."""
    return ProviderError(detail, public_message=CONTEXT_FULL, code=CONTEXT_LENGTH_EXCEEDED)
