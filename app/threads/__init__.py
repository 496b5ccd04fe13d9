"""Server-held threads: the ``thread`` stage between decode and run, and runs detached from their request.

``plan.py`` (reconciling what a client sent with the stored thread), ``stage.py`` (load, reconcile, commit
the user turn, start the run), ``run.py`` (a run that outlives its request, writing a run log, stoppable,
checkpointed) and ``follow.py`` (following a run's log: replay, then live).
"""

from chatgate.threads.follow import replay_run, run_log_id
from chatgate.threads.run import checkpoint_runs, close_thread_runs
from chatgate.threads.stage import ThreadServices, open_thread_turn

__all__ = [
    "ThreadServices",
    "checkpoint_runs",
    "close_thread_runs",
    "open_thread_turn",
    "replay_run",
    "run_log_id",
]
