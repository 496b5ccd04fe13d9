"""A run on a stored thread: detached from its request, checkpointed, saved once when it ends.

``ThreadRun`` drives ``run_agent`` in its own task and writes the encoded stream to the run's log
(app/runlog/). The request only follows that log (``follow()``), as a resume or a reconnect does:
when the client hangs up, the run goes on to the end and is saved (``[store] finish_on_disconnect``,
the default), or is cancelled and what it said so far is saved as ``partial``. The turn is assembled
in memory (``TurnRecorder``) and written at the end; every ``CHECKPOINT_SECONDS`` a checkpoint
rewrites it as ``partial`` and refreshes the run's heartbeat. With a Redis run log every event also
goes into the run's journal (app/threads/journal.py), batched with its frames, so a process killed
mid-stream loses nothing a follower received: app/threads/recovery.py rebuilds the turn from the journal
once the run's lease lapses. With the memory run log a kill loses at most a checkpoint's worth, and the
thread is freed once the heartbeat is stale. A turn the store refused at the end (the store down) is
retried with backoff while the run's lease is held, so it is never lost either. One task per process
(``checkpoint_runs``) checkpoints every running turn together, in one store transaction. Nothing is
written per token.

Resume, reconnect and stop (docs/resume.md) attach here: any number of followers read the log, and
a stop asked on any replica reaches the task through the log's writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from chatgate.errors import StoreUnavailable
from chatgate.events import (
    ReasoningDelta,
    RunEvent,
    RunFailed,
    RunFinished,
    StepFinished,
    StepRetracted,
    StepStarted,
    TextDelta,
    TextStart,
    ToolCallDelta,
    ToolDenied,
    ToolResult,
    Usage,
    UsageTally,
)
from chatgate.history import AssistantMessage, Message
from chatgate.ids import new_id
from chatgate.run import MessageAssembler, tool_message
from chatgate.runlog import RunEnding, RunWriter
from chatgate.store import MessageStatus, RunningTurn, ThreadInfo, ThreadStore
from chatgate.threads.follow import follow_run
from chatgate.threads.journal import encode_event, encode_header
from chatgate.tracing import RunTrace

__all__ = [
    "CHECKPOINT_SECONDS",
    "RETRACTED",
    "SAVE_RETRY_SECONDS",
    "ThreadRun",
    "TurnRecorder",
    "checkpoint_runs",
    "close_thread_runs",
]

logger = logging.getLogger("chatgate.thread_run")

CHECKPOINT_SECONDS = 1.0
"""How often a running turn is saved as ``partial`` (and its heartbeat refreshed)."""

SAVE_RETRY_SECONDS = (0.1, 0.2, 0.5, 1.0)
"""The waits between tries to save a finished turn the store refused; the last repeats until it answers."""

RETRACTED = "retracted"
"""The stored answer's metadata key listing the attempts withdrawn before it: ``{model, reason, failure}`` each."""

_SHUTDOWN = "The server stopped; what was said so far is saved."
_DELTAS = (TextDelta, ReasoningDelta, ToolCallDelta)


def answer_metadata(finished: RunFinished) -> dict[str, Any]:
    """What a stored answer records of the run that wrote it: ``runId`` and ``prompt``, as far as it had them."""
    prompt = {"version": finished.prompt_version, "hash": finished.prompt_hash, "variant": finished.variant}
    noted: dict[str, Any] = {"runId": finished.run_id} if finished.run_id else {}
    if finished.prompt_hash is not None:
        noted["prompt"] = {key: value for key, value in prompt.items() if value is not None}
    return noted


class TurnRecorder:
    """Folds a run's events into the messages of its turn: assistant steps and tool results, in order.

    The first assistant message gets ``first_id`` (useChat's ``start.messageId``) when given; otherwise
    a step is known by its first text span's id, the id an AG-UI client sees. Once the run has finished,
    each of its answers' metadata names the run (``runId``: what feedback on it is kept under) and the
    prompt it answered under (``prompt``: ``{version, hash, variant}``, docs/prompts.md).
    """

    def __init__(self, first_id: str | None) -> None:
        self._first_id = first_id
        self.first_id = first_id
        """The id given to the first assistant message, if any (a run's journal header records it)."""
        self._done: list[Message] = []
        self._step: MessageAssembler | None = None
        self._step_id: str | None = None
        self._retracted: list[dict[str, str]] = []  # the step's withdrawn attempts, for its message's metadata
        self._answered: dict[str, Any] = {}  # the finished run's id and prompt, for every answer's metadata

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
        elif isinstance(event, StepRetracted):  # only what replaces the step's output is stored
            self._step = MessageAssembler()
            self._step_id = None
            self._retracted.append({"model": event.model, "reason": event.reason, "failure": event.failure})
        elif isinstance(event, ToolResult | ToolDenied):
            self._close_step()
            self._done.append(tool_message(event, message_id=new_id("msg")))
        elif isinstance(event, RunFinished):
            self._answered = answer_metadata(event)
        elif step is not None:
            if isinstance(event, TextStart) and self._step_id is None:
                self._step_id = event.id
            step.feed(event)

    def turn(self) -> list[Message]:
        """The turn so far, including the step in progress."""
        current = self._current()
        turn = [*self._done, current] if current is not None else list(self._done)
        if not self._answered:
            return turn
        return [
            replace(m, metadata={**m.metadata, **self._answered}) if isinstance(m, AssistantMessage) else m
            for m in turn
        ]

    def _current(self) -> AssistantMessage | None:
        if self._step is None:
            return None
        message = self._step.message()
        if not message.parts:
            return None
        first = not any(isinstance(m, AssistantMessage) for m in self._done)
        message_id = self._first_id if first and self._first_id else (self._step_id or new_id("msg"))
        self._step_id = message_id  # the same id at every checkpoint
        metadata = {RETRACTED: list(self._retracted)} if self._retracted else {}
        return replace(message, id=message_id, metadata=metadata)

    def _close_step(self) -> None:
        current = self._current()
        if current is not None:
            self._done.append(current)
        self._step = None
        self._step_id = None
        self._retracted = []


class ThreadRun:
    """One run on a stored thread, in its own task, writing its encoded stream to a run log.

    The task runs the agent, folds its events into the turn, encodes them (``encode``, the request's
    protocol) and writes every frame to ``writer``. The turn is saved before the terminal event reaches
    the encoder, so whoever reads a run's ending can read its saved turn. A stop (``stop()`` here or
    ``request_stop`` on the run log from any replica) cancels the agent (closing its upstream request),
    saves the turn as ``partial`` and ends the stream with ``RunFinished(stopped=True)``. ``answered``
    is told the answer's text when a complete turn was saved (app/threads/titles.py writes the title).
    """

    def __init__(
        self,
        store: ThreadStore,
        thread: ThreadInfo,
        run_id: str,
        events: AsyncIterator[RunEvent],
        recorder: TurnRecorder,
        writer: RunWriter,
        *,
        encode: Callable[[AsyncIterator[RunEvent]], AsyncIterator[bytes]],
        interrupted: Callable[[str, str], bytes],
        finish_on_disconnect: bool,
        trace: RunTrace | None = None,
        model: tuple[str, str] = ("", ""),
        answered: Callable[[str], None] | None = None,
    ) -> None:
        self.thread = thread
        self._answered = answered  # told the answer's text once a complete turn is saved (the thread's title)
        self._trace = trace
        self.run_id = run_id
        self._store = store
        self._events = events
        self._recorder = recorder
        self._writer = writer
        self._encode = encode
        self._interrupted = interrupted
        self._finish_on_disconnect = finish_on_disconnect
        self._model = model  # provider and model: what a stopped ending reports the usage under
        self._usage = UsageTally()  # the run's usage so far, for a stopped ending (the runner has none)
        self._started = False
        self._stopping = False
        self._terminal = False  # the run's ending is decided: a stop comes too late
        self._saved = False
        self._unsaved: MessageStatus | None = None  # the status of a turn the store refused at the end
        self._journal = writer.keeps_journal
        self._checkpointed = False  # a checkpoint was handed this run's turn: its finish clears the copy
        self._ending: RunEnding = "failed"
        self.task = asyncio.create_task(self._drive(), name=f"thread-run {run_id}")

    def stop(self) -> None:
        """End the run now, saving what it said as ``partial``; nothing once its ending is decided."""
        if self._terminal or self._stopping:
            return
        self._stopping = True
        if self._started:
            self.task.cancel()

    async def follow(self, frames: AsyncIterator[bytes]) -> AsyncGenerator[bytes, None]:
        """``frames`` (the run log) for the request that started the run; its hang-up may stop the run."""
        try:
            async for frame in follow_run(frames, self._interrupted):
                yield frame
        finally:
            if not self._finish_on_disconnect:
                self.stop()

    def running_turn(self) -> RunningTurn | None:
        """The turn so far, for a checkpoint; None once the run's ending is decided (it saves itself)."""
        if not self._started or self._terminal:
            return None
        self._checkpointed = True  # set before the checkpoint's transaction, so ``_save`` cannot miss it
        return self.thread, self.run_id, self._recorder.turn()

    async def _drive(self) -> None:
        self._started = True
        if self._journal:
            self._writer.journal(encode_header(self._recorder.first_id))
        watching = asyncio.create_task(self._watch_stop())
        try:
            async with aclosing(self._encode(self._saved_events())) as frames:  # type: ignore[type-var]
                async for frame in frames:
                    self._writer.write(frame)
        finally:
            self._terminal = True
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
            if not self._saved:  # cancelled from outside (shutdown): the encoder wrote no ending
                await self._save("partial")
                self._writer.write(self._interrupted(_SHUTDOWN, "server_shutdown"))
            try:
                await asyncio.shield(self._writer.close(self._ending, hold=self._unsaved is not None))
            except Exception:
                logger.exception("thread run %r: closing its run log failed", self.run_id)
            if self._trace is not None:  # the agent's events may never have started: a stop came first
                self._trace.close()
            if self._unsaved is not None:
                await self._save_until_stored(self._unsaved)

    async def _save_until_stored(self, status: MessageStatus) -> None:
        """Retry saving the finished turn until the store answers, the run's lease held meanwhile.

        Cancelled (shutdown), the lease lapses and another replica recovers the turn from the journal.
        """
        retries = 0
        while True:
            await asyncio.sleep(SAVE_RETRY_SECONDS[min(retries, len(SAVE_RETRY_SECONDS) - 1)])
            retries += 1
            try:
                await self._store.finish_run(self.thread, self.run_id, self._recorder.turn(), status)
                break
            except Exception as exc:
                logger.warning("thread run %r: the store still refuses its turn: %s", self.run_id, exc)
        logger.info("thread run %r: its turn is saved after %d retries", self.run_id, retries)
        try:
            await self._writer.release()
        except Exception:
            logger.exception("thread run %r: releasing its lease failed", self.run_id)

    async def _saved_events(self) -> AsyncIterator[RunEvent]:
        """The agent's events, the turn saved before the terminal one; a stop becomes a stopped ending."""
        if self._stopping:  # stopped before it began
            aclose = getattr(self._events, "aclose", None)
            if aclose is not None:
                await aclose()
            await self._save("partial")
            self._ending = "stopped"
            yield self._noted(RunFinished("other", stopped=True))
            return
        provider, model = self._model
        try:
            async with aclosing(self._events) as events:  # type: ignore[type-var]
                async for event in events:
                    self._recorder.feed(event)
                    if self._journal:
                        self._writer.journal(encode_event(event))
                    if type(event) is Usage:
                        self._usage.add(provider, model, event)
                    elif isinstance(event, RunFinished | RunFailed):
                        self._terminal = True
                        if isinstance(event, RunFinished):
                            self._ending = "finished"
                            status: MessageStatus = "complete"
                        else:
                            # A run stopped on a prompt leak keeps what it said before the leak; one
                            # whose upstream broke off keeps what it said before the break.
                            cut_off = event.interrupted or event.code in ("server_shutdown", "prompt_leak")
                            status = "partial" if cut_off else "error"
                        await self._save(status)
                        if status == "complete" and self._answered is not None and self._unsaved is None:
                            self._answered(_answer_text(self._recorder.turn()))
                        yield event
                        return
                    yield event
        except asyncio.CancelledError:
            if not self._stopping:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            self._terminal = True
            await self._save("partial")
            self._ending = "stopped"
            yield self._noted(RunFinished("other", stopped=True, usage=self._usage.entries()))
            return
        # The events ended with no terminal event: the encoder ends the stream as failed.
        self._terminal = True
        await self._save("error")

    def _noted(self, event: RunEvent) -> RunEvent:
        """``event``, journaled (a stop's ending: a recovery then stores the turn as ``partial``)."""
        if self._journal:
            self._writer.journal(encode_event(event))
        return event

    async def _save(self, status: MessageStatus) -> None:
        """Save the turn; one the store refused is retried once the stream has ended (``_save_until_stored``)."""
        self._saved = True
        try:
            finishing = self._store.finish_run(
                self.thread, self.run_id, self._recorder.turn(), status, checkpointed=self._checkpointed
            )
            await asyncio.shield(finishing)
        except StoreUnavailable as exc:
            logger.warning("thread run %r: the turn was not saved, retrying: %s", self.run_id, exc)
            self._unsaved = status
        except Exception:
            logger.exception("thread run %r: saving the turn failed, retrying", self.run_id)
            self._unsaved = status

    async def _watch_stop(self) -> None:
        await self._writer.stop_requested()
        self.stop()


def _answer_text(turn: list[Message]) -> str:
    """The text of the turn's assistant messages, in order."""
    return "\n\n".join(m.text for m in turn if isinstance(m, AssistantMessage) and m.text)


async def checkpoint_runs(store: ThreadStore, runs: set[ThreadRun]) -> None:
    """Every ``CHECKPOINT_SECONDS``, save the turn of every run in ``runs`` still going, in one transaction.

    One task per process, started with the app: ten streaming runs cost one transaction a second, not ten.
    """
    while True:
        await asyncio.sleep(CHECKPOINT_SECONDS)
        running = [turn for turn in (run.running_turn() for run in runs) if turn is not None]
        if not running:
            continue
        try:
            await store.checkpoint(running)
        except StoreUnavailable as exc:
            logger.warning("checkpointing %d running turns failed: %s", len(running), exc)
        except Exception:
            logger.exception("checkpointing %d running turns failed", len(running))


async def close_thread_runs(runs: set[ThreadRun]) -> None:
    """At shutdown: runs still going after their grace (detached ones) are cancelled and saved as partial."""
    tasks = [run.task for run in runs]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
