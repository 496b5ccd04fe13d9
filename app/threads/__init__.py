"""Server-held threads: the ``thread`` stage between decode and run, and runs detached from their request.

``plan.py`` (reconciling what a client sent with the stored thread), ``stage.py`` (load, reconcile, commit
the user turn, start the run), ``run.py`` (a run that outlives its request, writing a run log, stoppable,
checkpointed) and ``follow.py`` (following a run's log: replay, then live).
"""

__all__: list[str] = []
