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

The body readers ``sse_messages`` and ``ndjson_objects`` turn raw chunks into messages, with frames
split across reads in any way.
"""

from __future__ import annotations

import asyncio
import email.utils
import http.cookiejar
import importlib.metadata
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
from httpx._utils import get_environment_proxies  # the environment's proxies, parsed as httpx itself does
from pydantic_core import from_json

from chatgate.config import ProviderConfig
from chatgate.context.refusals import context_full, is_length_refusal
from chatgate.errors import ProviderError
from chatgate.events import RunEvent
from chatgate.providers.base import ModelRequest
from chatgate.providers.pool import ShardedTransport
from chatgate.providers.transport import UpstreamTransport
from chatgate.strict_json import dump_json

__all__ = [
    "INTERRUPTED",
    "Decoder",
    "HTTPProvider",
    "Upstream",
    "malformed",
    "ndjson_objects",
    "parse_json",
    "sse_messages",
    "upstream_client",
]

logger = logging.getLogger("chatgate.providers")

INTERRUPTED = "The model stream was interrupted."
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


def upstream_client() -> httpx.AsyncClient:
    """The process's one HTTP client for every upstream model API.

    Requests go through chatgate's own HTTP/1.1 transport (app/providers/transport.py): connections are
    kept alive between calls (no new TLS handshake per request), there is no cap on concurrent streams,
    opening a stream costs the same however many are open, and timeouts are set per request by each
    provider. ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``/``NO_PROXY`` apply as in any httpx client
    (httpx ignores them once a transport is given, so they are mounted here): proxied origins go
    through httpx's own transport, sharded (app/providers/pool.py). It keeps no cookies: every user's
    requests share it, so a cookie one upstream answer set would go out with everyone's next request.
    """
    mounts: dict[str, httpx.AsyncBaseTransport | None] = {
        pattern: ShardedTransport(proxy=proxy) if proxy else None
        for pattern, proxy in get_environment_proxies().items()
    }
    return httpx.AsyncClient(
        timeout=httpx.Timeout(10.0, read=None),
        transport=UpstreamTransport(),
        mounts=mounts,
        cookies=http.cookiejar.CookieJar(policy=_NoCookies()),
    )


class _NoCookies(http.cookiejar.DefaultCookiePolicy):
    """A cookie policy that accepts no cookie, so the shared client's jar stays empty."""

    def set_ok(self, cookie: http.cookiejar.Cookie, request: Any) -> bool:
        """Refuse every cookie an upstream sets."""
        return False


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


def malformed(upstream: str, what: str) -> ProviderError:
    """The error for an upstream stream that breaks its own wire format."""
    return ProviderError(f"{upstream}: malformed stream: {what}", public_message=INTERRUPTED)


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
        watchdog = _Watchdog(self)
        try:
            response = await self._open(dump_json(body), watchdog)
            try:
                reads = watchdog.reads(response)
                events = decode(reads)
                try:
                    first = await anext(events)
                except StopAsyncIteration:
                    raise ProviderError(
                        f"{self.name}: the stream ended before any event", public_message=INTERRUPTED
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
            raise ProviderError(detail, public_message=INTERRUPTED) from exc
        except ProviderError as exc:  # also the decoder's, e.g. an error event quoting the key
            detail = self.redact(str(exc))
            if detail == str(exc):
                raise
            raise ProviderError(
                detail, public_message=exc.public_message, retryable=exc.retryable, code=exc.code
            ) from None
        finally:
            watchdog.close()

    async def _open(self, content: bytes, watchdog: _Watchdog) -> httpx.Response:
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
                raise ProviderError(detail, public_message=outcome.public_message)
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
            )
            return error, 0.0
        except httpx.RemoteProtocolError as exc:  # e.g. a pooled keep-alive connection closed under us
            detail = self.redact(f"{self.name}: no response: {exc!r}")
            error = ProviderError(detail, public_message=INTERRUPTED, retryable=True)
            return error, 0.0
        except httpx.HTTPError as exc:
            return ProviderError(self.redact(f"{self.name}: request failed: {exc!r}"), public_message=INTERRUPTED), 0.0
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
    if status == 429:
        public = "The model provider is rate limiting requests; try again later."
    elif status in (503, 529):
        public = "The model provider is overloaded; try again later."
    elif status >= 500:
        public = "The model provider failed."
    else:
        public = "The model provider rejected the request."
    return ProviderError(detail, public_message=public, retryable=status in RETRYABLE_STATUS)


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


class _Watchdog:
    """Cancels the streaming task when one wait for the upstream passes its deadline.

    ``reads`` sets the deadline before each read and clears ``_waiting`` after it; the timer checks
    lazily, so it re-arms only when it fires early. A cancellation is only ever delivered while the
    task waits on the upstream, so it always lands inside ``guard`` or ``reads``, which turn it back
    into a ``ProviderError`` (and ``uncancel`` the task) when it was ours.
    """

    __slots__ = ("_deadline", "_expired", "_handle", "_loop", "_streaming", "_task", "_upstream", "_waiting")

    def __init__(self, upstream: Upstream) -> None:
        self._upstream = upstream
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._handle: asyncio.TimerHandle | None = None
        self._deadline = 0.0
        self._waiting = False
        self._streaming = False
        self._expired = False

    def begin_attempt(self) -> None:
        """The first-token deadline starts now: sending, the response's headers and first event."""
        self._task = asyncio.current_task() or self._task
        self._set(self._loop.time() + self._upstream.first_token_timeout)

    def started(self) -> None:
        """The first event arrived: from now on each read gets ``idle`` seconds."""
        self._streaming = True

    def pause(self) -> None:
        """We are not waiting for the upstream (between attempts)."""
        self._waiting = False

    async def guard(self, waiting: Any) -> Any:
        """Await ``waiting`` (a wait on the upstream), turning our own cancellation into ProviderError."""
        try:
            return await waiting
        except asyncio.CancelledError:
            if self._expired:
                raise self._timeout() from None
            raise

    async def reads(self, response: httpx.Response) -> AsyncIterator[bytes]:
        """The response body's chunks, each read under the current deadline."""
        self._task = asyncio.current_task() or self._task
        # An uncompressed body is read straight from the transport's stream: httpx's own iterators
        # (decoding, re-chunking, byte counting) cost three generator hops per read and do nothing here.
        encoded = response.headers.get("content-encoding", "identity") != "identity"
        chunks = response.aiter_bytes() if encoded else aiter(response.stream)  # type: ignore[arg-type]
        loop = self._loop
        idle = self._upstream.idle_timeout
        while True:
            self._set(loop.time() + idle if self._streaming else self._deadline)
            try:
                chunk = await anext(chunks)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if self._expired:
                    raise self._timeout() from None
                raise
            finally:
                self._waiting = False
            yield chunk

    def close(self) -> None:
        """Stop the timer."""
        self._waiting = False
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _set(self, deadline: float) -> None:
        self._deadline = deadline
        self._waiting = True
        if self._handle is None or self._handle.when() > deadline:
            if self._handle is not None:
                self._handle.cancel()
            self._handle = self._loop.call_at(deadline, self._check)

    def _check(self) -> None:
        self._handle = None
        if not self._waiting:
            return  # the next read arms the timer again
        if self._loop.time() < self._deadline:
            self._handle = self._loop.call_at(self._deadline, self._check)
            return
        self._expired = True
        self._task.cancel()

    def _timeout(self) -> ProviderError:
        """The watchdog cancelled the task: take the cancellation back and say which deadline passed."""
        self._expired = False
        self._task.uncancel()
        which = "idle" if self._streaming else "first_token"
        limit = self._upstream.idle_timeout if self._streaming else self._upstream.first_token_timeout
        return ProviderError(
            f"{self._upstream.name}: no answer within the {which} timeout ({limit:g}s)",
            public_message="The model took too long to respond.",
        )


_LF = ord("\n")
_CR = ord("\r")  # ``13 in chunk`` is a memchr; ``b"\r" in chunk`` costs ~7x more per upstream read


async def sse_messages(chunks: AsyncIterator[bytes]) -> AsyncIterator[tuple[str, bytes]]:
    """``(event, data)`` for each server-sent event in ``chunks``; comments and ``id``/``retry`` ignored.

    Lines may end in LF, CRLF or CR and split anywhere across chunks. ``event`` is ``""`` when the
    message names none. A message not ended by a blank line when the stream stops is dropped, as the
    SSE spec says; the decoder notices the missing end of its own protocol.
    """
    buffer = b""
    event = ""
    data: list[bytes] = []
    async for chunk in chunks:
        if buffer:
            chunk = buffer + chunk
        elif not data and not event:
            whole = _whole_message(chunk)
            if whole is not None:
                yield whole
                continue
        if _CR in chunk:
            held = chunk.endswith(b"\r")  # maybe the first half of a CRLF
            if held:
                chunk = chunk[:-1]
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            lines = chunk.split(b"\n")
            buffer = lines.pop() + (b"\r" if held else b"")
        else:
            lines = chunk.split(b"\n")
            buffer = lines.pop()
        for line in lines:
            if not line:
                if data:
                    yield event, data[0] if len(data) == 1 else b"\n".join(data)
                    data = []
                event = ""
            elif line.startswith(b"data: "):  # the usual form: one slice, not two
                data.append(line[6:])
            elif line.startswith(b"data:"):
                data.append(line[5:])
            elif line.startswith(b"event:"):
                event = line[6:].strip().decode("utf-8", "replace")
            # anything else is a comment (":"), id:, retry: or an unknown field: all ignored
    if buffer == b"\r" and data:  # the stream's last byte ended the message's blank line
        yield event, b"\n".join(data)


def _whole_message(chunk: bytes) -> tuple[str, bytes] | None:
    """The message when ``chunk`` is exactly one: a ``data: `` line, maybe after an ``event: `` line, then a blank one.

    That is the usual read of a token stream (OpenAI-compatible servers send the first form, Anthropic
    the second), and taking it whole skips splitting it into lines: 0.55 µs a read instead of 1.2.
    """
    if not chunk.endswith(b"\n\n") or _CR in chunk:
        return None
    lines = chunk.count(_LF)
    if lines == 2 and chunk.startswith(b"data: "):
        return "", chunk[6:-2]
    if lines == 3 and chunk.startswith(b"event: "):
        end = chunk.index(b"\n")
        if chunk.startswith(b"data: ", end + 1):
            return chunk[6:end].strip().decode("utf-8", "replace"), chunk[end + 7 : -2]
    return None


async def ndjson_objects(chunks: AsyncIterator[bytes], upstream: str) -> AsyncIterator[Any]:
    """Each JSON value of a newline-delimited JSON body, with lines split anywhere across chunks."""
    buffer = b""
    async for chunk in chunks:
        lines = (buffer + chunk if buffer else chunk).split(b"\n")
        buffer = lines.pop()
        for line in lines:
            if line.strip():
                yield parse_json(line, upstream)
    if buffer.strip():
        yield parse_json(buffer, upstream)


def parse_json(data: bytes, upstream: str) -> Any:
    """``data`` parsed as JSON, or the malformed-stream error naming a bit of it."""
    try:
        return from_json(data)
    except ValueError:
        raise malformed(upstream, f"not JSON: {data[:200]!r}") from None
