"""Sensitive memories need an explicit permission before they reach another
friend's slot (the rule: ``agent_memory.domain.reach``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_memory.domain import reach, record_sensitivity, sensitivity
from agent_memory.slots import CommandExecutor, Limits, SensitiveMemoryError
from data_layer import AgentFusionDataLayer, Scope
from test_sandbox import require_isolation, work_folder


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("上周确诊了糖尿病，医生让我每天吃药", "health"),
        ("I was diagnosed with depression last year", "health"),
        ("我和男朋友分手了", "relationships"),
        ("She is going through a divorce", "relationships"),
        ("我的月薪是两万，还有房贷", "finances"),
        ("my credit card debt is growing", "finances"),
        ("数据库配置: host=db1 port=3306", None),
        ("the doctoral thesis deadline", None),  # whole English words only
        ("性能测试跑完了", None),
    ],
)
def test_the_rule_finds_the_three_categories(text: str, category: str | None) -> None:
    assert sensitivity(content=text) == category


def test_marks_on_write_win_over_the_words() -> None:
    assert sensitivity(content="port 5432", metadata={"sensitive": "health"}) == "health"
    assert sensitivity(content="port 5432", metadata={"sensitive": True}) == "marked"
    assert sensitivity(content="bank-loan-service config", metadata={"sensitive": False}) is None
    assert sensitivity(content="x", summary="工资条", metadata={}) == "finances"
    assert sensitivity(content="x", metadata={"topic": "health"}) is None  # a topic name is not a keyword
    assert sensitivity(content="x", metadata={"topic": "看病记录"}) == "health"


@pytest.fixture
async def executor(layer: AgentFusionDataLayer, tmp_path: Path) -> CommandExecutor:
    await layer.memory.add(user_id="u1", memory_key="diagnosis", content="用户确诊了糖尿病", memory_type="profile")
    await layer.memory.add(
        user_id="u1", memory_key="mentor-salary", content="月薪两万", friend_id="mentor", memory_type="event"
    )
    await layer.memory.add(user_id="u1", memory_key="marked", content='{"v": 1}', metadata={"sensitive": "finances"})
    await layer.memory.add(user_id="u1", memory_key="plain", content='{"port": 3306}', metadata={"port": 3306})
    return CommandExecutor(
        layer,
        scope=Scope.of("u1", "mentor"),
        limits=Limits(timeout_s=5),
        isolation=require_isolation(),
        workdir=work_folder(tmp_path / "work"),
    )


async def test_a_sensitive_profile_item_is_refused_in_a_friends_slot(executor: CommandExecutor) -> None:
    with pytest.raises(SensitiveMemoryError, match=r"'diagnosis' is sensitive \(health\).*allow_sensitive=True"):
        await executor.slots(["plain", "diagnosis"])
    with pytest.raises(SensitiveMemoryError, match=r"'marked' is sensitive \(finances\)"):
        await executor.slots(["marked"])
    assert set(await executor.slots(["plain", "mentor-salary"])) == {"plain", "mentor-salary"}  # its own friend's
    allowed = await executor.slots(["diagnosis"], allow_sensitive=True)
    assert allowed["diagnosis"].content == "用户确诊了糖尿病"


async def test_a_remembered_command_cannot_pull_a_sensitive_memory(
    executor: CommandExecutor, layer: AgentFusionDataLayer
) -> None:
    await layer.memory.add(
        user_id="u1",
        memory_key="leak",
        content="echo [memory:diagnosis:full]",
        memory_type="command_output",
        friend_id="mentor",
        metadata={"language": "shell"},
    )
    before = await layer.memory.count(user_id="u1")
    refused = await executor.execute_command_references("[memory:leak]")
    assert not refused.success and "sensitive (health)" in (refused.error or "") and "糖尿病" not in refused.output
    assert await layer.memory.count(user_id="u1") == before  # nothing ran
    allowed = await executor.execute_command_references("[memory:leak]", allow_sensitive=True)
    assert allowed.success and allowed.output == "用户确诊了糖尿病\n"
    saved = await layer.memory.retrieve_memory(memory_key=allowed.memory_key or "", user_id="u1")
    assert saved is not None and saved.metadata["sensitive"] == "health"  # the run's record is as sensitive
    assert "糖尿病" in json.loads(saved.content)["output"]


async def test_the_gate_is_the_same_rule_for_other_callers(layer: AgentFusionDataLayer) -> None:
    record = await layer.memory.add(user_id="u1", memory_key="d", content="I see a therapist weekly", friend_id="a")
    assert record_sensitivity(record) == "health"
    assert reach(Scope.of("u1", "a"), record) and not reach(Scope.of("u1", "b"), record).seen
    mine = Scope.of("u1")  # the user's own view sees it, but a slot run there needs the permission
    assert reach(mine, record).seen and reach(mine, record).withheld == "health" and not reach(mine, record)
    assert reach(mine, record, allow_sensitive=True)
    assert "'d' is sensitive (health) and belongs to friend 'a'" in reach(mine, record).refusal()
    shared = await layer.memory.add(user_id="u1", memory_key="s", content="my salary is 9k", shared=True)
    assert reach(mine, shared) and not reach(Scope.of("u1", "b"), shared)  # the profile's own view: the user's
    assert reach(Scope.of("u1", "b"), shared, allow_sensitive=True)
