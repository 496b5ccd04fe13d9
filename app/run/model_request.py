"""The model request of a run: the history after the system-prompt policy, the prompt, instructions and tools.

The leak guard (app/leak_guard/) is started on it here, once per run: every model event passes it first.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from chatgate.history import ActivityMessage, SystemMessage
from chatgate.leak_guard import LeakGuard, start_guard
from chatgate.providers import ModelRequest
from chatgate.run.agents import Agent
from chatgate.run.endings import RunError
from chatgate.run.policy import apply_system_prompt_policy
from chatgate.run.prompts import PromptRenderError, RequestFacts
from chatgate.run.tools import LiveTools
from chatgate.run_input import RunInput, ToolDefinition
from chatgate.telemetry import Metrics

if TYPE_CHECKING:
    from chatgate.tracing import RunTrace

__all__ = ["build_model_request", "guarded_request"]

logger = logging.getLogger("chatgate.runner")


async def guarded_request(
    agent: Agent, run_input: RunInput, metrics: Metrics | None, trace: RunTrace | None
) -> tuple[ModelRequest, LeakGuard | None]:
    """The run's model request, its prompt rendered, and the leak guard its model events pass (or None).

    Server tools from a source still connecting are waited for, never left out.
    """
    if isinstance(agent.server_tools, LiveTools):
        await agent.server_tools.ready()
    system_prompt = await _render_prompt(agent, run_input)
    request, stripped = _model_request(agent, run_input, system_prompt)
    settings = agent.config.leak_guard
    request, guard = start_guard(
        request,
        mode=agent.config.leak_guard_mode,
        min_words=settings.min_words,
        canary=settings.canary,
        markup=settings.markup,
        agent=agent.name,
        run_id=run_input.run_id,
        metrics=metrics,
    )
    if metrics is not None:
        metrics.count_stripped(agent.name, stripped)
    if trace is not None:
        trace.started(run_input, request, stripped)
    return request, guard


def build_model_request(agent: Agent, run_input: RunInput, *, system_prompt: str | None = None) -> ModelRequest:
    """What the model receives for ``run_input``: the history after the agent's system-prompt policy.

    ``system_prompt`` is this request's rendered prompt; without it a static prompt is used as is.
    Instructions go right after the leading system messages: they reach the model, never the history.
    """
    return _model_request(agent, run_input, system_prompt)[0]


def _model_request(agent: Agent, run_input: RunInput, system_prompt: str | None) -> tuple[ModelRequest, int]:
    """The model request, and how many client system messages the policy removed."""
    config = agent.config
    if system_prompt is None and agent.prompt is not None and agent.prompt.is_static:
        system_prompt = agent.prompt.template
    result = apply_system_prompt_policy(
        # A frontend's activity messages are its own UI state: kept in the thread, never the model's.
        tuple(message for message in run_input.messages if not isinstance(message, ActivityMessage)),
        policy=config.manage_system_prompt,
        system_prompt=system_prompt,
        fallback=config.system_prompt_fallback,
        agent_name=agent.name,
    )
    messages = result.messages
    instructions = _instructions(agent, run_input)
    if instructions:
        head = next((i for i, m in enumerate(messages) if not isinstance(m, SystemMessage)), len(messages))
        messages = (*messages[:head], SystemMessage(instructions, id="instructions"), *messages[head:])
    request = ModelRequest(
        model=config.model_name,
        messages=messages,
        tools=_offered_tools(agent, run_input),
        settings=config.model_settings,
    )
    return request, result.stripped


def _instructions(agent: Agent, run_input: RunInput) -> str:
    parts = [agent.config.instructions or ""]
    requested = run_input.variables.get("instructions")
    if agent.config.allow_request_instructions and isinstance(requested, str):
        parts.append(requested)
    return "\n\n".join(part for part in parts if part)


async def _render_prompt(agent: Agent, run_input: RunInput) -> str | None:
    prompt = agent.prompt
    if prompt is None or prompt.is_static:
        return None
    facts = RequestFacts(agent=agent.name, thread_id=run_input.thread_id, config=agent.config.model_dump(mode="json"))
    try:
        return await prompt.render(facts, client_values=run_input.variables)
    except PromptRenderError as exc:
        logger.error("agent %r run %r: %s", agent.name, run_input.run_id, exc)
        raise RunError("The system prompt could not be prepared.") from exc


def _offered_tools(agent: Agent, run_input: RunInput) -> tuple[ToolDefinition, ...]:
    """Server tools, then the agent's declared client tools, then the client's; a name is offered once."""
    offered: dict[str, ToolDefinition] = {name: tool.definition for name, tool in agent.server_tools.items()}
    for tool in (*agent.client_tools, *run_input.tools):
        offered.setdefault(tool.name, tool)
    return tuple(offered.values())
