"""What an agent can do, in protocol-neutral words: the facts a protocol's capabilities document is made of.

``AgentFacts`` is built from the config by the HTTP edge (app/web/capabilities.py) and rendered by a
protocol that can describe an agent (AG-UI's ``AgentCapabilities``, ``GET .../ag-ui/capabilities``).
See docs/protocols.md.
"""

from __future__ import annotations

from chatgate.capabilities.facts import AgentFacts, InputKind

__all__ = ["AgentFacts", "InputKind"]
