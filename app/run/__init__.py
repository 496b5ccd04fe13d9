"""One run: configured agents, their prompt, policy and tools, and the model steps that answer a turn.

``agents.py`` (agents bound to providers, tools and prompt), ``runner.py`` (``run_agent``: the story of
a run, reading each model call's stream), ``model_request.py`` (prompt, policy, instructions, offered
tools; the run's leak guard), ``model_view.py`` (what each model call sees: context budget, summary,
retry on a shorter view), ``model_call.py`` (what is opened and ended once per model call),
``failover.py`` (fallback chains: a step moved to the next model before any event), ``health.py`` (the
breaker that skips a failing model), ``dispatch.py`` (tool calls between steps, approvals),
``endings.py`` (the one terminal event), ``prompts.py`` (system-prompt templates and their versions),
``variants.py`` (which of an agent's prompt variants answers), ``policy.py``
(``manage_system_prompt``), ``tools.py`` (server tools) and ``assembly.py`` (a model call's events
folded back into an assistant message).
"""

from chatgate.run.agents import Agent, AgentRegistry, prompt_template
from chatgate.run.assembly import MessageAssembler
from chatgate.run.health import ModelHealth, model_health
from chatgate.run.prompts import PromptTemplate
from chatgate.run.runner import run_agent, tool_message
from chatgate.run.tools import LiveTools, Tool, ToolOutcome, ToolSource, ToolsUnavailable
from chatgate.run.variants import VARIANT_HEADER, choose_variant

__all__ = [
    "VARIANT_HEADER",
    "Agent",
    "AgentRegistry",
    "LiveTools",
    "MessageAssembler",
    "ModelHealth",
    "PromptTemplate",
    "Tool",
    "ToolOutcome",
    "ToolSource",
    "ToolsUnavailable",
    "choose_variant",
    "model_health",
    "prompt_template",
    "run_agent",
    "tool_message",
]
