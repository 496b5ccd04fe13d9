"""The one rule for the ids clients send (app/ids.py), and the text a column of its own can keep."""

import pytest

from chatgate.ids import MAX_ID_LENGTH, id_problem, text_problem, thread_id_problem

ACCEPTED = [
    "aB3dE5fG7hJ9kL1m",  # the AI SDK's generateId
    "0b5c3f0e-7d43-4f1a-9d4e-2f8c1e6a9b7d",  # crypto.randomUUID (AG-UI HttpAgent, CopilotKit)
    "apr_1764000000_Zm9vYmFy",  # chatgate's approval tokens
    "msg_3f9a:1",
    "\uff54\uff11",  # fullwidth: a different id, not a refused one
    "ünïcødé スレッド 🧵",
    "with space and %41 and ?#",
    "x" * MAX_ID_LENGTH,
]
REFUSED = ["", "x" * (MAX_ID_LENGTH + 1), "a\x00", "a\t", "a\n", "a\r", "a\x1b", "a\x7f", "a\x85", "a\u2028", "a\u2029"]
REFUSED += ["a\ud800", "\udfff"]


@pytest.mark.parametrize("value", ACCEPTED)
def test_ids_real_clients_make_are_accepted(value: str) -> None:
    assert id_problem(value) is None
    assert thread_id_problem(value) is None


@pytest.mark.parametrize("value", REFUSED)
def test_control_characters_surrogates_separators_and_lengths_are_refused(value: str) -> None:
    assert id_problem(value) is not None
    assert thread_id_problem(value) is not None


@pytest.mark.parametrize("value", ["a/b", "/", "t1/", ".", ".."])
def test_a_thread_id_is_one_path_segment(value: str) -> None:
    assert id_problem(value) is None
    assert thread_id_problem(value) is not None


def test_free_text_refuses_only_what_a_text_column_cannot_hold() -> None:
    assert text_problem("tabs\tnewlines\nescapes\x1b and ünïcødé") is None
    assert text_problem("nul\x00") is not None
    assert text_problem("lone \ud800") is not None
