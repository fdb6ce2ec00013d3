"""Placeholder grammar and the CommandExecutor (real subprocesses, real database)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from autogen_core.models import SystemMessage, UserMessage

from agent_memory.slots import (
    CommandExecutor,
    Limits,
    PlaceholderError,
    SlotValue,
    parse_placeholders,
    placeholder_keys,
    resolve,
    to_python,
)
from data_layer import AgentFusionDataLayer, InvalidInputError, NewMemory, Scope
from test_sandbox import require_isolation, work_folder

NOW = datetime(2026, 3, 1, tzinfo=UTC)
DB = SlotValue("db-config-001", "MySQL 配置", '{"host": "localhost", "port": 3306}', {"engine": "mysql", "port": 3306})

# -- grammar ---------------------------------------------------------------------------------------


def test_the_four_forms() -> None:
    text = "[memory:a] [memory:b:full] [memory:c:summary] [memory:d:meta:host]"
    assert [(p.key, p.format, p.field) for p in parse_placeholders(text)] == [
        ("a", "default", None),
        ("b", "full", None),
        ("c", "summary", None),
        ("d", "meta", "host"),
    ]
    first = parse_placeholders(text)[0]
    assert (first.start, first.end, first.raw) == (0, 10, "[memory:a]")


def test_chinese_keys_and_repeats() -> None:
    assert placeholder_keys("用 [memory:数据库配置] 再用 [memory:数据库配置:full] 和 [memory:命令-1]") == [
        "数据库配置",
        "命令-1",
    ]


@pytest.mark.parametrize(
    "bad",
    [
        "[memory:]",
        "[memory:a b]",
        "[memory:a:fulll]",
        "[memory:a:meta:]",
        "[memory:a",
        "[memory:[memory:a]]",
        "[memory:a:meta:x y]",
        "[MEMORY:a!]",
    ],
)
def test_malformed_placeholders_are_errors(bad: str) -> None:
    with pytest.raises(PlaceholderError, match="malformed memory placeholder at position"):
        parse_placeholders(f"run {bad} now")


def test_nested_brackets_around_a_valid_placeholder() -> None:
    found = parse_placeholders("x = [[memory:a], {'k': [memory:b:summary]}]")
    assert [(p.key, p.start) for p in found] == [("a", 5), ("b", 23)]


def test_text_without_placeholders() -> None:
    assert parse_placeholders("普通文本 [note] [memo:x]") == []


def test_resolve_right_to_left_and_reports_positions() -> None:
    slots = {"db-config-001": DB, "短": SlotValue("短", "S", "content-of-short")}
    text = "A[memory:短:full]B[memory:db-config-001:meta:port]C[memory:短]D"
    out = resolve(text, slots)
    assert out.text == "Acontent-of-shortB3306CSD"
    assert [p.key for p, _, _ in out.spans] == ["短", "db-config-001", "短"]
    assert [out.text[s:e] for _, s, e in out.spans] == ["content-of-short", "3306", "S"]


def test_unknown_key_or_field_names_it() -> None:
    with pytest.raises(PlaceholderError, match=r"no memory for \['nope'\]"):
        resolve("[memory:nope]", {"db-config-001": DB})
    with pytest.raises(PlaceholderError, match=r"has no metadata field 'user'.*engine, port"):
        resolve("[memory:db-config-001:meta:user]", {"db-config-001": DB})


def test_placeholders_in_code_become_lookups() -> None:
    code = "cfg = [memory:db-config-001]\nprint([memory:db-config-001:summary], [memory:db-config-001:meta:engine])"
    assert to_python(code, {"db-config-001": DB}) == (
        'cfg = memory["db-config-001"]\nprint(memory_summary["db-config-001"], memory_meta["db-config-001"]["engine"])'
    )


# -- executor ----------------------------------------------------------------------------------------


@pytest.fixture
async def executor(layer: AgentFusionDataLayer, tmp_path: Path) -> CommandExecutor:
    isolation = require_isolation()
    work = work_folder(tmp_path / "work")  # not tmp_path itself: the SQLite file lives there
    (work / "train.py").write_text("import sys\nprint('training', ' '.join(sys.argv[1:]))\n", encoding="utf-8")
    await layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory(
                "db-config-001",
                '{"host": "localhost", "port": 3306, "user": "report"}',
                summary="MySQL 主从配置",
                memory_type="command_output",
                friend_id="mentor",
                metadata={"engine": "mysql"},
                created_at=NOW,
            ),
            NewMemory(
                "cmd-001",
                "python train.py --epochs 100",
                summary="训练命令",
                memory_type="command_output",
                friend_id="mentor",
                metadata={"language": "shell"},
                created_at=NOW,
            ),
            NewMemory("secret", "companion only", memory_type="event", friend_id="xiaozhu", created_at=NOW),
        ],
    )
    await layer.memory.add(user_id="u2", memory_key="other-user", content="not yours", created_at=NOW)
    limits = Limits(timeout_s=5, cpu_s=5, memory_mb=256)
    return CommandExecutor(layer, scope=Scope.of("u1", "mentor"), limits=limits, workdir=work, isolation=isolation)


async def test_the_db_config_slot_resolves_inside_code(executor: CommandExecutor, layer: AgentFusionDataLayer) -> None:
    slots = await executor.slots(["db-config-001"])
    code = "config = [memory:db-config-001]\nprint('connect', config['host'], config['port'])\n_result = config['port']"
    result = await executor.execute_with_memory_env(
        code, slots, [UserMessage(content="按之前的配置连接", source="user")]
    )
    assert result.success, result.error
    assert result.result == 3306 and result.output == "connect localhost 3306\n"
    assert result.memory_refs == ("db-config-001",)
    saved = await layer.memory.retrieve_memory(memory_key=result.memory_key or "", user_id="u1")
    assert saved is not None and saved.memory_type == "command_output" and saved.friend_id == "mentor"
    record = json.loads(saved.content)
    assert record["code"] == code and record["result"] == 3306 and record["referenced_keys"] == ["db-config-001"]


async def test_a_run_whose_result_no_backend_stores_is_still_recorded(
    executor: CommandExecutor, layer: AgentFusionDataLayer
) -> None:
    """A result holding a lone surrogate: the run is recorded with U+FFFD for it (a NUL is kept: JSON
    writes it as an escape, which every backend stores)."""
    result = await executor.execute_with_memory_env("print('a\\x00b')\n_result = 'x\\ud800y'", {})
    assert result.success, result.error
    assert result.result == "x\ud800y"  # the caller gets what the code returned
    assert result.memory_key is not None
    saved = await layer.memory.retrieve_memory(memory_key=result.memory_key, user_id="u1")
    assert saved is not None
    record = json.loads(saved.content)
    assert (record["result"], record["output"]) == ("x\ufffdy", "a\x00b\n")


async def test_messages_and_memory_variables(executor: CommandExecutor) -> None:
    slots = await executor.slots(["db-config-001"])
    code = "_result = [len(messages), messages[-1], memory['db-config-001']['user'], [memory:db-config-001:summary]]"
    msgs = [UserMessage(content=f"m{i}", source="user") for i in range(15)]
    result = await executor.execute_with_memory_env(code, slots, msgs)
    assert result.result == [10, "User: m14", "report", "MySQL 主从配置"]


async def test_a_command_reference_runs_the_remembered_command(executor: CommandExecutor) -> None:
    result = await executor.execute_command_references("重新执行 [memory:cmd-001]")
    assert result.success, result.error
    assert result.language == "shell" and result.output == "training --epochs 100\n"
    assert result.memory_refs == ("cmd-001",)


async def test_runaway_code_is_stopped_by_the_timeout(executor: CommandExecutor) -> None:
    executor.limits = Limits(timeout_s=1, cpu_s=30, memory_mb=256)
    result = await executor.execute_with_memory_env("import time\nwhile True:\n    time.sleep(0.01)", {})
    assert not result.success and result.timed_out and "1 s time limit" in (result.error or "")
    assert result.duration_ms < 5_000


async def test_a_cpu_burner_is_stopped_by_the_cpu_limit(executor: CommandExecutor) -> None:
    executor.limits = Limits(timeout_s=30, cpu_s=1, memory_mb=256)
    result = await executor.execute_with_memory_env("while True:\n    pass", {})
    assert not result.success and not result.timed_out and "CPU limit" in (result.error or "")


async def test_a_forking_command_is_killed_with_its_children(executor: CommandExecutor) -> None:
    executor.limits = Limits(timeout_s=1, cpu_s=30, memory_mb=256)
    await executor.layer.memory.add(
        user_id="u1",
        memory_key="slow",
        content="sleep 30 & sleep 30; echo never",
        memory_type="command_output",
        friend_id="mentor",
        metadata={"language": "shell"},
    )
    result = await executor.execute_command_references("[memory:slow]")
    assert result.timed_out and result.duration_ms < 5_000 and "never" not in result.output


async def test_a_memory_hog_is_stopped_by_the_memory_limit(executor: CommandExecutor) -> None:
    result = await executor.execute_with_memory_env("blocks = [bytearray(50 * 1024 * 1024) for _ in range(20)]", {})
    assert not result.success and "memory limit" in (result.error or "")


async def test_code_cannot_read_slots_it_was_not_given(executor: CommandExecutor) -> None:
    slots = await executor.slots(["db-config-001"])
    result = await executor.execute_with_memory_env("_result = memory['cmd-001']", slots)
    assert not result.success and "'cmd-001'" in (result.error or "") and "db-config-001" in (result.error or "")
    env = await executor.execute_with_memory_env("import os\n_result = sorted(os.environ)", slots)
    assert not any("DATABASE" in name or "PG" in name for name in env.result)


async def test_missing_or_malformed_runs_nothing(executor: CommandExecutor, layer: AgentFusionDataLayer) -> None:
    before = await layer.memory.count(user_id="u1")
    slots = await executor.slots(["db-config-001"])
    missing = await executor.execute_with_memory_env("print([memory:cmd-001])", slots)
    assert not missing.success and "cmd-001" in (missing.error or "") and missing.memory_key is None
    malformed = await executor.execute_with_memory_env("print([memory:db-config-001:oops])", slots)
    assert not malformed.success and "malformed" in (malformed.error or "")
    for key in ("secret", "other-user", "nope"):
        with pytest.raises(PlaceholderError, match=key):
            await executor.slots([key])  # another friend's event, another user's memory, no memory
    refused = await executor.execute_command_references("运行 [memory:other-user]")
    assert not refused.success and "other-user" in (refused.error or "")
    assert await layer.memory.count(user_id="u1") == before  # nothing ran, nothing was saved


async def test_prepare_memory_context_lists_the_slots(executor: CommandExecutor) -> None:
    slots = await executor.slots(["db-config-001", "cmd-001"])
    messages = await executor.prepare_memory_context([UserMessage(content="执行上次的命令", source="user")], slots)
    assert isinstance(messages[0], SystemMessage)
    assert "- [memory:db-config-001] MySQL 主从配置" in messages[0].content
    assert "- [memory:cmd-001] 训练命令" in messages[0].content
    assert len(messages) == 2


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="memory_mb"):
        Limits(memory_mb=1)
    with pytest.raises(ValueError, match="timeout_s"):
        Limits(timeout_s=0)


async def test_memory_text_cannot_inject_shell(executor: CommandExecutor, tmp_path: Path) -> None:
    await executor.layer.memory.add(
        user_id="u1",
        memory_key="evil",
        content="x",
        summary="hi; touch pwned $(id)",
        friend_id="mentor",
        created_at=NOW,
    )
    await executor.layer.memory.add(
        user_id="u1",
        memory_key="say",
        content="echo [memory:evil:summary]",
        memory_type="command_output",
        friend_id="mentor",
        metadata={"language": "shell"},
        created_at=NOW,
    )
    result = await executor.execute_command_references("[memory:say]")
    assert result.success and result.output == "hi; touch pwned $(id)\n"
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "work" / "pwned").exists()


async def test_background_and_escaped_children_do_not_outlive_the_run(
    executor: CommandExecutor, tmp_path: Path
) -> None:
    import asyncio

    from agent_memory.slots import run_shell

    work = tmp_path / "work"
    line = "(sleep 1; echo bg > bg.txt) & setsid sh -c 'sleep 1; echo escaped > setsid.txt' & echo started"
    quick = await run_shell(line, workdir=work, limits=Limits(timeout_s=5), isolation=executor.isolation)
    assert quick.ok and quick.output == "started\n" and quick.duration_ms < 1_000
    await asyncio.sleep(1.6)
    # the PID namespace ended with the run: the background child and the one that left the group died
    assert not (work / "bg.txt").exists() and not (work / "setsid.txt").exists()


async def test_bad_keys_in_a_request_are_an_answer_not_a_crash(executor: CommandExecutor) -> None:
    result = await executor.execute_command_references("run it", referenced_memories=["not a key!"])
    assert not result.success and "memory_key" in (result.error or "")


async def test_slots_take_a_list_of_keys_not_a_string(executor: CommandExecutor) -> None:
    """A string was read as its characters: "no memory ['c', 'f', 'g']"."""
    for bad in ("db-config-001", 7, None):
        with pytest.raises(InvalidInputError, match="list of memory keys"):
            await executor.slots(bad)
    assert set(await executor.slots(("db-config-001",))) == {"db-config-001"}
