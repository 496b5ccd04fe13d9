"""``UploadSlots``: the uploads one process receives at once, per key and in all, freed when each ends."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from chatgate.config import FilesSettings
from chatgate.errors import RequestError
from chatgate.web.upload_slots import UploadSlots

SETTINGS = FilesSettings(max_uploads_in_flight=3, max_uploads_in_flight_per_key=2)


def refusal(slots: UploadSlots, key: str | None) -> tuple[int, str, str]:
    with pytest.raises(RequestError) as caught, slots.hold(key, SETTINGS):
        pass
    return caught.value.status, caught.value.code, caught.value.headers["retry-after"]


def test_a_key_gets_its_share_and_the_process_its_bound() -> None:
    slots = UploadSlots()
    with ExitStack() as held:
        held.enter_context(slots.hold("alice", SETTINGS))
        held.enter_context(slots.hold("alice", SETTINGS))
        assert refusal(slots, "alice") == (429, "too_many_uploads", "1")
        held.enter_context(slots.hold("bob", SETTINGS))
        assert refusal(slots, "carol") == (503, "uploads_busy", "1")
    with slots.hold("alice", SETTINGS), slots.hold("alice", SETTINGS):  # all freed, a failed one too
        pass


def test_without_keys_only_the_process_bound_applies() -> None:
    slots = UploadSlots()
    with ExitStack() as held:
        for _ in range(3):
            held.enter_context(slots.hold(None, SETTINGS))
        assert refusal(slots, None) == (503, "uploads_busy", "1")
