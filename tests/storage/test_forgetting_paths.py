"""Forgetting beyond the main loop, on both backends: crash safety (the record and the setting aside
commit together), the recall's window over the stored chat, the chat-level undo, and MCP's tools."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent

from agent_memory.forgetting import undo_request
from agent_memory.mcp import McpToolError, MemoryMcpTools
from agent_memory.recall import MemoryForgottenEvent, MemoryUnforgottenEvent
from agent_memory.system import MemorySystem
from data_layer import NewMessage
from scripted import call, replay

EX = "我前任叫林小美，我们去年分手了"


def _drain(queue: asyncio.Queue[Any]) -> list[Any]:
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items


async def _general(system: MemorySystem, user: str) -> list[Any]:
    page = await system.layer.memory.list_memories(
        user_id=user, memory_types=["general"], include_inactive=True, limit=100
    )
    return page.items


# -- crash safety ------------------------------------------------------------------------------------


async def test_a_forgetting_that_fails_midway_leaves_no_record_and_nothing_forgotten(
    system: MemorySystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    layer = system.layer
    await layer.memory.add(user_id="u1", memory_key="ex", memory_type="profile", content=EX)
    await layer.messages.append(user_id="u1", role="user", content=EX, friend_id="xiaozhu")
    import data_layer._memory_repo as repo

    real_update = repo.update
    calls = {"n": 0}

    def failing_update(*args: Any, **kwargs: Any) -> Any:  # the setting aside, after the record is written
        calls["n"] += 1
        raise RuntimeError("the database went away")

    monkeypatch.setattr(repo, "update", failing_update)
    with pytest.raises(RuntimeError, match="went away"):
        await system.forget(system.scope("u1", "xiaozhu"), "前任")
    assert calls["n"] >= 1  # it failed in the second step, not before
    monkeypatch.setattr(repo, "update", real_update)

    assert await system.forgettings("u1") == []
    assert not any(r.memory_key.startswith("forgetting-") for r in await _general(system, "u1"))
    kept = await layer.memory.retrieve_memory(memory_key="ex", user_id="u1", touch=False)
    assert kept is not None and "forgotten" not in kept.metadata
    hits = await system.search.search("前任", user_id="u1", friend_id="xiaozhu", limit=10)
    assert [h.memory_key for h in hits] == ["ex"]  # no active "forgetting: 前任" record is searched

    done = await system.forget(system.scope("u1", "xiaozhu"), "前任")  # asked again, it is carried out
    assert "ex" in done.memory_keys
    [record] = [r for r in await _general(system, "u1") if r.memory_key == done.key]
    assert not record.is_active
    assert await layer.memory.retrieve_memory(memory_key="ex", user_id="u1", touch=False) is None


async def test_a_forgetting_too_large_to_record_is_refused_and_sets_nothing_aside(system: MemorySystem) -> None:
    """1,001 memories formed from one message about the subject: the forgetting's record (what its undo
    brings back) cannot hold them all, so it is refused with a clear error before anything changes."""
    from data_layer import InvalidInputError, NewMemory

    layer = system.layer
    told = await layer.messages.append(user_id="u1", role="user", content=EX, friend_id="xiaozhu")
    many = 1_001
    cites = {"source_message_ids": [told.id]}
    drafts = [
        NewMemory(memory_key=f"gist-{i:04d}", content=f"第{i}件小事", friend_id="xiaozhu", metadata=cites)
        for i in range(many)
    ]
    await layer.memory.add_many(user_id="u1", memories=drafts)
    with pytest.raises(InvalidInputError, match=r"would set aside 1001 memories .* than one forgetting can record"):
        await system.forget(system.scope("u1", "xiaozhu"), "前任", broad=True)
    assert await layer.memory.count(user_id="u1") == many and await system.forgettings("u1") == []


# -- the recall's window -------------------------------------------------------------------------------

FILM = "我喜欢看科幻电影"


def _expand_then_handoff(n: int) -> list[Any]:
    """A recall model's answers for one turn: a larger window, then the handoff."""
    handoff = {"reason": "够了", "search_summary": "无", "relevant_memory_keys": [], "confidence": 0.2}
    return [
        call("expand_context_window", {"reason": "需要更早的对话", "current_size": 5, "requested_size": 20}, n),
        call("handoff", handoff, n + 1),
    ]


def _windows(client: Any, start: int) -> list[str]:
    """The tasks (the window over the conversation) the recall model was given from call ``start`` on."""
    return [
        str(m.content) for c in client.create_calls[start:] for m in c["messages"] if getattr(m, "source", "") == "user"
    ]


async def test_the_recall_window_and_its_expansion_leave_out_what_was_forgotten(system: MemorySystem) -> None:
    system.background_archiving = False  # the stored chat stays chat: only the window is under test
    earlier = datetime.now(UTC) - timedelta(days=3)
    said = [EX, "听起来你们经历了很多", "我今天去爬山了", "真不错", FILM, "推荐你看星际穿越", "周末想去海边", "好主意"]
    await system.layer.messages.append_many(
        user_id="u1",
        messages=[
            NewMessage(
                role="user" if i % 2 == 0 else "assistant",
                content=text,
                friend_id="xiaozhu",
                created_at=earlier + timedelta(seconds=i),
            )
            for i, text in enumerate(said)
        ],
    )
    recall = replay([*_expand_then_handoff(1), *_expand_then_handoff(3), *_expand_then_handoff(5), "unused"])
    system.recall_client = recall
    queue: asyncio.Queue[Any] = asyncio.Queue()
    agent = AssistantAgent(
        "main",
        model_client=replay(["记得。", "好的。", "好呀。"]),
        model_context=system.context(user_id="u1", friend_id="xiaozhu", events=queue),
    )
    await agent.run(task="你还记得我之前说的事吗？")
    first = _windows(recall, 0)
    assert len(first) == 2 and "林小美" in first[1] and "林小美" not in first[0]  # only the larger window holds it

    await agent.run(task="别再记着我前任的事了")
    assert [e for e in _drain(queue) if isinstance(e, MemoryForgottenEvent)]
    seen = len(recall.create_calls)
    await agent.run(task="我们聊点别的吧")
    later = _windows(recall, seen)
    assert len(later) == 2 and "爬山" in later[1] and "爬山" not in later[0]  # the larger window reached back
    assert not any("林小美" in w or "别再记着我前任" in w for w in later)

    # a new context (the next session) resumes the stored chat: neither model is shown it
    fresh = replay([*_expand_then_handoff(7), "unused"])
    system.recall_client = fresh
    context = system.context(user_id="u1", friend_id="xiaozhu")
    await context.resume(limit=40)
    shown = " ".join(str(m.content) for m in await context.get_messages())
    assert FILM in shown and "林小美" not in shown
    main = replay(["好的。"])
    await AssistantAgent("main", model_client=main, model_context=context).run(task="周末干点什么好？")
    assert not any("林小美" in w for w in _windows(fresh, 0)) and "爬山" in _windows(fresh, 0)[1]
    assert "林小美" not in " ".join(str(m.content) for m in main.create_calls[0]["messages"])

    await system.unforget("u1")  # undone, the window holds it again
    again = replay([*_expand_then_handoff(9), "unused"])
    system.recall_client = again
    context = system.context(user_id="u1", friend_id="xiaozhu")
    await AssistantAgent("main", model_client=replay(["嗯。"]), model_context=context).run(task="还记得吗")
    assert "林小美" in _windows(again, 0)[1]


# -- undo in the chat -------------------------------------------------------------------------------

NAMING = ["撤销刚才的遗忘", "取消遗忘", "恢复刚才忘掉的", "undo the forgetting", "Please unforget it."]
POINTING = [
    "别忘了刚才那个",
    "还是记着吧",
    "等等，别删",
    "undo that",
    "actually, remember it",
    "Wait, don't forget that!",
]
NO_UNDO = [
    "别忘了提醒我明天开会",
    "别忘了带伞",
    "remember that I am vegetarian",
    "undo that commit",
    "do you remember it?",
    "撤销刚才的遗忘？",
    "I can't undo that",
    "记住了",
    "don't forget my birthday",
]


@pytest.mark.parametrize("text", NAMING + POINTING)
def test_an_undo_is_heard(text: str) -> None:
    found = undo_request(text)
    assert found is not None and found.names_forgetting == (text in NAMING)


@pytest.mark.parametrize("text", NO_UNDO)
def test_what_is_no_undo(text: str) -> None:
    assert undo_request(text) is None


async def _chat_context(system: MemorySystem, replies: list[str]) -> tuple[AssistantAgent, Any, asyncio.Queue[Any]]:
    queue: asyncio.Queue[Any] = asyncio.Queue()
    context = system.context(user_id="u1", friend_id="xiaozhu", events=queue)
    return AssistantAgent("main", model_client=replay(replies), model_context=context), context, queue


async def _active(system: MemorySystem, key: str) -> bool:
    return await system.layer.memory.retrieve_memory(memory_key=key, user_id="u1", touch=False) is not None


@pytest.mark.parametrize("undo", ["别忘了刚才那个", "actually, remember it"])
async def test_undo_right_after_the_forgetting_brings_it_back(system: MemorySystem, undo: str) -> None:
    system.background_archiving = False
    await system.layer.memory.add(user_id="u1", memory_key="ex", memory_type="profile", content=EX)
    agent, context, queue = await _chat_context(system, ["好的。", "好，我记着。"])
    await agent.run(task="别再记着我前任的事了")
    assert not await _active(system, "ex")
    await agent.run(task=undo)
    undone = [e for e in _drain(queue) if isinstance(e, MemoryUnforgottenEvent)]
    assert len(undone) == 1 and undone[0].forgetting_key == context.forgotten[-1].key
    assert context.forgotten[-1].undone_at is not None and await _active(system, "ex")
    [record] = await system.forgettings("u1")
    assert record.undone_at is not None


async def test_a_pointing_undo_counts_only_right_after_and_a_naming_one_later(system: MemorySystem) -> None:
    system.background_archiving = False
    await system.layer.memory.add(user_id="u1", memory_key="ex", memory_type="profile", content=EX)
    await system.layer.memory.add(user_id="u1", memory_key="job", memory_type="profile", content="我的旧工作在腾讯")
    agent, context, queue = await _chat_context(system, ["好的。", "周末愉快。", "嗯。", "好的。", "好，我记着。"])
    await agent.run(task="别再记着我前任的事了")
    await agent.run(task="周末去哪玩好呢")
    await agent.run(task="undo that")  # not right after: "that" is no longer the forgetting
    assert not await _active(system, "ex") and not [e for e in _drain(queue) if isinstance(e, MemoryUnforgottenEvent)]
    await agent.run(task="别再记着我旧工作的事了")
    assert not await _active(system, "job")
    await agent.run(task="撤销刚才的遗忘")  # names it: the newest forgetting of this context comes back
    assert await _active(system, "job") and not await _active(system, "ex")
    assert [f.undone_at is not None for f in context.forgotten] == [False, True]


async def test_an_undo_without_a_forgetting_in_this_context_does_nothing(system: MemorySystem) -> None:
    system.background_archiving = False
    await system.layer.memory.add(user_id="u1", memory_key="ex", memory_type="profile", content=EX)
    await system.forget(system.scope("u1", "xiaozhu"), "前任")  # elsewhere: the CLI, another session
    agent, _, queue = await _chat_context(system, ["好的。"])
    await agent.run(task="撤销刚才的遗忘")
    assert not await _active(system, "ex") and not [e for e in _drain(queue) if isinstance(e, MemoryUnforgottenEvent)]


# -- MCP ---------------------------------------------------------------------------------------------


async def _refused(tools: MemoryMcpTools, name: str, args: dict[str, Any]) -> str:
    with pytest.raises(McpToolError) as caught:
        await tools.call(name, args)
    return str(caught.value)


async def test_mcp_forget_list_and_unforget_with_the_scope_rules(system: MemorySystem) -> None:
    memory = system.layer.memory
    await memory.add(user_id="alice", memory_key="ex", memory_type="profile", content=EX)
    await memory.add(
        user_id="alice",
        memory_key="mentor-ex",
        memory_type="event",
        friend_id="mentor",
        content="用户说前任林小美也在腾讯工作",
    )
    await memory.add(user_id="bob", memory_key="bob-ex", memory_type="profile", content=EX)
    tools = MemoryMcpTools(system, user_id="alice")
    done = await tools.call("forget_memories", {"subject": "前任", "friend_id": "buddy"})
    keys = {m["memory_key"] for m in done["memories"]}
    assert done["friend_id"] == "buddy" and "ex" in keys and "mentor-ex" not in keys  # another friend's event stays
    assert await memory.retrieve_memory(user_id="alice", memory_key="ex", touch=False) is None
    assert await memory.retrieve_memory(user_id="bob", memory_key="bob-ex", touch=False) is not None
    assert "ex" not in [r["memory_key"] for r in (await tools.call("list_memories", {}))["items"]]

    assert [f["key"] for f in (await tools.call("list_forgotten", {}))["items"]] == [done["key"]]
    assert (await tools.call("list_forgotten", {"friend_id": "mentor"}))["items"] == []  # asked of another friend
    assert (await MemoryMcpTools(system, user_id="bob").call("list_forgotten", {}))["items"] == []
    assert "user_id" in await _refused(tools, "list_forgotten", {"user_id": "bob"})
    assert "subject" in await _refused(tools, "forget_memories", {"subject": ""})

    # asked of buddy: undone only in buddy's scope; without a key, another scope finds nothing to undo
    assert "friend_id 'buddy'" in await _refused(tools, "unforget", {"key": done["key"]})
    assert "another AI friend" in await _refused(tools, "unforget", {"key": done["key"], "friend_id": "mentor"})
    assert "nothing forgotten" in await _refused(tools, "unforget", {"friend_id": "mentor"})
    assert "no forgetting" in await _refused(tools, "unforget", {"key": "forgetting-nope", "friend_id": "buddy"})
    assert await memory.retrieve_memory(user_id="alice", memory_key="ex", touch=False) is None
    undone = await tools.call("unforget", {"friend_id": "buddy"})
    assert undone["key"] == done["key"] and undone["undone_at"] is not None
    assert await memory.retrieve_memory(user_id="alice", memory_key="ex", touch=False) is not None
    assert "undone already" in await _refused(tools, "unforget", {"key": done["key"], "friend_id": "buddy"})

    shared = await tools.call("forget_memories", {"subject": "前任"})  # asked of no friend: undone in any scope
    assert shared["friend_id"] is None
    assert (await tools.call("unforget", {"key": shared["key"], "friend_id": "mentor"}))["undone_at"] is not None


async def test_mcp_forget_refuses_a_broad_subject_unless_all_matching(system: MemorySystem) -> None:
    from data_layer import NewMemory

    texts = [
        "用户说周末去爬了香山",
        "用户提到最近在学吉他",
        "用户说下周要去上海出差",
        "用户抱怨公司食堂太难吃",
        "用户养了一只叫团子的猫",
    ]
    await system.layer.memory.add_many(
        user_id="alice",
        memories=[
            NewMemory(memory_key=f"e{i}", memory_type="event", friend_id="buddy", content=t)
            for i, t in enumerate(texts)
        ],
    )
    tools = MemoryMcpTools(system, user_id="alice")
    message = await _refused(tools, "forget_memories", {"subject": "用户", "friend_id": "buddy"})
    assert "matches 5 of the 5 active memories" in message and "all_matching" in message
    assert (await tools.call("list_forgotten", {}))["items"] == []
    done = await tools.call("forget_memories", {"subject": "用户", "friend_id": "buddy", "all_matching": True})
    assert len(done["memories"]) == 5
