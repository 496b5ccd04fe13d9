import asyncio
import threading

import pytest

from chatgate.config import import_function
from chatgate.run.tools import ServerTool, ToolOutcome
from tests import sample_tools


def tool(path: str, **options: object) -> ServerTool:
    name = path.rsplit(":", 1)[1]
    return ServerTool.from_function(name, import_function(path), **options)  # type: ignore[arg-type]


def test_the_schema_and_description_come_from_the_function() -> None:
    weather = tool("tests.sample_tools:get_weather")
    assert weather.description == "Current weather for a city."
    assert weather.parameters["required"] == ["city"]
    assert weather.parameters["properties"]["unit"] == {"default": "c", "enum": ["c", "f"], "type": "string"}
    assert weather.definition.name == "get_weather"


def test_an_explicit_schema_and_description_win() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    weather = tool("tests.sample_tools:get_weather", description="Weather.", parameters=schema)
    assert (weather.description, weather.parameters) == ("Weather.", schema)


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("tests.sample_tools", "is not of the form"),
        ("tests.nowhere:f", "cannot import 'tests.nowhere'"),
        ("tests.sample_tools:missing", "has no attribute 'missing'"),
        ("tests.sample_tools:NOT_CALLABLE", "is not callable"),
    ],
)
def test_bad_import_paths_say_what_is_wrong(path: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        import_function(path)


async def test_a_sync_function_runs_in_a_worker_thread_and_its_result_is_json() -> None:
    seen: list[str] = []
    original = sample_tools.get_weather

    def spy(city: str, unit: str = "c") -> dict[str, object]:
        seen.append(threading.current_thread().name)
        return original(city, unit)  # type: ignore[arg-type]

    weather = ServerTool.from_function("get_weather", spy)
    outcome = await weather.call('{"city": "Oslo"}')
    weather = {"city": "Oslo", "temperature": 21, "unit": "c"}
    assert outcome == ToolOutcome('{"city":"Oslo","temperature":21,"unit":"c"}', value=weather)
    assert seen and seen[0] != threading.main_thread().name


async def test_an_async_function_is_awaited() -> None:
    assert await tool("tests.sample_tools:add").call('{"a": 2, "b": 3}') == ToolOutcome("5", value=5)


async def test_invalid_arguments_become_an_error_the_model_can_read() -> None:
    outcome = await tool("tests.sample_tools:add").call('{"a": "two"}')
    assert outcome.is_error
    assert "Invalid arguments for add" in outcome.content and "a:" in outcome.content and "b:" in outcome.content


async def test_an_exception_becomes_an_error_result_not_a_crash() -> None:
    outcome = await tool("tests.sample_tools:explode").call('{"reason": "boom"}')
    assert outcome == ToolOutcome("explode failed: RuntimeError: boom", is_error=True)


async def test_a_call_past_its_timeout_is_an_error_and_does_not_block_the_loop() -> None:
    blocked = tool("tests.sample_tools:held", timeout=0.2)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticking = asyncio.create_task(ticker())
    try:
        outcome = await blocked.call("{}")
        assert not sample_tools.HELD_RETURNED.is_set()  # the timeout answered while the tool's thread was still blocked
    finally:
        sample_tools.RELEASE.set()
        ticking.cancel()
    assert outcome == ToolOutcome("held timed out after 0.2 seconds", is_error=True)
    assert ticks > 0  # the loop ran its 0.01 s timer before the 0.2 s one: the blocked thread did not hold it
