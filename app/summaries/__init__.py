"""Writing and keeping a thread's summary under ``strategy = "summarize"`` (docs/configuration.md).

``writer`` makes the one model call that folds the turns a thread's model no longer sees into its
summary (the agent's model, or ``[agents.NAME.context] summary_model``); ``keeper`` holds a stored
thread's summary for one run and saves a new one in the store while the run holds the thread. Which
turns to fold, and how the summary is sent, is the context budget's (app/context/).
"""

from chatgate.summaries.keeper import SummaryKeeper
from chatgate.summaries.writer import SummaryModel, summary_model, write_summary

__all__ = ["SummaryKeeper", "SummaryModel", "summary_model", "write_summary"]
