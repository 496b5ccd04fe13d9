"""JSON by the standard: client values too deep or not finite are refused by name; output is never NaN."""

import json
import math

import pytest

from chatgate.errors import RequestError
from chatgate.strict_json import MAX_DEPTH, check_client_value, client_json, dump_json, utf8_safe


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def refusal(data: str, field: str = "(body)") -> RequestError:
    with pytest.raises(RequestError) as caught:
        client_json(data, field)
    assert caught.value.status == 422
    return caught.value


def test_nesting_up_to_the_limit_is_accepted() -> None:
    assert client_json(nested(MAX_DEPTH), "(body)") is not None


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 150, 10_000, 1_000_000])
def test_nesting_past_the_limit_is_a_422_naming_the_limit(depth: int) -> None:
    error = refusal(nested(depth), "messages.0.encryptedValue")
    assert str(MAX_DEPTH) in error.message
    assert error.details[0]["field"].startswith("messages.0.encryptedValue")


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_a_non_finite_number_is_a_422_naming_its_path(number: str) -> None:
    error = refusal(f'{{"messages": [{{"parts": [{{"input": {{"x": [1, {number}]}}}}]}}]}}')
    assert error.details[0]["field"] == "messages.0.parts.0.input.x.1"
    assert "finite" in error.details[0]["problem"]


def test_big_finite_numbers_and_big_integers_are_fine() -> None:
    assert client_json("[1e308, -1e308, 123456789012345678901234567890, 5e-324]", "(body)")[2] > 10**28


def test_text_that_is_not_json_raises_value_error_for_the_caller_to_judge() -> None:
    with pytest.raises(ValueError):
        client_json("not json", "x")


def test_a_python_value_deeper_than_the_stack_is_walked_without_recursion() -> None:
    value: list[object] = []
    for _ in range(100_000):
        value = [value]
    with pytest.raises(RequestError):
        check_client_value(value, "payload")


def test_dump_json_never_writes_a_bare_non_finite_number() -> None:
    data = dump_json({"a": math.nan, "b": [math.inf, -math.inf], "c": 1.5})
    assert json.loads(data, parse_constant=pytest.fail) == {"a": None, "b": [None, None], "c": 1.5}


def test_dump_json_writes_a_lone_surrogate_as_an_escape_and_leaves_clean_values_alone() -> None:
    assert json.loads(dump_json({"k\ud800": ["x\udcff", ("é",)]})) == {"k\\ud800": ["x\\udcff", ["é"]]}
    clean = {"a": ["é", 1, ("b",)]}
    assert utf8_safe(clean) is clean  # nothing to escape: the same object, nothing copied
