"""One run: configured agents, their prompt, policy and tools, and the model steps that answer a turn.

``agents.py`` (agents bound to providers, tools and prompt), ``runner.py`` (prompt, policy, model steps
with server tools, exactly one terminal event), ``prompts.py`` (system-prompt templates), ``policy.py``
(``manage_system_prompt``), ``tools.py`` (server tools), ``assembly.py`` (a model call's events folded back
into an assistant message) and ``operator_code.py`` (where operator code imports from).
"""

__all__: list[str] = []
