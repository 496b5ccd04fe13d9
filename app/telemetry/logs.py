"""Log lines: the request id on every line of a request, and the text or JSON format of ``[server] log_format``.

The request id lives in a context variable set for the duration of one request (see app/telemetry/observe.py);
``RequestIdFilter``, installed on the handlers, copies it onto every record as ``request_id`` (``-``
outside a request), uvicorn's own lines included. ``logging_config`` is the ``dictConfig`` that
``chatgate serve`` hands uvicorn, so chatgate's and uvicorn's lines share one handler and one format.

Log lines name agents, runs, tools and counts; prompt and message text never appear at info level.
``RedactFilter``, on the same handlers, keeps what a request carries from reaching a line raw:
credentials in a logged URL (query parameters such as ``key`` or ``access_token``, and userinfo) become
``[redacted]``, and control characters (a NUL, an escape, a line break a client put in a path) are
written escaped.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.parse
import uuid
from contextvars import ContextVar
from typing import Any, Literal, TypeAlias

__all__ = [
    "REQUEST_ID",
    "REQUEST_TRACE",
    "JsonFormatter",
    "LogFormat",
    "RedactFilter",
    "RequestIdFilter",
    "RequestTrace",
    "loggable",
    "logging_config",
    "new_request_id",
    "redact_url",
    "valid_request_id",
]

LogFormat: TypeAlias = Literal["text", "json"]

REQUEST_ID: ContextVar[str] = ContextVar("chatgate_request_id", default="-")
"""The id of the request being handled, ``-`` outside one."""


class RequestTrace:
    """The trace id of the request being handled, once its span has started (``""`` until then)."""

    __slots__ = ("trace_id",)

    def __init__(self) -> None:
        self.trace_id = ""


REQUEST_TRACE: ContextVar[RequestTrace | None] = ContextVar("chatgate_request_trace", default=None)
"""Set per request (app/telemetry/observe.py); the chat endpoint fills in the trace id when tracing is on."""

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s%(trace)s]: %(message)s"
_WELL_FORMED = re.compile(r"[A-Za-z0-9._-]{1,128}")


def valid_request_id(value: str | None) -> bool:
    """Whether a client's ``x-request-id`` is kept: 1 to 128 of ``A-Z a-z 0-9 . _ -``."""
    return value is not None and _WELL_FORMED.fullmatch(value) is not None


def new_request_id() -> str:
    """A fresh request id: 32 hex digits."""
    return uuid.uuid4().hex


class RequestIdFilter(logging.Filter):
    """Puts the current request id on every record as ``record.request_id``; never drops a record.

    With tracing on, a chat request's lines also get its trace id: ``record.trace_id``, and ``record.trace``
    (`` trace=<id>`` for the text format, ``""`` otherwise).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Add ``request_id`` and the trace id (a record that already has them keeps them)."""
        if not hasattr(record, "request_id"):
            record.request_id = REQUEST_ID.get()
        if not hasattr(record, "trace"):
            request_trace = REQUEST_TRACE.get()
            trace_id = request_trace.trace_id if request_trace is not None else ""
            record.trace_id = trace_id
            record.trace = f" trace={trace_id}" if trace_id else ""
        return True


CREDENTIAL_PARAMS = frozenset(
    {"key", "api_key", "apikey", "api-key", "token", "access_token", "refresh_token", "id_token", "auth"}
    | {"authorization", "password", "secret", "client_secret", "signature", "sig", "session"}
)
"""Query parameters whose value a logged URL never shows (compared lowercased)."""

REDACTED = "[redacted]"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#@]*@")


def loggable(text: str) -> str:
    """``text`` with every control character but newline and tab written as an escape (``\\x00``)."""
    if text.isprintable():
        return text
    return _CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


def redact_url(target: str) -> str:
    """A URL or request target with credentials replaced by ``[redacted]`` and control characters escaped."""
    target = _USERINFO.sub(rf"\1{REDACTED}@", target)
    path, mark, query = target.partition("?")
    if mark:
        fields = []
        for field in query.split("&"):
            name, equals, _value = field.partition("=")
            if equals and urllib.parse.unquote_plus(name).strip().lower() in CREDENTIAL_PARAMS:
                field = f"{name}={REDACTED}"
            fields.append(field)
        target = f"{path}?{'&'.join(fields)}"
    return loggable(target).replace("\n", "\\n").replace("\t", "\\t")


class RedactFilter(logging.Filter):
    """Redacts credentials from uvicorn's access lines and escapes control characters in every line."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record in place; never drops one."""
        if record.name == "uvicorn.access" and isinstance(record.args, tuple) and len(record.args) == 5:
            client, method, path, version, status = record.args
            record.args = (client, loggable(str(method)), redact_url(str(path)), version, status)
            return True
        message = record.getMessage()
        if not message.isprintable():
            escaped = loggable(message)
            if escaped != message:
                record.msg, record.args = escaped, ()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id, and the traceback if any.

    uvicorn's access lines also get ``method``, ``path`` and ``status`` as fields.
    """

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON."""
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", REQUEST_ID.get()),
        }
        trace_id = getattr(record, "trace_id", "")
        if trace_id:
            entry["trace_id"] = trace_id
        if record.name == "uvicorn.access" and isinstance(record.args, tuple) and len(record.args) == 5:
            _client, method, path, _version, status = record.args
            entry.update(method=method, path=path, status=status)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def logging_config(log_format: LogFormat = "text", level: str = "INFO") -> dict[str, Any]:
    """The ``logging.config.dictConfig`` for ``chatgate serve``: one stderr handler for every logger.

    uvicorn's loggers lose their own handlers and propagate to it, so in ``json`` their lines are JSON too.
    """
    formatter: dict[str, Any] = {"()": f"{__name__}.JsonFormatter"} if log_format == "json" else {"format": TEXT_FORMAT}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_id": {"()": f"{__name__}.RequestIdFilter"},
            "redact": {"()": f"{__name__}.RedactFilter"},
        },
        "formatters": {"chatgate": formatter},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "chatgate",
                "filters": ["request_id", "redact"],
            }
        },
        "root": {"handlers": ["stderr"], "level": level.upper()},
        "loggers": {
            name: {"handlers": [], "propagate": True} for name in ("uvicorn", "uvicorn.error", "uvicorn.access")
        },
    }
