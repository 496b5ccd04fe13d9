"""Who is calling: the API key a request was made with, or a signed-in person; decided once by access.

Everything that depends on the caller (which agents it may use, which threads it owns, admin routes,
metrics labels) reads the ``Caller`` that ``caller_of`` returns, never the headers. With no ``[[keys]]``
configured every request is ``LOCAL``: the single-user, loopback setup, which may do everything.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import HTTPConnection

__all__ = ["CALLER_SCOPE_KEY", "LOCAL", "Caller", "caller_of"]

CALLER_SCOPE_KEY = "chatgate.caller"


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated caller.

    ``key_id`` is the ``[[keys]]`` entry's id (None when no keys are configured); ``agents`` the agents it
    may use (None: every agent); ``user`` the end user a trusted backend named in ``x-chatgate-user``.
    ``person`` is set instead of ``key_id`` for a signed-in person (``[auth.jwt]``): ``"{iss}#{user claim}"``.
    """

    key_id: str | None
    admin: bool
    agents: frozenset[str] | None = None
    user: str | None = None
    person: str | None = None

    def may_use(self, agent: str) -> bool:
        """Whether this caller may talk to ``agent``."""
        return self.agents is None or agent in self.agents

    @property
    def owner(self) -> str:
        """The owner recorded on the threads this caller creates: key id, plus the end user if named.

        A person's is ``person:{iss}#{user}``: never a key's (key ids have no ``:``), nor another issuer's.
        """
        if self.person is not None:
            return f"person:{self.person}"
        owner = self.key_id or ""
        return f"{owner}/{self.user}" if self.user else owner

    @property
    def limits_id(self) -> str | None:
        """Whose ``rpm`` and stream slots this caller's requests count against: its key, or its person."""
        return self.owner if self.person is not None else self.key_id


LOCAL = Caller(key_id=None, admin=True)
"""Every request when no keys are configured."""


def caller_of(connection: HTTPConnection) -> Caller:
    """The caller the access layer decided for this request (``LOCAL`` when it set none)."""
    caller = connection.scope.get(CALLER_SCOPE_KEY)
    return caller if isinstance(caller, Caller) else LOCAL
