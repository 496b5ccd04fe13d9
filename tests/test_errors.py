"""One exception tree: every exception class chatgate defines is a ChatgateError; HTTP is mapped at the edge."""

import importlib
import inspect
import pkgutil

import chatgate
from chatgate.errors import ChatgateError, RequestError
from chatgate.store import ThreadBusy, ThreadError, UnknownThread


def _chatgate_modules() -> list[str]:
    return [info.name for info in pkgutil.walk_packages(chatgate.__path__, "chatgate.")]


def test_every_exception_chatgate_defines_is_a_chatgate_error() -> None:
    defined = {}
    for name in _chatgate_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == name:
                defined[f"{name}.{value.__name__}"] = value
    assert len(defined) >= 13  # the tree drawn in app/errors.py
    assert {path for path, cls in defined.items() if not issubclass(cls, ChatgateError)} == set()


def test_the_store_raises_domain_errors_not_http_ones() -> None:
    for cls in (ThreadBusy, UnknownThread):
        assert issubclass(cls, ThreadError)
        assert not issubclass(cls, RequestError)
    assert not hasattr(ThreadBusy(), "status")
