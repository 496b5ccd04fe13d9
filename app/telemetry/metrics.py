"""The Prometheus metrics of one app: what ``GET /metrics`` shows (every metric is in docs/observability.md).

Each app owns its ``CollectorRegistry``, so several apps in one process (tests) never share counts.
Nothing here runs per token: a stream counts its events in a local and records them once at its end,
and a model call records its timings and usage once each. The labelled series a stream or a model call
records to are looked up once per protocol and agent (``_StreamSeries``, ``_CallSeries``), not with
``labels()`` on every request: about ten ``labels()`` calls a request cost more than a dict lookup each.

Where the OpenTelemetry GenAI semantic conventions define a measure, the metric follows its meaning
and unit with a Prometheus-style name: ``gen_ai.client.token.usage`` is ``chatgate_model_tokens_total``
(tokens), ``gen_ai.client.operation.duration`` is ``chatgate_upstream_duration_seconds`` and
``gen_ai.server.time_to_first_token`` is ``chatgate_upstream_time_to_first_token_seconds`` (seconds).

Labels are key ids, agent, provider and protocol names and short fixed kinds: never a secret or any
text a client sent.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import Response

from chatgate.caller import Caller, caller_of
from chatgate.errors import ProviderError, RequestError
from chatgate.events import Usage
from chatgate.telemetry.mcp_metrics import MCPMetrics
from chatgate.telemetry.processes import BuildInfo, scrape_registry

__all__ = [
    "CONTENT_TYPE",
    "Metrics",
    "ModelCallMeter",
    "StreamMeter",
    "error_kind",
    "key_label",
    "metrics_endpoint",
]

CONTENT_TYPE = CONTENT_TYPE_LATEST
"""The content type of the text exposition format."""

# Streams: from well under a second to a long tool-using run.
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_EVENT_BUCKETS = (1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)


def error_kind(error: BaseException) -> str:
    """The fixed ``kind`` label of an upstream failure: its stable ``ProviderError.kind``, else ``other``."""
    return error.kind if isinstance(error, ProviderError) else "other"


def key_label(caller: Caller) -> str:
    """The ``key`` label of a caller: its key id, ``"(token)"`` for any signed-in person, or ``""`` (no keys).

    A person gets no label of their own: one label value per person would grow the metrics without end.
    """
    if caller.person is not None:
        return "(token)"
    return caller.key_id or ""


class Metrics:
    """Every metric of one app, in its own registry. ``render()`` is the body of ``GET /metrics``."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self.requests = Counter(
            "chatgate_requests",
            "HTTP requests answered, by protocol, agent, key and status (protocol and agent are empty off the "
            "chat routes, and agent is empty when the request named no known agent)",
            ["protocol", "agent", "key", "status"],
            registry=registry,
        )
        self.active_streams = Gauge(
            "chatgate_active_streams",
            "SSE streams open now",
            ["protocol", "agent"],
            registry=registry,
            multiprocess_mode="livesum",  # with workers: the live workers' streams, summed
        )
        self.stream_events = Histogram(
            "chatgate_stream_events",
            "SSE events sent per stream (recorded when the stream ends)",
            ["protocol", "agent"],
            buckets=_EVENT_BUCKETS,
            registry=registry,
        )
        self.time_to_first_event = Histogram(
            "chatgate_time_to_first_event_seconds",
            "Seconds from a chat request arriving to its stream's first event being sent",
            ["protocol", "agent"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.upstream_ttft = Histogram(
            "chatgate_upstream_time_to_first_token_seconds",
            "Seconds from starting a model call to its first event (OTel gen_ai.server.time_to_first_token)",
            ["provider", "agent"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.upstream_duration = Histogram(
            "chatgate_upstream_duration_seconds",
            "Seconds one model call took, start to last event or failure (OTel gen_ai.client.operation.duration)",
            ["provider", "agent", "error_kind"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.upstream_errors = Counter(
            "chatgate_upstream_errors",
            "Model calls that failed, by provider and kind",
            ["provider", "agent", "kind"],
            registry=registry,
        )
        self.failovers, self.breaker_trips = _failover_counters(registry)
        self.tokens = Counter(
            "chatgate_model_tokens",
            "Tokens the provider reported, by type input, output, reasoning or cached_input"
            " (OTel gen_ai.client.token.usage; reasoning is part of output, cached_input of input)",
            ["provider", "agent", "type"],
            registry=registry,
        )
        self.cost = Counter(
            "chatgate_model_cost_usd",
            "US dollars the model calls cost, priced by genai-prices or [pricing] (unpriced calls add nothing)",
            ["agent"],
            registry=registry,
        )
        self.unreported_usage = Counter(
            "chatgate_model_calls_without_usage",
            "Model calls whose provider reported no usage (counted in no token total and no budget)",
            ["provider", "agent"],
            registry=registry,
        )
        self.system_messages_stripped = Counter(
            "chatgate_client_system_messages_stripped",
            "Client system or developer messages removed under manage_system_prompt = 'server'",
            ["agent"],
            registry=registry,
        )
        self.context_turns_dropped = Counter(
            "chatgate_context_turns_dropped",
            "Turns left out of the model's view to fit the agent's context window, by agent and strategy",
            ["agent", "strategy"],
            registry=registry,
        )
        self.context_summaries = Counter(
            "chatgate_context_summaries",
            "Summaries of turns that no longer fit the agent's context window, by agent, strategy and outcome"
            " (written, or failed: turns left out instead)",
            ["agent", "strategy", "outcome"],
            registry=registry,
        )
        self.prompt_leaks = Counter(
            "chatgate_prompt_leaks",
            "Answers that repeated the system prompt, by agent and leak_guard mode (redact or stop)",
            ["agent", "mode"],
            registry=registry,
        )
        self.rate_limited = Counter(
            "chatgate_rate_limited_requests",
            "Requests refused by a per-key limit, by key and limit (rpm or max_concurrent_streams)",
            ["key", "limit"],
            registry=registry,
        )

        self.mcp = MCPMetrics(registry)
        registry.register(BuildInfo())
        ProcessCollector(registry=registry)
        self._scraped = scrape_registry()  # with --workers: every worker's values (app/telemetry/processes.py)
        self._stream_series: dict[tuple[str, str], _StreamSeries] = {}
        self._call_series: dict[tuple[str, str], _CallSeries] = {}
        self._answered: dict[tuple[str, str, str, int], Counter] = {}

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric (of every worker, with ``--workers``)."""
        return generate_latest(self._scraped if self._scraped is not None else self.registry)

    def count_rate_limited(self, caller: Caller, limit: str) -> None:
        """Count one request refused by the per-key ``limit`` (``"rpm"`` or ``"max_concurrent_streams"``)."""
        self.rate_limited.labels(key_label(caller), limit).inc()

    def count_failover(self, agent: str, source: str, target: str, reason: str) -> None:
        """A step moved from model ``source`` to ``target`` (``provider:model``) for ``reason``."""
        self.failovers.labels(agent, source, target, reason).inc()

    def count_breaker_trip(self, model: str) -> None:
        """A failure of ``model`` in this process started its cooldown."""
        self.breaker_trips.labels(model).inc()

    def count_stripped(self, agent: str, count: int) -> None:
        """Count ``count`` client system messages the policy removed for ``agent``."""
        if count:
            self.system_messages_stripped.labels(agent).inc(count)

    def count_dropped_turns(self, agent: str, strategy: str, count: int) -> None:
        """Count ``count`` turns the context budget left out of a model call for ``agent``."""
        if count:
            self.context_turns_dropped.labels(agent, strategy).inc(count)

    def count_summary(self, agent: str, strategy: str, outcome: str) -> None:
        """Count one summary call for ``agent``: ``outcome`` is ``"written"`` or ``"failed"``."""
        self.context_summaries.labels(agent, strategy, outcome).inc()

    def count_prompt_leak(self, agent: str, mode: str) -> None:
        """Count one leak of the system prompt the leak guard caught in a run of ``agent`` under ``mode``."""
        self.prompt_leaks.labels(agent, mode).inc()

    def count_request(self, protocol: str, agent: str, key: str, status: int) -> None:
        """Count one HTTP request answered with ``status``."""
        labels = (protocol, agent, key, status)
        counter = self._answered.get(labels)
        if counter is None:
            counter = self._answered[labels] = self.requests.labels(protocol, agent, key, str(status))
        counter.inc()

    def stream(self, protocol: str, agent: str, started: float) -> StreamMeter:
        """The meter of one stream; ``started`` is when its request arrived (``time.perf_counter()``)."""
        series = self._stream_series.get((protocol, agent))
        if series is None:
            series = self._stream_series[(protocol, agent)] = _StreamSeries(self, protocol, agent)
        return StreamMeter(series, started)

    def model_call(self, provider: str, agent: str) -> ModelCallMeter:
        """The meter of one model call, started now."""
        series = self._call_series.get((provider, agent))
        if series is None:
            series = self._call_series[(provider, agent)] = _CallSeries(self, provider, agent)
        return ModelCallMeter(series, time.perf_counter())


def _failover_counters(registry: CollectorRegistry) -> tuple[Counter, Counter]:
    """``chatgate_failovers_total`` and ``chatgate_breaker_trips_total`` (fallback chains, app/run/failover.py)."""
    failovers = Counter(
        "chatgate_failovers",
        "Steps moved to the next model of an agent's fallback chain before any output, by the model failed "
        "from, the model moved to and the reason (the failure's kind, context_length, or cooling_down for "
        "a model the breaker skipped)",
        ["agent", "from", "to", "reason"],
        registry=registry,
    )
    trips = Counter(
        "chatgate_breaker_trips",
        "Cooldowns of a fallback chain's model (provider:model) started by a failure in this process: "
        "from then on chains skip it for [server] failover_cooldown_seconds",
        ["model"],
        registry=registry,
    )
    return failovers, trips


class _StreamSeries:
    """The labelled series of one protocol and agent's streams."""

    __slots__ = ("active", "events", "first_event")

    def __init__(self, metrics: Metrics, protocol: str, agent: str) -> None:
        self.active = metrics.active_streams.labels(protocol, agent)
        self.events = metrics.stream_events.labels(protocol, agent)
        self.first_event = metrics.time_to_first_event.labels(protocol, agent)


class _CallSeries:
    """The labelled series of one provider and agent's model calls (the rarer ones looked up when used)."""

    __slots__ = ("agent", "done", "input", "metrics", "output", "provider", "ttft")

    def __init__(self, metrics: Metrics, provider: str, agent: str) -> None:
        self.metrics, self.provider, self.agent = metrics, provider, agent
        self.ttft = metrics.upstream_ttft.labels(provider, agent)
        self.input = metrics.tokens.labels(provider, agent, "input")
        self.output = metrics.tokens.labels(provider, agent, "output")
        self.done = metrics.upstream_duration.labels(provider, agent, "")  # the duration of a call that succeeded


@dataclass(slots=True)
class StreamMeter:
    """Records one SSE stream: opened, then its event count and first-event latency once, at its end."""

    series: _StreamSeries
    started: float

    def opened(self) -> None:
        """The stream's response has started."""
        self.series.active.inc()

    def closed(self, events: int, first_event_at: float | None) -> None:
        """The stream ended after ``events`` events; the first was sent at ``first_event_at`` (perf_counter)."""
        series = self.series
        series.active.dec()
        series.events.observe(events)
        if first_event_at is not None:
            series.first_event.observe(first_event_at - self.started)


@dataclass(slots=True)
class ModelCallMeter:
    """Records one model call once it is over: time to its first event, duration, outcome, token usage."""

    series: _CallSeries
    started: float

    def ended(
        self, first_event_at: float | None, usage: Usage | None = None, error: BaseException | None = None
    ) -> None:
        """The call is over: its first event came at ``first_event_at`` (perf_counter; None: none came).

        ``error`` is why it stopped early: a ``ProviderError`` counts as an upstream error of its kind,
        a cancellation (the client left, the server is stopping) only as a ``cancelled`` duration.
        """
        series = self.series
        metrics = series.metrics
        labels = (series.provider, series.agent)
        if first_event_at is not None:
            series.ttft.observe(first_event_at - self.started)
        if usage is not None:
            series.input.inc(max(usage.input_tokens, 0))
            series.output.inc(max(usage.output_tokens, 0))
            if usage.reasoning_tokens:
                metrics.tokens.labels(*labels, "reasoning").inc(usage.reasoning_tokens)
            if usage.cached_input_tokens:
                metrics.tokens.labels(*labels, "cached_input").inc(usage.cached_input_tokens)
        elif error is None:
            metrics.unreported_usage.labels(*labels).inc()
        if error is None:
            series.done.observe(time.perf_counter() - self.started)
            return
        if isinstance(error, Exception):
            kind = error_kind(error)
            metrics.upstream_errors.labels(*labels, kind).inc()
        else:
            kind = "cancelled"
        metrics.upstream_duration.labels(*labels, kind).observe(time.perf_counter() - self.started)


def metrics_endpoint(metrics: Metrics) -> Callable[[Request], Awaitable[Response]]:
    """``GET /metrics`` of ``metrics``: open when no keys are configured (all callers are admin), else admin keys."""

    async def render(request: Request) -> Response:
        if not caller_of(request).admin:
            raise RequestError(403, "forbidden", "only admin keys may read /metrics")
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    return render
