"""How a run ends: exactly one ``RunFinished`` or ``RunFailed``, its usage, cost and span settled.

A failure is logged here with its detail and reaches the client only as a short public message and a
stable code.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from chatgate.errors import ChatgateError, ProviderError, RequestError, StoreUnavailable
from chatgate.events import FinishReason, RunEvent, RunFailed, RunFinished, TextDelta, TextEnd, TextStart, UsageTally
from chatgate.ids import new_id
from chatgate.leak_guard import PROMPT_LEAK_MESSAGE, PromptLeak
from chatgate.run.prompts import PromptFacts
from chatgate.run.tools import ToolsUnavailable
from chatgate.usage import BudgetExceeded, RunAccount

if TYPE_CHECKING:
    from chatgate.tracing import RunTrace

__all__ = ["OWN_ENDINGS", "SHUTTING_DOWN", "RunEnding", "RunError", "ServerStopping", "max_steps_notice"]

logger = logging.getLogger("chatgate.runner")

SHUTTING_DOWN = "The server is restarting; please try again."


class RunError(ChatgateError):
    """A run cannot go on; the message is safe for the client and the detail is already logged."""


class ServerStopping(ChatgateError):
    """The server is shutting down: the run ends now, in protocol."""


OWN_ENDINGS = (ServerStopping, PromptLeak)
"""Endings of a model call that are the run's own, not a failure of the call (the guard releases nothing)."""


def max_steps_notice(agent: str, run_id: str, max_steps: int) -> tuple[RunEvent, ...]:
    """The text that tells the client a run stopped at its limit of model steps (logged)."""
    logger.warning("agent %r run %r: stopped after max_steps=%d", agent, run_id, max_steps)
    notice = new_id("msg")
    text = f"[Stopped: this run reached its limit of {max_steps} model steps.]"
    return TextStart(notice), TextDelta(notice, text), TextEnd(notice)


class RunEnding:
    """The one terminal event of a run, and what is settled with it: the account and the run's span."""

    __slots__ = ("_account", "_agent", "_prompt", "_run_id", "_tally", "_trace")

    def __init__(
        self,
        agent: str,
        run_id: str,
        tally: UsageTally,
        account: RunAccount | None,
        trace: RunTrace | None,
        prompt: PromptFacts | None = None,
    ) -> None:
        self._agent, self._run_id, self._tally = agent, run_id, tally
        self._account, self._trace = account, trace
        self._prompt = prompt or PromptFacts()

    async def finished(self, reason: FinishReason, pending: tuple[str, ...] = ()) -> RunFinished:
        """``RunFinished``: the run's cost settled, its usage per model, the tool calls the client runs."""
        cost_usd = await self._account.close() if self._account is not None else None
        if self._trace is not None:
            self._trace.finished(reason)
        prompt = self._prompt
        return RunFinished(
            reason,
            cost_usd=cost_usd,
            usage=self._tally.entries(),
            pending_tool_call_ids=pending,
            prompt_version=prompt.version,
            prompt_hash=prompt.hash,
            variant=prompt.variant,
            run_id=self._run_id or None,
        )

    def failed(self, exc: Exception, *, streamed: bool) -> RunFailed:
        """``RunFailed`` for ``exc``, logged; ``streamed`` says some model call had sent something."""
        message, code = self._public(exc)
        # Interrupted: the upstream broke off after it had said something (what it said stands).
        interrupted = streamed and isinstance(exc, ProviderError) and exc.kind == "interrupted"
        if self._trace is not None:
            self._trace.failed(code, message)
        return RunFailed(message, code=code, usage=self._tally.entries(), interrupted=interrupted)

    def close(self) -> None:
        """Record a run that did not reach ``RunFinished`` too, and end its span (cut off: as cancelled)."""
        if self._account is not None:
            self._account.finish()
        if self._trace is not None:
            self._trace.close()

    def _public(self, exc: Exception) -> tuple[str, str]:
        """The client's message and code for ``exc``, its detail logged (a leak is logged by the guard)."""
        agent, run_id = self._agent, self._run_id
        if isinstance(exc, ServerStopping):
            logger.warning("agent %r run %r: ended early, the server is shutting down", agent, run_id)
            return SHUTTING_DOWN, "server_shutdown"
        if isinstance(exc, PromptLeak):
            return PROMPT_LEAK_MESSAGE, "prompt_leak"
        if isinstance(exc, ProviderError):
            logger.error("agent %r run %r: model call failed: %s", agent, run_id, exc)
            return exc.public_message, exc.code
        if isinstance(exc, RunError):
            return str(exc), "run_error"
        if isinstance(exc, ToolsUnavailable):
            logger.warning("agent %r run %r: %s", agent, run_id, exc.public_message)
            return exc.public_message, exc.code
        if isinstance(exc, BudgetExceeded):
            logger.info("agent %r run %r: %s", agent, run_id, exc.message)
            return exc.message, "budget_exceeded"
        if isinstance(exc, RequestError):  # the budgets could not be checked
            return exc.message, exc.code
        if isinstance(exc, StoreUnavailable):  # a stored thread's approval ledger: the store is down or locked
            logger.warning("agent %r run %r: %s", agent, run_id, exc)
            return exc.public_message, exc.code
        logger.exception("agent %r run %r: unexpected failure", agent, run_id, exc_info=exc)
        return "An internal error occurred.", "internal_error"
