"""An agent's ``AgentFacts`` as AG-UI's ``AgentCapabilities`` (what ``HttpAgent.getCapabilities()`` reads).

Only what chatgate does is declared true; what it does not do is declared false where a client would
otherwise guess (websockets, state), and what the config cannot tell (whether an OpenAI-compatible
model reasons) is left out, which AG-UI reads as "not declared".
"""

from __future__ import annotations

from typing import Any

from chatgate.protocol import AgentFacts

__all__ = ["agent_capabilities"]


def agent_capabilities(facts: AgentFacts) -> dict[str, Any]:
    """``facts`` as an ``AgentCapabilities`` object (no ``null`` anywhere)."""
    identity: dict[str, Any] = {"name": facts.name, "type": "chatgate", "version": facts.version}
    if facts.description:
        identity["description"] = facts.description
    tools = [
        {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}
        for tool in facts.tools
    ]
    capabilities: dict[str, Any] = {
        "identity": identity,
        "transport": {
            "streaming": True,
            "websocket": False,
            "httpBinary": False,
            "pushNotifications": False,
            "resumable": facts.resumable,
        },
        "tools": {"supported": True, "items": tools, "clientProvided": facts.client_tools},
        "humanInTheLoop": {"supported": facts.approvals, "approvals": facts.approvals, "interrupts": facts.approvals},
        "multimodal": {
            "input": {kind: kind in facts.inputs for kind in ("image", "audio", "video", "pdf", "file")},
            "output": {"image": False, "audio": False},
        },
        "state": {"snapshots": False, "deltas": False, "memory": facts.memory, "persistentState": False},
        "execution": {"maxIterations": facts.max_steps},
    }
    if facts.reasoning is not None:
        capabilities["reasoning"] = {
            "supported": facts.reasoning,
            "streaming": facts.reasoning,
            "encrypted": facts.encrypted_reasoning,
        }
    return capabilities
