"""MCP update_memory and delete_memory, on both backends: the server's user only, a friend's memory only
in that friend's scope, shared profiles in any; refusals say why and change nothing."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.mcp import McpToolError, MemoryMcpTools


async def _seed(system: Any) -> None:
    memory = system.layer.memory
    await memory.add(user_id="alice", memory_key="home", content="我住在杭州", memory_type="profile", keywords=["城市"])
    await memory.add(
        user_id="alice", memory_key="talk", content="周五要向导师汇报项目", memory_type="event", friend_id="mentor"
    )
    await memory.add(user_id="bob", memory_key="bob-only", content="Bob 的秘密", memory_type="profile")


async def _found(system: Any, query: str) -> list[str]:
    """The keys the search finds for alice (no round time limit: a cold first search must not time out)."""
    return [h.memory_key for h in await system.search.search(query, user_id="alice")]


async def _refused(tools: MemoryMcpTools, name: str, args: dict[str, Any]) -> str:
    with pytest.raises(McpToolError) as caught:
        await tools.call(name, args)
    return str(caught.value)


async def test_update_memory_changes_content_and_search_follows(system: Any) -> None:
    await _seed(system)
    tools = MemoryMcpTools(system, user_id="alice")
    out = await tools.call("update_memory", {"memory_key": "home", "content": "我搬到成都了", "friend_id": "helper"})
    assert out["memory_key"] == "home" and out["friend_id"] is None and out["memory_type"] == "profile"
    record = await system.layer.memory.retrieve_memory(user_id="alice", memory_key="home", touch=False)
    assert record.content == "我搬到成都了" and record.memory_type == "profile"
    keywords = {k.keyword for k in await system.layer.memory.get_keywords(user_id="alice", memory_key="home")}
    assert "城市" in keywords  # the user's tag stays
    assert "home" in await _found(system, "成都")
    event = await tools.call("update_memory", {"memory_key": "talk", "friend_id": "mentor", "summary": "周五汇报"})
    assert event["summary"] == "周五汇报" and event["friend_id"] == "mentor"


async def test_a_friends_memory_changes_only_in_its_scope(system: Any) -> None:
    await _seed(system)
    tools = MemoryMcpTools(system, user_id="alice")
    other = await _refused(tools, "update_memory", {"memory_key": "talk", "friend_id": "helper", "content": "改掉"})
    assert "another AI friend" in other and "mentor" not in other
    unscoped = await _refused(tools, "delete_memory", {"memory_key": "talk"})
    assert "friend_id 'mentor'" in unscoped
    assert "another AI friend" in await _refused(tools, "delete_memory", {"memory_key": "talk", "friend_id": "x"})
    record = await system.layer.memory.retrieve_memory(user_id="alice", memory_key="talk", touch=False)
    assert record is not None and record.content == "周五要向导师汇报项目"
    assert (await tools.call("delete_memory", {"memory_key": "talk", "friend_id": "mentor"}))["deleted"] is True
    assert await system.layer.memory.retrieve_memory(user_id="alice", memory_key="talk", touch=False) is None


async def test_another_users_memory_is_not_found_and_the_user_is_no_argument(system: Any) -> None:
    await _seed(system)
    tools = MemoryMcpTools(system, user_id="alice")
    assert "no memory 'bob-only'" in await _refused(tools, "delete_memory", {"memory_key": "bob-only"})
    assert "no memory 'bob-only'" in await _refused(
        tools, "update_memory", {"memory_key": "bob-only", "content": "被改了"}
    )
    bound = await _refused(tools, "delete_memory", {"memory_key": "bob-only", "user_id": "bob"})
    assert "bound to user 'alice'" in bound
    assert (await system.layer.memory.retrieve_memory(user_id="bob", memory_key="bob-only", touch=False)).content == (
        "Bob 的秘密"
    )
    assert "nothing to change" in await _refused(tools, "update_memory", {"memory_key": "home"})


async def test_a_shared_profile_is_deleted_in_any_friends_scope(system: Any) -> None:
    await _seed(system)
    tools = MemoryMcpTools(system, user_id="alice")
    assert (await tools.call("delete_memory", {"memory_key": "home", "friend_id": "helper"}))["deleted"] is True
    assert "home" not in await _found(system, "杭州")
    assert "no memory 'home'" in await _refused(tools, "delete_memory", {"memory_key": "home"})
