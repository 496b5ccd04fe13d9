"""What each installed protocol declares it does beyond decoding and encoding (app/protocol.py)."""

from chatgate.adapters.ag_ui import protocol as ag_ui
from chatgate.adapters.vercel_ai import protocol as vercel_ai
from chatgate.config import AgentConfig
from chatgate.protocol import DescribesAgents, DescribesRequests, RendersMessages, UIProtocol, discover_protocols


def test_the_installed_protocols_are_the_two_adapters() -> None:
    assert [protocol.name for protocol in discover_protocols()] == ["ag-ui", "vercel-ai"]


def test_what_each_protocol_does_beyond_the_stream_is_declared() -> None:
    def declared(protocol: UIProtocol) -> list[str]:
        kinds = (DescribesRequests, DescribesAgents, RendersMessages)
        return [kind.__name__ for kind in kinds if isinstance(protocol, kind)]

    assert declared(ag_ui) == ["DescribesRequests", "DescribesAgents", "RendersMessages"]
    assert declared(vercel_ai) == ["DescribesRequests", "RendersMessages"]
    assert [p.name for p in (ag_ui, vercel_ai) if p.threads.serves_messages] == ["vercel-ai"]


def test_the_version_a_protocol_speaks_comes_from_the_protocol_not_its_name() -> None:
    agent = AgentConfig(model="builtin:echo", vercel_ai_version="v5")
    assert (ag_ui.version(agent), vercel_ai.version(agent)) == (None, "v5")
