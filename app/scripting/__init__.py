"""The Python API for scripts and tests: ``chatgate.client(model, system=...)`` and the conversation it holds.

``client.py`` (the client, on the same providers the server uses) and ``conversation.py`` (a
conversation's system-message lifecycle: seed, swap, reset). Named ``scripting`` so that ``chatgate.client``
stays the function.
"""

__all__: list[str] = []
