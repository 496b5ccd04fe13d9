"""The leak guard: the operator's system prompt never reaches a client (docs/system-prompt.md, "Leak guard").

``words.py`` normalizes words, ``matcher.py`` finds the guarded text in one stream as it arrives, and
``guard.py`` filters a run's model events with it, between the provider and everything downstream.
"""

from chatgate.leak_guard.guard import (
    PROMPT_LEAK_MESSAGE,
    LeakCounter,
    LeakGuard,
    LeakGuardMode,
    PromptLeak,
    start_guard,
)
from chatgate.leak_guard.matcher import REDACTED, StreamWatch, guarded_text
from chatgate.leak_guard.words import prepare_look_alikes

__all__ = [
    "PROMPT_LEAK_MESSAGE",
    "REDACTED",
    "LeakCounter",
    "LeakGuard",
    "LeakGuardMode",
    "PromptLeak",
    "StreamWatch",
    "guarded_text",
    "prepare_look_alikes",
    "start_guard",
]
