"""A run on a stored thread: detached from its request, checkpointed, saved once when it ends.

``ThreadRun`` drives ``run_agent`` in its own task. The request only follows it (``follow()``):
when the client hangs up, the run goes on to the end and is saved (``[store] finish_on_disconnect``,
the default), or is cancelled and what it said so far is saved as ``partial``. The turn is assembled
in memory (``TurnRecorder``) and written at the end; every ``CHECKPOINT_SECONDS`` a checkpoint
rewrites it as ``partial`` and refreshes the run's heartbeat, so a process killed mid-stream leaves
at most that much unsaved, and its thread is freed once the heartbeat is stale. Nothing is written
per token.

This is the seam resumable runs build on: a second follower of the same run, and a stop, attach here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import replace

from chatgate.assembly import MessageAssembler
from chatgate.events import (
    ReasoningDelta,
    RunEvent,
    RunFailed,
    RunFinished,
    StepFinished,
    StepStarted,
    TextDelta,
    TextStart,
    ToolCallDelta,
    ToolDenied,
    ToolResult,
)
from chatgate.history import AssistantMessage, Message, ToolMessage
from chatgate.ids import new_id
from chatgate.store import MessageStatus, ThreadInfo, ThreadStore

__all__ = ["CHECKPOINT_SECONDS", "ThreadRun", "TurnRecorder", "close_thread_runs"]

logger = logging.getLogger("chatgate.thread_run")

CHECKPOINT_SECONDS = 1.0
"""How often a running turn is saved as ``partial`` (and its heartbeat refreshed)."""

_DELTAS = (TextDelta, ReasoningDelta, ToolCallDelta)


class TurnRecorder:
    """Folds a run's events into the messages of its turn: assistant steps and tool results, in order.

    The first assistant message gets ``first_id`` (useChat's ``start.messageId``) when given; otherwise
    a step is known by its first text span's id, the id an AG-UI client sees.
    """

    def __init__(self, first_id: str | None) -> None:
        self._first_id = first_id
        self._done: list[Message] = []
        self._step: MessageAssembler | None = None
        self._step_id: str | None = None

    def feed(self, event: RunEvent) -> None:
        """Take one event into account."""
        step = self._step
        if type(event) in _DELTAS:
            if step is not None:
                step.feed(event)
            return
        if isinstance(event, StepStarted):
            self._close_step()
            self._step = MessageAssembler()
            self._step_id = None
        elif isinstance(event, StepFinished):
            self._close_step()
        elif isinstance(event, ToolResult | ToolDenied):
            self._close_step()
            self._done.append(_tool_message(event))
        elif step is not None:
            if isinstance(event, TextStart) and self._step_id is None:
                self._step_id = event.id
            step.feed(event)

    def turn(self) -> list[Message]:
        """The turn so far, including the step in progress."""
        current = self._current()
        return [*self._done, current] if current is not None else list(self._done)

    def _current(self) -> AssistantMessage | None:
        if self._step is None:
            return None
        message = self._step.message()
        if not message.parts:
            return None
        first = not any(isinstance(m, AssistantMessage) for m in self._done)
        message_id = self._first_id if first and self._first_id else (self._step_id or new_id("msg"))
        self._step_id = message_id  # the same id at every checkpoint
        return replace(message, id=message_id)

    def _close_step(self) -> None:
        current = self._current()
        if current is not None:
            self._done.append(current)
        self._step = None
        self._step_id = None


def _tool_message(event: ToolResult | ToolDenied) -> ToolMessage:
    if isinstance(event, ToolDenied):
        reason = f" Reason: {event.reason}" if event.reason else ""
        return ToolMessage(event.tool_call_id, f"The user denied this tool call.{reason}", True, id=new_id("msg"))
    return ToolMessage(event.tool_call_id, event.content, event.is_error, id=new_id("msg"))


_END = object()


class ThreadRun:
    """One run on a stored thread, in its own task. See the module docstring."""

    def __init__(
        self,
        store: ThreadStore,
        thread: ThreadInfo,
        run_id: str,
        events: AsyncIterator[RunEvent],
        recorder: TurnRecorder,
        *,
        finish_on_disconnect: bool,
    ) -> None:
        self.thread = thread
        self.run_id = run_id
        self._store = store
        self._events = events
        self._recorder = recorder
        self._finish_on_disconnect = finish_on_disconnect
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._following = True
        self.task = asyncio.create_task(self._drive(), name=f"thread-run {run_id}")

    async def follow(self) -> AsyncIterator[RunEvent]:
        """The run's events for the request; the terminal one only once the turn is saved."""
        try:
            while True:
                item = await self._queue.get()
                if item is _END:
                    return
                if isinstance(item, RunFinished | RunFailed):
                    await asyncio.shield(self.task)  # saved before the client hears the run is over
                    yield item
                    return
                yield item  # type: ignore[misc]
        finally:
            self._following = False
            if not self._finish_on_disconnect and not self.task.done():
                self.task.cancel()

    async def _drive(self) -> None:
        status: MessageStatus = "partial"
        checkpoints = asyncio.create_task(self._checkpoints())
        try:
            async with aclosing(self._events) as events:  # type: ignore[type-var]
                async for event in events:
                    self._recorder.feed(event)
                    if isinstance(event, RunFinished):
                        status = "complete"
                    elif isinstance(event, RunFailed):
                        status = "partial" if event.code == "server_shutdown" else "error"
                    if self._following:
                        self._queue.put_nowait(event)
        finally:
            checkpoints.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await checkpoints
            try:
                await asyncio.shield(self._store.finish_run(self.thread, self.run_id, self._recorder.turn(), status))
            except Exception:
                logger.exception("thread run %r: saving the turn failed", self.run_id)
            self._queue.put_nowait(_END)

    async def _checkpoints(self) -> None:
        while True:
            await asyncio.sleep(CHECKPOINT_SECONDS)
            try:
                await self._store.checkpoint(self.thread, self.run_id, self._recorder.turn())
            except Exception:
                logger.exception("thread run %r: checkpoint failed", self.run_id)


async def close_thread_runs(runs: set[ThreadRun]) -> None:
    """At shutdown: runs still going after their grace (detached ones) are cancelled and saved as partial."""
    tasks = [run.task for run in runs]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
