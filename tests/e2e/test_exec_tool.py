"""The main agent's ``run_code`` tool (opt-in): a scripted model drives a real AssistantAgent whose code
runs with memory slots in the sandbox, streamed as events on the builder's queue."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from autogen_agentchat.messages import ToolCallExecutionEvent

from agent_memory.settings import load_settings
from agent_memory.slots import CodeRunFinishedEvent, CodeRunOutputEvent, CodeRunStartedEvent
from agent_memory.system import MemorySystem
from builders import RUN_CODE_PROMPT, AgentBuilder
from scripted import call, replay
from test_sandbox import ABSENT, require_isolation


def _drain(queue: asyncio.Queue[Any]) -> list[Any]:
    events = []
    while not queue.empty():
        events.append(queue.get_nowait())
    return events


async def _seed(system: MemorySystem) -> None:
    await system.layer.memory.add(
        user_id="u1",
        memory_key="db",
        content='{"host": "localhost", "port": 3306}',
        summary="MySQL 配置",
        memory_type="command_output",
        friend_id="mentor",
    )
    await system.layer.memory.add(
        user_id="u1",
        memory_key="cmd-1",
        content="echo deployed [memory:env:meta:env]",
        memory_type="command_output",
        friend_id="mentor",
        metadata={"language": "shell"},
    )
    await system.layer.memory.add(user_id="u1", memory_key="env", content="x", metadata={"env": "staging"})
    await system.layer.memory.add(user_id="u1", memory_key="pay", content="月薪两万")


def test_the_tool_is_off_by_default(system: MemorySystem) -> None:
    kwargs = AgentBuilder(system).with_memory({}, user_id="u1")
    assert "run_code" not in [t.name for t in kwargs["tools"]]


async def test_the_agent_runs_code_with_slots_and_streams_it(db_url: str) -> None:
    require_isolation()
    settings = load_settings(memory_database_url=db_url, memory_tools_enable_code_execution=True)
    async with MemorySystem.from_settings(settings) as system:
        await _seed(system)
        code = "cfg = [memory:db]\nprint('port', cfg['port'])\n_result = cfg['port'] + 1"
        client = replay([call("run_code", {"code": code}), "端口是 3306。"])
        queue: asyncio.Queue[Any] = asyncio.Queue()
        agent = AgentBuilder(system).build(
            name="mentor",
            model_client=client,
            user_id="u1",
            friend_id="mentor",
            system_message="你是职场导师。",
            events=queue,
        )
        result = await agent.run(task="用之前的数据库配置算一下端口")
        assert result.messages[-1].content == "端口是 3306。"
        first = client.create_calls[0]
        assert "run_code" in {t["name"] for t in first["tools"]}
        assert RUN_CODE_PROMPT["zh"] in first["messages"][0].content
        executed = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
        answer = json.loads(executed.content[0].content)
        assert answer["success"] and answer["result"] == 3307 and answer["output"] == "port 3306\n"
        events = [e for e in _drain(queue) if type(e).__name__.startswith("CodeRun")]
        assert isinstance(events[0], CodeRunStartedEvent) and events[0].memory_refs == ["db"] and events[0].isolated
        assert "".join(e.content for e in events if isinstance(e, CodeRunOutputEvent)) == "port 3306\n"
        assert isinstance(events[-1], CodeRunFinishedEvent) and events[-1].success
        saved = await system.layer.memory.retrieve_memory(memory_key=answer["memory_key"], user_id="u1")
        assert saved is not None and saved.friend_id == "mentor" and saved.metadata["isolated"] is True


async def test_the_agent_reruns_a_remembered_command_but_not_a_sensitive_slot(db_url: str) -> None:
    require_isolation()
    settings = load_settings(memory_database_url=db_url, memory_tools_enable_code_execution=True)
    async with MemorySystem.from_settings(settings) as system:
        await _seed(system)
        tool = AgentBuilder(system).code_tool(user_id="u1", friend_id="mentor")
        rerun = await tool.run_json({"code": "[memory:cmd-1]", "mode": "command"}, None)
        assert rerun.success and rerun.output == "deployed staging\n"
        leak = await tool.run_json({"code": "print([memory:pay])"}, None)
        assert not leak.success and "sensitive (finances)" in (leak.error or "") and "两万" not in leak.output


async def test_without_isolation_the_tool_refuses_and_says_why(db_url: str) -> None:
    settings = load_settings(
        memory_database_url=db_url, memory_tools_enable_code_execution=True, memory_exec_bwrap=ABSENT
    )
    async with MemorySystem.from_settings(settings) as system:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        tool = AgentBuilder(system).code_tool(user_id="u1", friend_id="mentor", events=queue)
        out = await tool.run_json({"code": "_result = 1"}, None)
        assert not out.success and "MEMORY_EXEC_ALLOW_UNISOLATED=true" in (out.error or "")
        events = _drain(queue)
        assert not events[0].isolated and isinstance(events[-1], CodeRunFinishedEvent) and not events[-1].success
