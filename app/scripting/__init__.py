"""The Python API for scripts and tests: ``chatgate.client(model, system=...)`` and the conversation it holds.

``api.py`` (the client, on the same providers the server uses) and ``conversation.py`` (a
conversation's system-message lifecycle: seed, swap, reset). Named ``scripting`` so that ``chatgate.client``
stays the function.
"""

from chatgate.scripting.api import Client, client
from chatgate.scripting.conversation import KEEP, Conversation, Keep

__all__ = ["KEEP", "Client", "Conversation", "Keep", "client"]
