"""One run: the system-prompt policy, the model call, and exactly one terminal event."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from app.agents import Agent
from app.errors import ProviderError
from app.events import ModelFinished, RunEvent, RunFailed, RunFinished, StepFinished, StepStarted
from app.policy import apply_system_prompt_policy
from app.providers import ModelRequest
from app.run_input import RunInput

__all__ = ["build_model_request", "run_agent"]

logger = logging.getLogger("chatgate.runner")


def build_model_request(agent: Agent, run_input: RunInput) -> ModelRequest:
    """What the model receives for ``run_input``: the history after the agent's system-prompt policy."""
    config = agent.config
    result = apply_system_prompt_policy(
        run_input.messages,
        policy=config.manage_system_prompt,
        system_prompt=config.system_prompt,
        fallback=config.system_prompt_fallback,
        agent_name=agent.name,
    )
    return ModelRequest(
        model=config.model_name,
        messages=result.messages,
        tools=run_input.tools,
        settings=config.model_settings,
    )


async def run_agent(agent: Agent, run_input: RunInput) -> AsyncIterator[RunEvent]:
    """Run ``agent`` on ``run_input``; the last event is always ``RunFinished`` or ``RunFailed``.

    Failures are logged here with their detail and reach the client only as a short message.
    """
    step = "model-call-1"
    try:
        request = build_model_request(agent, run_input)
        yield StepStarted(step)
        reason: RunFinished | None = None
        async for event in agent.provider.stream(request):
            if type(event) is ModelFinished:
                reason = RunFinished(event.reason)
                continue
            yield event
    except ProviderError as exc:
        logger.error("agent %r run %r: model call failed: %s", agent.name, run_input.run_id, exc)
        yield RunFailed(exc.public_message, code="model_error")
        return
    except Exception:
        logger.exception("agent %r run %r: unexpected failure", agent.name, run_input.run_id)
        yield RunFailed("An internal error occurred.", code="internal_error")
        return
    if reason is None:
        logger.error("agent %r run %r: the model stream ended without finishing", agent.name, run_input.run_id)
        yield RunFailed("The model stream ended early.", code="model_error")
        return
    yield StepFinished(step, reason.reason)
    yield reason
