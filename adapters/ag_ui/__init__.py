"""AG-UI 1.0: ``RunAgentInput`` decoded into a ``RunInput``, run events encoded as AG-UI events.

``wire.py`` (the wire models), ``snapshot.py`` (a stored history as a ``MESSAGES_SNAPSHOT``) and the
adapter itself. ``protocol`` is registered under the ``chatgate.protocols`` entry-point group.
"""

from chatgate.adapters.ag_ui.encode import AgUiProtocol, protocol

__all__ = ["AgUiProtocol", "protocol"]
