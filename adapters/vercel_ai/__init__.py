"""The AI SDK's useChat (v5 and v6): ``UIMessage`` requests decoded, run events encoded as UI message chunks.

``wire.py`` (the wire models), ``messages.py`` (a stored history as ``UIMessage``s) and the adapter itself.
``protocol`` is registered under the ``chatgate.protocols`` entry-point group.
"""

from chatgate.adapters.vercel_ai.encode import VercelAIProtocol, protocol

__all__ = ["VercelAIProtocol", "protocol"]
