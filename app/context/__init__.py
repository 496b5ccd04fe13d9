"""The context budget: which stored messages the model sees this turn, in roles it accepts.

It sits where the model request is built from the thread (after the system-prompt policy and the
prompt) and never deletes from the store: what the UI shows and what the model sees are two views of
one thread. ``roles`` keeps user and assistant turns alternating for strict chat templates.
"""

from chatgate.context.roles import HISTORY_START, alternate_roles

__all__ = ["HISTORY_START", "alternate_roles"]
