"""Two tests for tests/test_hang_guard.py to run in a pytest of its own: one stuck where pytest-timeout cannot
reach it, one that passes. Not collected by the suite (its name is not ``test_*``)."""

import signal
import time


def test_stuck_where_the_timeout_cannot_reach() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])  # pytest-timeout's signal never arrives
    time.sleep(600)


def test_the_one_beside_it() -> None:
    assert True
