"""Server-held threads: the ``thread`` stage between decode and run, and runs detached from their request.

``plan.py`` (reconciling what a client sent with the stored thread), ``inputs.py`` (the request forked
once by the plan: the model's input and agent, the protocol's), ``stage.py`` (load, reconcile, commit
the user turn, start the run), ``run.py`` (a run that outlives its request, writing a run log, stoppable,
checkpointed), ``follow.py`` (following a run's log: replay, then live) and ``stop.py`` (stopping a
running run on any replica, and waiting for its end before a delete), ``journal.py`` (a run's neutral
events as JSON lines beside its frames) and ``recovery.py`` (a dead producer's turn rebuilt from its
journal and saved once; the periodic sweep).
"""

from chatgate.threads.follow import replay_run, run_log_id
from chatgate.threads.recovery import RunRecovery, sweep_dead_runs
from chatgate.threads.run import ThreadRun, checkpoint_runs, close_thread_runs
from chatgate.threads.stage import RunCursor, ThreadServices, open_thread_turn
from chatgate.threads.stop import request_stop, stop_and_wait
from chatgate.threads.titles import MAX_TITLE_CHARS, ThreadTitler, thread_titler

__all__ = [
    "MAX_TITLE_CHARS",
    "RunCursor",
    "RunRecovery",
    "ThreadRun",
    "ThreadServices",
    "ThreadTitler",
    "checkpoint_runs",
    "close_thread_runs",
    "open_thread_turn",
    "replay_run",
    "request_stop",
    "run_log_id",
    "stop_and_wait",
    "sweep_dead_runs",
    "thread_titler",
]
