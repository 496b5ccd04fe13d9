"""Media types as RFC 9110 (section 8.3.1) spells them: ``type/subtype``, tokens, then optional parameters.

An upload's media type comes from a client (a multipart part's ``content-type`` or the body's) and goes
back out as a download's header and into a ``data:`` URL, so only the grammar's exact form is taken:
no control characters, no commas (a list is no media type), no stray characters. ``media_type_essence``
gives the lower-cased ``type/subtype`` a valid value names (its parameters checked, then dropped), or
None.
"""

from __future__ import annotations

import re

__all__ = ["media_type_essence"]

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = r'"(?:[\t !#-\[\]-~\x80-\xff]|\\[\t -~\x80-\xff])*"'
_PARAMETER = rf"[ \t]*;[ \t]*(?:{_TOKEN}=(?:{_TOKEN}|{_QUOTED}))?"
_MEDIA_TYPE = re.compile(rf"[ \t]*({_TOKEN})/({_TOKEN})(?:{_PARAMETER})*[ \t]*")


def media_type_essence(value: str) -> str | None:
    """``type/subtype`` in lower case when ``value`` is a media type by RFC 9110, else None."""
    found = _MEDIA_TYPE.fullmatch(value)
    if found is None:
        return None
    return f"{found.group(1)}/{found.group(2)}".lower()
