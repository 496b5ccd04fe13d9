"""chatgate: chat frontends to any LLM, with the operator in charge of the system prompt.

The ``app`` package is the protocol-neutral core. UI protocols live in ``adapters/`` and are found
through the ``chatgate.protocols`` entry-point group, so nothing here imports them.
"""
