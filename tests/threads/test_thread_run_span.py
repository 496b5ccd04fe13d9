"""A stored thread's run stopped before it began still ends its ``invoke_agent`` span, as cancelled.

The request that started the run hung up (``finish_on_disconnect = false``) before the run's task took
its first step: the agent's events were closed without ever starting, so the runner, which ends the
span, never ran a line. Before, that span was never ended (never exported). The span goes to an
in-memory exporter here; the store is a real SQLite file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from prometheus_client import CollectorRegistry, Counter

from chatgate.caller import Caller
from chatgate.config import AgentConfig, TelemetrySettings
from chatgate.events import RunEvent, RunFinished
from chatgate.history import TextPart, UserMessage
from chatgate.ids import new_id
from chatgate.runlog import MemoryRunLog
from chatgate.store import NewMessage, open_store
from chatgate.threads.run import ThreadRun, TurnRecorder
from chatgate.tracing import RunTrace
from chatgate.tracing.setup import Telemetry


@dataclass
class _Agent:
    name: str = "bot"
    config: AgentConfig = field(default_factory=lambda: AgentConfig(model="builtin:echo"))
    prompt: None = None


async def test_a_run_stopped_before_it_began_ends_its_span_as_cancelled(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    dropped = Counter("dropped_spans", "unused", registry=CollectorRegistry())
    telemetry = Telemetry(TelemetrySettings(), provider, provider.get_tracer("test"), dropped)
    trace = RunTrace(telemetry, _Agent(), protocol="ag-ui", caller=Caller(None, False), headers={})

    began: list[str] = []

    async def events() -> AsyncIterator[RunEvent]:
        began.append("yes")  # the runner's first line: never reached
        yield RunFinished("stop")

    store = await open_store(f"sqlite:///{tmp_path / 'threads.db'}", tmp_path)
    try:
        run_id = new_id("run")
        user = NewMessage(UserMessage((TextPart("hi"),), id=new_id("msg")))
        thread = await store.begin_run("", "bot", "t1", run_id, revision=0, append=[user])
        writer = await MemoryRunLog().create(run_id)
        run = ThreadRun(
            store,
            thread,
            run_id,
            events(),
            TurnRecorder("m-first"),
            writer,
            encode=lambda events: (f"data: {type(e).__name__}\n\n".encode() async for e in events),
            interrupted=lambda message, code: b"data: interrupted\n\n",
            finish_on_disconnect=False,
            trace=trace,
        )
        run.stop()  # the client is gone before the run's task first ran
        await run.task
    finally:
        await store.close()
    assert began == []
    (span,) = exporter.get_finished_spans()
    assert span.name == "invoke_agent bot"
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None and span.attributes["error.type"] == "cancelled"
