"""Streaming from an upstream model API over the shared httpx client, written once for every provider.

``Upstream.stream(body, decode)`` sends one JSON request and relays the events ``decode`` makes of the
response body. Around that it owns every fault:

- **Retries.** A refused or failed connection, and a 429, 503 or 529 answer, are retried with
  exponential backoff (honouring a ``Retry-After`` of up to ``MAX_RETRY_AFTER`` seconds) up to
  ``retries`` times. An answer whose ``Retry-After`` asks for longer than that is not retried: the
  run ends at once with the rate-limit message instead of holding the client. Retrying happens only
  while sending, before any event was yielded, so a client never sees a token twice.
- **Timeouts.** ``connect`` bounds opening the connection (httpx). ``first_token`` bounds the wait
  from sending the request to the first event, headers and silent prefill included; ``idle`` bounds
  each read after that. Those two are a watchdog rather than a timeout per read: a read costs one
  clock reading, and the watchdog's timer fires at most once per idle period. When a deadline passes
  while the stream waits for the upstream, the watchdog cancels that wait and it becomes a
  ``ProviderError``; time spent waiting for *our* client (backpressure) never counts.
- **Errors.** Every failure becomes ``ProviderError(detail, public_message=...)``: the detail names the
  upstream, status and an excerpt of its answer for the log; the public message is short and says
  nothing about the deployment. The configured secrets (the ``api_key`` and header values of 8 or
  more characters) are replaced by ``[redacted]`` in every detail, since an upstream's error body
  may quote the key it refused.
- **The request.** A JSON POST with ``content-type: application/json`` (Anthropic's API requires it) and
  ``user-agent: chatgate/<version>``, then the kind's headers and the provider table's own. The URL is
  parsed and the headers merged once, when the provider is built; each call builds its
  ``httpx.Request`` from them itself rather than through ``client.build_request``, which merges URL,
  headers and cookies again every time (about 40 µs a request, docs/performance.md). The client's own
  default headers (``accept-encoding`` among them) are therefore not sent: the answer comes
  uncompressed, which is what a stream of small events wants anyway.
- **Closing.** The response is closed in a ``finally``: when the client hangs up, the cancellation or
  ``aclose()`` that reaches this generator closes the upstream connection at once.

The client it sends on is ``upstream_client()`` (client.py), the deadlines are kept by ``Watchdog``
(watchdog.py), and ``decode`` reads the body with ``sse_messages`` or ``ndjson_objects`` (bodies.py).
"""

from __future__ import annotations

import asyncio
import email.utils
import importlib.metadata
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from chatgate.config import ProviderConfig
from chatgate.errors import ProviderError, ProviderErrorKind
from chatgate.events import RunEvent
from chatgate.providers.base import ModelRequest
from chatgate.providers.bodies import INTERRUPTED
from chatgate.providers.refusals import context_full, is_length_refusal
from chatgate.providers.watchdog import Watchdog
from chatgate.strict_json import dump_json

__all__ = ["INTERRUPTED", "Decoder", "HTTPProvider", "Upstream"]

logger = logging.getLogger("chatgate.providers")

RETRYABLE_STATUS = frozenset({429, 503, 529})  # 529: Anthropic's "overloaded"
MAX_RETRY_AFTER = 20.0
DRAIN_SECONDS = 1.0
_EXCERPT = 500
_MIN_SECRET = 8  # shorter header values (versions, content types) are not secrets worth garbling text for
REDACTED = "[redacted]"
REQUEST_HEADERS: Mapping[str, str] = {
    "content-type": "application/json",
    "user-agent": f"chatgate/{importlib.metadata.version('chatgate')}",
}
"""What every upstream request carries before the provider kind's headers and the table's own."""

Decoder = Callable[[AsyncIterator[bytes]], AsyncIterator[RunEvent]]
"""Turns the upstream's raw body chunks into run events (one provider's wire format)."""


class HTTPProvider:
    """What every upstream API's provider shares: ``stream`` sends ``request_body`` and relays ``decode``.

    Subclasses set ``name`` and ``upstream`` and implement the two methods for their wire format.
    """

    name: str
    upstream: Upstream

    def stream(self, request: ModelRequest) -> AsyncIterator[RunEvent]:
        """Stream one model call's events."""
        return self.upstream.stream(self.request_body(request), self.decode)

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent upstream for ``request``."""
        raise NotImplementedError

    def decode(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[RunEvent]:
        """The run events in the upstream's streamed body."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Nothing to release: the HTTP client is shared and closed by the server."""


@dataclass(frozen=True, slots=True)
class Upstream:
    """One upstream endpoint: where to POST, with which headers, timeouts and retries."""

    client: httpx.AsyncClient
    name: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    connect_timeout: float = 10.0
    first_token_timeout: float = 300.0
    idle_timeout: float = 30.0
    retries: int = 2
    backoff: float = 0.5
    secrets: tuple[str, ...] = ()
    _url: httpx.URL = field(init=False, repr=False)
    _headers: httpx.Headers = field(init=False, repr=False)
    _timeout: dict[str, float | None] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # What every request repeats, parsed and merged once (see "The request" above).
        object.__setattr__(self, "_url", httpx.URL(self.url))
        headers = httpx.Headers(REQUEST_HEADERS)
        headers.update(self.headers)  # case-insensitive: a table's "User-Agent" replaces ours
        object.__setattr__(self, "_headers", headers)
        object.__setattr__(self, "_timeout", httpx.Timeout(self.connect_timeout, read=None).as_dict())

    @classmethod
    def from_config(
        cls, client: httpx.AsyncClient, name: str, config: ProviderConfig, *, url: str, headers: Mapping[str, str]
    ) -> Upstream:
        """The endpoint ``url`` of provider ``name``: the kind's ``headers`` under the table's own."""
        merged = httpx.Headers(headers)
        merged.update(config.headers)
        timeouts = config.timeouts
        secrets = {value for value in (config.api_key or "", *config.headers.values()) if len(value) >= _MIN_SECRET}
        return cls(
            client,
            name,
            url,
            merged,
            connect_timeout=timeouts.connect,
            first_token_timeout=timeouts.first_token,
            idle_timeout=timeouts.idle,
            retries=config.retries,
            secrets=tuple(sorted(secrets, key=len, reverse=True)),  # a secret inside another goes second
        )

    def redact(self, text: str) -> str:
        """``text`` with every configured secret replaced by ``[redacted]``."""
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    async def stream(self, body: Mapping[str, Any], decode: Decoder) -> AsyncIterator[RunEvent]:
        """POST ``body`` and yield what ``decode`` makes of the streamed answer. See the module docstring."""
        watchdog = Watchdog(self)
        try:
            response = await self._open(dump_json(body), watchdog)
            try:
                reads = watchdog.reads(response)
                events = decode(reads)
                try:
                    first = await anext(events)
                except StopAsyncIteration:
                    raise ProviderError(
                        f"{self.name}: the stream ended before any event",
                        public_message=INTERRUPTED,
                        kind="interrupted",
                    ) from None
                watchdog.started()
                yield first
                async for event in events:
                    yield event
                await _drain(reads)
            finally:
                await response.aclose()
        except httpx.HTTPError as exc:
            detail = self.redact(f"{self.name}: the stream broke: {exc!r}")
            raise ProviderError(detail, public_message=INTERRUPTED, kind="interrupted") from exc
        except ProviderError as exc:  # also the decoder's, e.g. an error event quoting the key
            detail = self.redact(str(exc))
            if detail == str(exc):
                raise
            raise ProviderError(
                detail, public_message=exc.public_message, retryable=exc.retryable, code=exc.code, kind=exc.kind
            ) from None
        finally:
            watchdog.close()

    async def _open(self, content: bytes, watchdog: Watchdog) -> httpx.Response:
        """Send the request until it gets a 2xx answer, retrying what is worth retrying."""
        attempt = 0
        while True:
            watchdog.begin_attempt()
            request = httpx.Request(
                "POST", self._url, content=content, headers=self._headers, extensions={"timeout": self._timeout}
            )
            try:
                outcome, delay = await watchdog.guard(self._send(request))
            finally:
                watchdog.pause()
            if isinstance(outcome, httpx.Response):
                return outcome
            if not outcome.retryable or attempt >= self.retries:
                raise outcome
            if delay > MAX_RETRY_AFTER:
                detail = (
                    f"{outcome}; it asks to be retried after {delay:g}s, longer than we wait ({MAX_RETRY_AFTER:g}s)"
                )
                raise ProviderError(detail, public_message=outcome.public_message, kind=outcome.kind)
            delay = max(delay, self.backoff * 2**attempt)
            logger.warning("%s; retrying in %.1fs", outcome, delay)  # the detail already names the provider
            attempt += 1
            await asyncio.sleep(delay)

    async def _send(self, request: httpx.Request) -> tuple[httpx.Response | ProviderError, float]:
        """The response if it is 2xx; otherwise the error it amounts to and the delay it asks for."""
        try:
            response = await self.client.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            error = ProviderError(
                self.redact(f"{self.name}: cannot connect to {self.url}: {exc!r}"),
                public_message="The model provider could not be reached.",
                retryable=True,
                kind="connect",
            )
            return error, 0.0
        except httpx.RemoteProtocolError as exc:  # e.g. a pooled keep-alive connection closed under us
            detail = self.redact(f"{self.name}: no response: {exc!r}")
            error = ProviderError(detail, public_message=INTERRUPTED, retryable=True, kind="interrupted")
            return error, 0.0
        except httpx.HTTPError as exc:
            detail = self.redact(f"{self.name}: request failed: {exc!r}")
            return ProviderError(detail, public_message=INTERRUPTED, kind="interrupted"), 0.0
        if response.status_code < 300:
            return response, 0.0
        longest = len(self.secrets[0]) if self.secrets else 0
        try:
            # Redact before cutting, so a secret straddling the cut cannot leave half of itself behind.
            text = (await response.aread())[: _EXCERPT + longest].decode("utf-8", "replace")
            excerpt = self.redact(text)[:_EXCERPT]
        except httpx.HTTPError:
            excerpt = "(unreadable body)"
        finally:
            await response.aclose()
        return _status_error(self.name, response, excerpt, self.redact), _retry_after(response)


async def _drain(reads: AsyncIterator[bytes]) -> None:
    """Read what follows the end of the answer (usually just the chunked body's terminator).

    A fully read response returns its connection to the pool for the next call; one that does not
    end promptly is simply closed.
    """
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            async for _ in reads:
                pass
    except (TimeoutError, ProviderError, httpx.HTTPError):
        pass


def _status_error(name: str, response: httpx.Response, excerpt: str, redact: Callable[[str], str]) -> ProviderError:
    status = response.status_code
    detail = f"{name}: HTTP {status} from {redact(str(response.request.url))}: {excerpt}"
    if status not in RETRYABLE_STATUS and is_length_refusal(excerpt):
        return context_full(detail)
    kind: ProviderErrorKind
    if status == 429:
        public, kind = "The model provider is rate limiting requests; try again later.", "rate_limited"
    elif status in (503, 529):
        public, kind = "The model provider is overloaded; try again later.", "overloaded"
    elif status >= 500:
        public, kind = "The model provider failed.", "upstream_5xx"
    elif status == 408:  # the upstream's own request timeout: the request was fine
        public, kind = "The model provider timed out.", "timeout"
    else:
        public, kind = "The model provider rejected the request.", "rejected"
    return ProviderError(detail, public_message=public, retryable=status in RETRYABLE_STATUS, kind=kind)


def _retry_after(response: httpx.Response) -> float:
    """How long the upstream's ``Retry-After`` asks us to wait, in seconds (0 when it names no time)."""
    value = response.headers.get("retry-after", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)  # the HTTP-date form
        except (TypeError, ValueError):
            return 0.0
        if when.tzinfo is None:
            return 0.0
        seconds = (when - datetime.now(UTC)).total_seconds()
    return seconds if seconds > 0 else 0.0  # NaN is 0; infinity is "longer than we wait"
