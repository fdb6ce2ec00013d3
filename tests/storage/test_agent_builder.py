"""AgentBuilder: a main AssistantAgent with recall, memory tools and the memory prompt."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from autogen_agentchat.messages import ToolCallExecutionEvent
from autogen_core import FunctionCall
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import CreateResult, RequestUsage, SystemMessage
from autogen_core.tools import BaseTool

from agent_memory.context import MemoryContext
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem
from builders import MEMORY_TOOLS_PROMPT, AgentBuilder
from data_layer import NewMemory, Scope
from scripted import replay

NOW = datetime.now(UTC)


@pytest.fixture
async def builder(system: MemorySystem) -> AgentBuilder:
    b = AgentBuilder(system)
    await system.layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory(
                "db",
                '{"host": "localhost", "port": 3306}',
                summary="MySQL 主从配置: port 3306",
                memory_type="command_output",
                friend_id="mentor",
                created_at=NOW - timedelta(days=1),
            ),
            NewMemory(
                "movies", "喜欢科幻电影，不喜欢恐怖片", memory_type="profile", created_at=NOW - timedelta(days=9)
            ),
        ],
    )
    return b


async def test_built_agent_recalls_and_uses_memory_tools(builder: AgentBuilder) -> None:
    call = FunctionCall(id="t1", name="get_memory_detail", arguments=json.dumps({"memory_key": "db"}))
    script = [
        CreateResult(
            finish_reason="function_calls",
            content=[call],
            usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
            cached=False,
        ),
        "端口是 3306。",
    ]
    client = replay(script)
    seen: list[dict[str, Any]] = []
    builder.register_hook(lambda kwargs: seen.append(kwargs) or None)
    agent = builder.build(
        name="mentor", model_client=client, user_id="u1", friend_id="mentor", system_message="你是职场导师。"
    )
    result = await agent.run(task="按之前的 MySQL 配置，端口是多少？")
    assert result.messages[-1].content == "端口是 3306。"
    first = client.create_calls[0]
    assert (
        first["messages"][0].content.startswith("你是职场导师。")
        and MEMORY_TOOLS_PROMPT["zh"] in first["messages"][0].content
    )
    recall = [m for m in first["messages"] if isinstance(m, SystemMessage) and "[memory:db:" in m.content]
    assert len(recall) == 1
    assert {t["name"] for t in first["tools"]} == {"search_memories", "get_memory_detail", "load_tool_history"}
    detail = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert "3306" in json.loads(detail.content[0].content)["content"]
    assert seen and isinstance(seen[0]["model_context"], MemoryContext)


async def test_memory_tools_are_bound_to_the_friend(builder: AgentBuilder) -> None:
    tools = builder.memory_tools(user_id="u1", friend_id="xiaozhu")
    detail = next(t for t in tools if t.name == "get_memory_detail")
    out = await detail.run_json({"memory_key": "db"}, cancellation_token=None)
    assert out.success is False  # the mentor's memory is not the companion's


def test_a_tool_schema_changed_by_its_caller_leaves_the_next_one_intact(builder: AgentBuilder) -> None:
    """Schemas are built once and copied per call: a client that edits its copy (adds strict mode, drops a
    field) must not change what the next agent of the process is given."""
    tool = next(t for t in builder.memory_tools(user_id="u1") if t.name == "search_memories")
    first = tool.schema
    pristine = json.loads(json.dumps(first))
    first["parameters"]["properties"].clear()
    first["parameters"]["required"].append("injected")
    first["name"] = "changed"
    again = next(t for t in builder.memory_tools(user_id="u2") if t.name == "search_memories").schema
    assert again == pristine
    assert "query" in again["parameters"]["properties"]


def test_every_memory_tool_builds_its_schema_once_and_hands_out_copies(
    builder: AgentBuilder, system: MemorySystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AutoGen asks for every tool's schema before each model call; ours build it from the pydantic
    model once per process (what AutoGen's own build gives), and each caller may edit its copy."""

    def tools(user: str) -> list[BaseTool[Any, Any]]:
        kwargs = builder.with_memory({"name": "a"}, user_id=user, friend_id="mentor")
        return [
            *kwargs["tools"],
            builder.code_tool(user_id=user, friend_id="mentor"),
            *system.evidence_toolbox(Scope.of(user, "mentor")).tools(),
        ]

    first = tools("u1")
    names = {t.name for t in first}
    assert {"search_memories", "load_tool_history", "run_code", "lexical_search"} <= names
    expected = {t.name: json.loads(json.dumps(BaseTool.schema.fget(t))) for t in first}  # AutoGen's own build
    for tool in first:
        copy = tool.schema
        assert copy == expected[tool.name]
        copy["parameters"]["properties"].clear()  # a client editing its copy
        copy["name"] = "changed"
    builds: list[str] = []
    for model in {t.args_type() for t in first}:
        original = model.model_json_schema

        def counted(*args: Any, _original: Any = original, _name: str = model.__name__, **kw: Any) -> Any:
            builds.append(_name)
            return _original(*args, **kw)

        monkeypatch.setattr(model, "model_json_schema", counted)
    again = tools("u2")
    for _ in range(3):
        assert {t.name: t.schema for t in again} == expected
    assert builds == []  # built once, before: no JSON-schema generation per model call
    assert BaseTool.schema.fget(again[0]) == expected[again[0].name] and builds  # the count does count


def test_with_memory_refuses_a_second_context(builder: AgentBuilder) -> None:
    with pytest.raises(ValueError, match="already has a model_context"):
        builder.with_memory({"model_context": UnboundedChatCompletionContext()}, user_id="u1")


async def test_instructions_follow_the_application_language(builder: AgentBuilder) -> None:
    english = builder.with_memory({"system_message": "You are a careful career mentor."}, user_id="u1")
    chinese = builder.with_memory({"system_message": "你是职场导师。"}, user_id="u1")
    assert MEMORY_TOOLS_PROMPT["en"] in english["system_message"] and "记忆工具" not in english["system_message"]
    assert MEMORY_TOOLS_PROMPT["zh"] in chinese["system_message"]


async def test_tool_settings_take_effect(db_url: str) -> None:
    settings = load_settings(
        memory_database_url=db_url, memory_tools_enable_proactive_search=False, memory_language="en"
    )
    async with MemorySystem.from_settings(settings) as system:
        kwargs = AgentBuilder(system).with_memory({"system_message": "你是助手"}, user_id="u1")
        assert [t.name for t in kwargs["tools"]] == ["load_tool_history"]  # no memory tools
        assert "Memory tools" not in kwargs["system_message"] and "Archived tool results" in kwargs["system_message"]
    settings = load_settings(
        memory_database_url=db_url, memory_tools_max_results_per_search=2, memory_tools_proactive_search_threshold=0.0
    )
    async with MemorySystem.from_settings(settings) as system:
        for n in range(4):
            await system.layer.memory.add(user_id="u1", memory_key=f"m{n}", content=f"数据库配置 第{n}版")
        search = next(t for t in AgentBuilder(system).memory_tools(user_id="u1") if t.name == "search_memories")
        out = await search.run_json({"query": "数据库配置", "limit": 10}, None)
        assert out.success and out.total_found == 2  # capped by MEMORY_TOOLS_MAX_RESULTS_PER_SEARCH


async def test_a_client_without_function_calling_gets_a_clear_error(builder: AgentBuilder) -> None:
    from autogen_core.models import ModelFamily, ModelInfo
    from autogen_ext.models.replay import ReplayChatCompletionClient

    info = ModelInfo(
        vision=False, function_calling=False, json_output=False, family=ModelFamily.UNKNOWN, structured_output=False
    )
    plain = ReplayChatCompletionClient(["hi"], model_info=info)
    with pytest.raises(ValueError, match="function_calling"):
        builder.build(name="a", model_client=plain, user_id="u1")
