import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from chatgate.run.prompts import CodeSource, PromptRenderError, PromptTemplate, RequestFacts, Variable

FACTS = RequestFacts(agent="bot", thread_id="t-1", now=datetime(2026, 1, 2, 3, 4, tzinfo=UTC), config={"tier": "pro"})


def template(text: str, *variables: Variable, runtime: CodeSource | None = None) -> PromptTemplate:
    return PromptTemplate(text, {v.name: v for v in variables}, runtime)


async def test_a_plain_template_is_returned_as_is() -> None:
    assert await PromptTemplate("You are terse.").render(FACTS) == "You are terse."


async def test_text_and_files_fill_placeholders(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("A;")
    (tmp_path / "b.md").write_text("B.")
    prompt = template(
        "{{ INTRO }} {{DOCS}}",
        Variable("INTRO", text="Hi."),
        Variable("DOCS", files=(tmp_path / "a.md", tmp_path / "b.md")),
    )
    assert await prompt.render(FACTS) == "Hi. A;B."


async def test_files_are_re_read_when_they_change(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("old")
    prompt = template("{{DOC}}", Variable("DOC", files=(doc,)))
    assert await prompt.render(FACTS) == "old"
    doc.write_text("new!")
    os.utime(doc, ns=(doc.stat().st_atime_ns, doc.stat().st_mtime_ns + 1_000_000))
    assert await prompt.render(FACTS) == "new!"


async def test_a_code_file_gives_its_value_or_its_get_value(tmp_path: Path) -> None:
    (tmp_path / "value.py").write_text("SYSTEM_MESSAGE_VALUE = 'from a global'\n")
    (tmp_path / "getter.py").write_text("def get_value():\n    return f'for {AGENT} on {CONFIG[\"tier\"]}'\n")
    prompt = template(
        "{{A}} / {{B}}", Variable("A", code=tmp_path / "value.py"), Variable("B", code=tmp_path / "getter.py")
    )
    assert await prompt.render(FACTS) == "from a global / for bot on pro"


async def test_inline_code_is_an_expression_or_a_block_setting_value() -> None:
    prompt = template(
        "[{{EXPR}}] [{{BLOCK}}] [{{NOTHING}}]",
        Variable("EXPR", inline_code="f'{THREAD_ID} at {NOW:%Y-%m-%d}'"),
        Variable("BLOCK", inline_code="if CONFIG['tier'] == 'pro':\n    VALUE = 'premium'\nelse:\n    VALUE = 'basic'"),
        Variable("NOTHING", inline_code="x = 1"),
    )
    assert await prompt.render(FACTS) == "[t-1 at 2026-01-02] [premium] []"


async def test_a_false_condition_leaves_the_value_empty_and_never_runs_it(tmp_path: Path) -> None:
    prompt = template(
        "<{{GATED}}><{{OPEN}}>",
        Variable("GATED", inline_code="1 / 0", condition=CodeSource(inline="CONFIG['tier'] == 'free'")),
        Variable("OPEN", text="yes", condition=CodeSource(inline="True")),
    )
    assert await prompt.render(FACTS) == "<><yes>"


async def test_runtime_code_is_the_namespace_and_a_variables_own_runtime_stays_its_own(tmp_path: Path) -> None:
    (tmp_path / "shared.py").write_text("GREETING = 'hello'\n_private = 'hidden'\n")
    prompt = template(
        "{{A}}|{{B}}|{{C}}",
        Variable("A", inline_code="GREETING + ' ' + AGENT"),
        Variable("B", inline_code="LOCAL", runtime_code=CodeSource(inline="LOCAL = GREETING.upper()")),
        Variable("C", inline_code="repr(globals().get('LOCAL')) + repr(globals().get('_private'))"),
        runtime=CodeSource(path=tmp_path / "shared.py"),
    )
    assert await prompt.render(FACTS) == "hello bot|HELLO|NoneNone"


async def test_request_values_win_for_one_render_only() -> None:
    prompt = template("Plan: {{PLAN}}", Variable("PLAN", text="free"))
    assert await prompt.render(FACTS, values={"PLAN": "enterprise"}) == "Plan: enterprise"
    assert await prompt.render(FACTS) == "Plan: free"


async def test_runtime_code_can_set_request_values() -> None:
    prompt = template(
        "{{PLAN}}",
        Variable("PLAN", text="free"),
        runtime=CodeSource(inline="SYSTEM_MESSAGE_VARIABLES = {'PLAN': CONFIG['tier']}"),
    )
    assert await prompt.render(FACTS) == "pro"


async def test_clients_override_only_variables_marked_overridable_and_only_as_literal_text() -> None:
    prompt = template(
        "name={{NAME}} role={{ROLE}}",
        Variable("NAME", text="friend", client_overridable=True),
        Variable("ROLE", text="assistant"),
    )
    hostile = {"NAME": "{{ROLE}} __import__('os').system('x')", "ROLE": "pirate"}
    assert (
        await prompt.render(FACTS, client_values=hostile) == "name={{ROLE}} __import__('os').system('x') role=assistant"
    )


async def test_a_failing_variable_is_named_in_the_error(tmp_path: Path) -> None:
    prompt = template("{{BAD}}", Variable("BAD", inline_code="CONFIG['missing']"))
    with pytest.raises(PromptRenderError, match="variable 'BAD': KeyError"):
        await prompt.render(FACTS)


async def test_failing_runtime_code_is_an_error() -> None:
    prompt = template("{{A}}", Variable("A", text="x"), runtime=CodeSource(inline="raise ValueError('nope')"))
    with pytest.raises(PromptRenderError, match="runtime_code failed: ValueError: nope"):
        await prompt.render(FACTS)


async def test_rendering_runs_off_the_event_loop_with_a_timeout() -> None:
    threads = template("{{T}}", Variable("T", inline_code="__import__('threading').current_thread().name"))
    assert await threads.render(FACTS) != threading.main_thread().name
    slow = PromptTemplate("{{S}}", {"S": Variable("S", inline_code="__import__('time').sleep(2)")}, timeout=0.2)
    with pytest.raises(PromptRenderError, match=r"longer than 0\.2 seconds"):
        await slow.render(FACTS)


def test_placeholders_without_a_variable_are_reported() -> None:
    prompt = template("{{A}} {{B}} {{A}}", Variable("A", text="x"))
    assert prompt.placeholders == ["A", "B"]
    assert prompt.missing_variables() == ["B"]


def test_the_version_is_the_label_else_a_hash_of_the_template_and_its_static_variables(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("first")
    variables = {"NOTES": Variable("NOTES", files=(notes,)), "TONE": Variable("TONE", text="kind")}
    template = PromptTemplate("{{TONE}} {{NOTES}}", variables)
    assert template.version == template.hash and len(template.hash) == 12
    notes.write_text("second")  # a file's content is read per render: not part of the version
    assert PromptTemplate("{{TONE}} {{NOTES}}", variables).hash == template.hash
    unkind = {**variables, "TONE": Variable("TONE", text="curt")}
    assert PromptTemplate("{{TONE}} {{NOTES}}", unkind).hash != template.hash
    assert PromptTemplate("{{TONE}} {{NOTES}}", variables, label="v2").version == "v2"
