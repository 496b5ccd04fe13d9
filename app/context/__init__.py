"""The context budget: which stored messages the model sees this turn, in roles it accepts.

It sits where the model request is built from the thread (after the system-prompt policy and the
prompt) and never deletes from the store: what the UI shows and what the model sees are two views of
one thread. ``budget`` decides the view (window, strategy, dropped turns), ``counting`` counts its
tokens from the upstream's own reports (over app/token_estimates.py's estimates), ``probe`` asks a model server
for its window, ``summary`` is a thread's summary under ``summarize`` and how the model receives it,
``summary_writer`` the one model call that folds turns into it (the agent's model or
``summary_model``), ``summary_keeper`` a stored thread's summary for one run, and ``roles`` keeps user
and assistant turns alternating for strict chat templates. Each upstream's "too long" is recognized by
the providers (app/providers/refusals.py), whose ``context_length_exceeded`` the budget retries on.
"""

from chatgate.context.budget import ContextBudget, ContextView, Strategy, WindowProbe
from chatgate.context.probe import window_probe
from chatgate.context.roles import HISTORY_START, alternate_roles
from chatgate.context.summary import SUMMARY_INSTRUCTION, SUMMARY_REQUEST, ContextSummary, summary_prompt
from chatgate.context.summary_keeper import SummaryKeeper
from chatgate.context.summary_writer import summary_model, write_summary
from chatgate.providers import CONTEXT_FULL, CONTEXT_LENGTH_EXCEEDED

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
    "SummaryKeeper",
    "WindowProbe",
    "alternate_roles",
    "summary_model",
    "summary_prompt",
    "window_probe",
    "write_summary",
]
