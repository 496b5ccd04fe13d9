"""One run: configured agents, their prompt, policy and tools, and the model steps that answer a turn.

``agents.py`` (agents bound to providers, tools and prompt), ``runner.py`` (prompt, policy, model steps
with server tools, exactly one terminal event), ``prompts.py`` (system-prompt templates), ``policy.py``
(``manage_system_prompt``), ``tools.py`` (server tools) and ``assembly.py`` (a model call's events folded
back into an assistant message).
"""

from chatgate.run.agents import Agent, AgentRegistry, prompt_template
from chatgate.run.assembly import MessageAssembler
from chatgate.run.prompts import PromptTemplate
from chatgate.run.runner import run_agent, tool_message
from chatgate.run.tools import LiveTools, Tool, ToolOutcome, ToolSource, ToolsUnavailable

__all__ = [
    "Agent",
    "AgentRegistry",
    "LiveTools",
    "MessageAssembler",
    "PromptTemplate",
    "Tool",
    "ToolOutcome",
    "ToolSource",
    "ToolsUnavailable",
    "prompt_template",
    "run_agent",
    "tool_message",
]
