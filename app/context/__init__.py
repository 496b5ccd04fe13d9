"""The context budget: which stored messages the model sees this turn, in roles it accepts.

It sits where the model request is built from the thread (after the system-prompt policy and the
prompt) and never deletes from the store: what the UI shows and what the model sees are two views of
one thread. ``budget`` decides the view (window, strategy, dropped turns), ``counting`` counts its
tokens from the upstream's own reports, ``refusals`` recognizes each upstream's "too long", ``probe``
asks a model server for its window, ``summary`` is a thread's summary under ``summarize`` and how
the model receives it, and ``roles`` keeps user and assistant turns alternating for strict
chat templates.
"""

from chatgate.context.budget import ContextBudget, ContextView, Strategy, WindowProbe
from chatgate.context.counting import estimate
from chatgate.context.probe import window_probe
from chatgate.context.refusals import CONTEXT_FULL, CONTEXT_LENGTH_EXCEEDED, context_full, is_length_refusal
from chatgate.context.roles import HISTORY_START, alternate_roles
from chatgate.context.summary import SUMMARY_INSTRUCTION, SUMMARY_REQUEST, ContextSummary, summary_prompt

__all__ = [
    "CONTEXT_FULL",
    "CONTEXT_LENGTH_EXCEEDED",
    "HISTORY_START",
    "SUMMARY_INSTRUCTION",
    "SUMMARY_REQUEST",
    "ContextBudget",
    "ContextSummary",
    "ContextView",
    "Strategy",
    "WindowProbe",
    "alternate_roles",
    "context_full",
    "estimate",
    "is_length_refusal",
    "summary_prompt",
    "window_probe",
]
