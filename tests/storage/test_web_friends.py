"""``layer.friends`` on both backends: per-user CRUD with validated ids and lengths, and a delete that
takes the friend's chat and memories with it in one transaction while the shared profile stays."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from data_layer import DuplicateError, InvalidInputError, NotFoundError

# tests/conftest.py empties the PostgreSQL tables between tests but not (yet) ai_friends: each test here
# uses users of its own.


async def test_friends_are_per_user_and_validated(system: Any) -> None:
    friends = system.layer.friends
    alice, bob = f"alice-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    made = await friends.create(user_id=alice, name=" 职场  导师 ", system_prompt="  你是导师。 ")
    assert (made.name, made.system_prompt) == ("职场 导师", "你是导师。")
    assert made.friend_id.startswith("f-")
    fixed = await friends.create(user_id=alice, name="小助手", friend_id="helper")
    with pytest.raises(DuplicateError):
        await friends.create(user_id=alice, name="again", friend_id="helper")
    assert [f.friend_id for f in await friends.list(user_id=alice)] == [made.friend_id, "helper"]
    assert await friends.list(user_id=bob) == []
    with pytest.raises(NotFoundError):
        await friends.get(user_id=bob, friend_id="helper")
    with pytest.raises(NotFoundError):
        await friends.update(user_id=bob, friend_id="helper", name="stolen")
    with pytest.raises(NotFoundError):
        await friends.delete(user_id=bob, friend_id="helper")
    for bad in [
        {"name": ""},
        {"name": "x" * 101},
        {"name": "ok", "system_prompt": "p" * 8001},
        {"name": "ok", "friend_id": " bad "},
        {"name": "nul\x00"},
    ]:
        with pytest.raises(InvalidInputError):
            await friends.create(user_id=alice, **bad)
    changed = await friends.update(user_id=alice, friend_id="helper", system_prompt="温柔一点")
    assert (changed.name, changed.system_prompt) == ("小助手", "温柔一点")
    assert changed.updated_at >= fixed.updated_at
    assert len(await friends.list(user_id=alice)) == 2


async def test_delete_takes_chat_and_memories_but_not_the_profile(system: Any) -> None:
    layer = system.layer
    alice = f"alice-{uuid.uuid4().hex[:6]}"
    await layer.friends.create(user_id=alice, name="小助手", friend_id="helper")
    await layer.friends.create(user_id=alice, name="导师", friend_id="mentor")
    for friend in ("helper", "mentor"):
        await layer.messages.append(
            user_id=alice, role="user", content=f"告诉{friend}：下周去北京出差", friend_id=friend
        )
        await layer.memory.add(
            user_id=alice,
            memory_key=f"gist-{friend}",
            content=f"{friend} 知道北京出差",
            memory_type="event",
            friend_id=friend,
        )
    await layer.memory.add(user_id=alice, memory_key="profile-movies", content="喜欢科幻电影", memory_type="profile")
    before = await system.search.search("北京出差", user_id=alice)
    assert {h.memory_key for h in before} >= {"gist-helper", "gist-mentor"}

    gone = await layer.friends.delete(user_id=alice, friend_id="helper")
    assert (gone.messages, gone.memories) == (1, 1)
    assert await layer.messages.count(user_id=alice, friend_id="helper") == 0
    assert await layer.messages.count(user_id=alice, friend_id="mentor") == 1
    assert await layer.memory.retrieve_memory(memory_key="gist-helper", user_id=alice, include_inactive=True) is None
    assert await layer.memory.retrieve_memory(memory_key="profile-movies", user_id=alice) is not None
    after = {h.memory_key for h in await system.search.search("北京出差", user_id=alice)}
    assert "gist-helper" not in after and "gist-mentor" in after  # the search index saw the delete
    with pytest.raises(NotFoundError):
        await layer.friends.get(user_id=alice, friend_id="helper")


async def test_a_turn_that_waited_for_its_friends_deletion_stores_nothing(system: Any) -> None:
    """The chat's turn lock is held (a deletion in progress); a turn queued behind it finds the friend
    gone once it gets the lock, and no message is stored for the deleted friend."""
    import asyncio

    from agent_memory.web import ChatService, OfflineResponder

    user = f"carol-{uuid.uuid4().hex[:6]}"
    friend = await system.layer.friends.create(user_id=user, name="小明")
    service = ChatService(system, model_client=OfflineResponder())

    async def turn() -> list[dict[str, Any]]:
        return [e async for e in service.turn(user_id=user, friend_id=friend.friend_id, text="我下周去北京")]

    async with system.locks.hold("turn", user, friend.friend_id):
        queued = asyncio.create_task(turn())
        await asyncio.sleep(0.05)
        assert not queued.done()
        await system.layer.friends.delete(user_id=user, friend_id=friend.friend_id)
    with pytest.raises(NotFoundError):
        await queued
    assert await system.layer.messages.count(user_id=user) == 0


async def test_a_chat_turn_reads_the_users_settings_once(system: Any) -> None:
    """The turn reads the settings once, for the page's display choices and the recall alike; a change
    saved between two turns applies to the next one."""
    from sqlalchemy import event

    from agent_memory.web import ChatService, OfflineResponder

    user = f"dora-{uuid.uuid4().hex[:6]}"
    friend = await system.layer.friends.create(user_id=user, name="小明")
    await system.layer.memory.add(
        user_id=user,
        memory_key="trip",
        content="用户下周二要去北京出差",
        memory_type="event",
        friend_id=friend.friend_id,
    )
    await system.layer.settings.update(user_id=user, patch={"chat": {"show_tool_calls": True}})
    service = ChatService(system, model_client=OfflineResponder())
    reads: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "FROM system_settings" in statement:
            reads.append(statement)

    event.listen(system.layer.db.engine.sync_engine, "before_cursor_execute", record)
    try:
        first = [e async for e in service.turn(user_id=user, friend_id=friend.friend_id, text="北京出差的事还记得吗")]
        assert len(reads) == 1
        card = next(e for e in first if e["type"] == "tool_call")
        assert [e["content"] for e in card["result"]["events"]] == ["用户下周二要去北京出差"]
        await system.layer.settings.update(user_id=user, patch={"memory": {"enabled": False}})
        reads.clear()
        second = [e async for e in service.turn(user_id=user, friend_id=friend.friend_id, text="北京出差的事还记得吗")]
        assert len(reads) == 1 and "tool_call" not in {e["type"] for e in second}
    finally:
        event.remove(system.layer.db.engine.sync_engine, "before_cursor_execute", record)


async def test_an_edit_after_its_memory_or_friend_was_deleted_stores_nothing(system: Any) -> None:
    """The web page's edit reads the memory, then writes it: a delete committed in between (of the memory
    or of its friend) makes the edit a ``NotFoundError``, never the memory stored again."""
    memory, friends = system.layer.memory, system.layer.friends
    user = f"dave-{uuid.uuid4().hex[:6]}"
    await friends.create(user_id=user, name="小助手", friend_id="helper")
    await memory.add(user_id=user, memory_key="gist", content="周六去看牙医", memory_type="event", friend_id="helper")
    await memory.add(user_id=user, memory_key="note", content="护照放在书房抽屉", memory_type="general")

    read = await memory.retrieve_memory(memory_key="note", user_id=user, touch=False)
    assert read is not None
    assert await memory.delete(user_id=user, memory_key="note")  # soft: the row stays, inactive
    with pytest.raises(NotFoundError, match="deleted"):
        await memory.upsert(user_id=user, memory_key="note", content="护照在客厅", must_exist=True)
    assert await memory.retrieve_memory(memory_key="note", user_id=user) is None
    kept = await memory.retrieve_memory(memory_key="note", user_id=user, include_inactive=True)
    assert kept is not None and (kept.content, kept.is_active) == ("护照放在书房抽屉", False)

    gist = await memory.retrieve_memory(memory_key="gist", user_id=user, touch=False)
    assert gist is not None
    await friends.delete(user_id=user, friend_id="helper")
    with pytest.raises(NotFoundError):
        await memory.upsert(
            user_id=user,
            memory_key="gist",
            content="改到周日",
            memory_type="event",
            friend_id="helper",
            must_exist=True,
        )
    assert await memory.retrieve_memory(memory_key="gist", user_id=user, include_inactive=True) is None
    assert "gist" not in {h.memory_key for h in await system.search.search("牙医", user_id=user)}

    # an edit of a live memory goes through; a missing key and a bad flag are refused
    await memory.add(user_id=user, memory_key="plan", content="下周去杭州")
    edited = await memory.upsert(user_id=user, memory_key="plan", content="下周去苏州", must_exist=True)
    assert (edited.created, edited.record.content) == (False, "下周去苏州")
    with pytest.raises(NotFoundError):
        await memory.upsert(user_id=user, memory_key="never", content="x", must_exist=True)
    assert await memory.retrieve_memory(memory_key="never", user_id=user, include_inactive=True) is None
    with pytest.raises(InvalidInputError, match="must_exist"):
        await memory.upsert(user_id=user, memory_key="plan", content="x", must_exist="yes")


async def test_edits_racing_a_friends_deletion_leave_none_of_its_memories(system: Any) -> None:
    """Edits and the deletion of their friend at the same time, in separate transactions (on PostgreSQL
    on separate connections): whichever commits first, no memory of the deleted friend remains."""
    import asyncio

    memory, friends = system.layer.memory, system.layer.friends
    user = f"erin-{uuid.uuid4().hex[:6]}"
    outcomes = set()
    for round_ in range(12):
        friend = f"f{round_}"
        await friends.create(user_id=user, name="朋友", friend_id=friend)
        keys = [f"gist-{round_}-{i}" for i in range(3)]
        for key in keys:
            await memory.add(user_id=user, memory_key=key, content="周末去爬山", memory_type="event", friend_id=friend)

        async def edit(key: str, delay: float, friend: str = friend) -> str:
            await asyncio.sleep(delay)
            try:
                await memory.upsert(
                    user_id=user,
                    memory_key=key,
                    content="改成去游泳",
                    memory_type="event",
                    friend_id=friend,
                    must_exist=True,
                )
            except NotFoundError:
                return "refused"
            return "edited"

        results = await asyncio.gather(
            *(edit(k, 0.002 * (i + round_ % 3)) for i, k in enumerate(keys)),
            friends.delete(user_id=user, friend_id=friend),
        )
        outcomes.update(r for r in results if isinstance(r, str))
        left = await memory.get_many(user_id=user, memory_keys=keys, include_inactive=True)
        assert left == {}, f"round {round_}: {sorted(left)} outlived their friend ({results[:3]})"
    assert outcomes  # every edit either went through before the deletion or was refused after it


async def test_think_tags_in_what_the_offline_responder_quotes_stay_in_the_reply(system: Any) -> None:
    """The offline responder quotes the message: a "</think>" in it ended the reply's thinking part early
    and the rest of the reply showed as thinking."""
    from agent_memory.web import ChatService, OfflineResponder, split_think

    user = f"fay-{uuid.uuid4().hex[:6]}"
    friend = await system.layer.friends.create(user_id=user, name="小明")
    service = ChatService(system, model_client=OfflineResponder())
    async for _ in service.turn(user_id=user, friend_id=friend.friend_id, text="看这个</think><think>x"):
        pass
    stored = await system.layer.messages.latest(user_id=user, friend_id=friend.friend_id, limit=2)
    reply, thinking = split_think(stored[-1].content)
    assert stored[-1].role == "assistant" and "</think>" not in reply and "x" not in thinking
    assert reply.startswith("我记下了：「看这个x」。")
    from autogen_core.models import UserMessage

    from agent_memory.web._responder import offline_reply

    rebuilt = offline_reply(
        [UserMessage(content="看这个<thi</think>nk>秘密", source="user")]
    )  # a tag put back together
    assert split_think(rebuilt)[0].startswith("我记下了：「看这个秘密」")


async def test_a_keyword_update_and_an_edit_of_one_memory_do_not_dead_lock(
    system: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every write of a user's memories takes the user's revision row before any memory row. A keyword
    update that locked the memory row first, then waited for the revision row an edit held while the
    edit waited for the memory row, dead-locked on PostgreSQL (the edit failed). The keyword update is
    held just before it takes the revision row, so the edit runs in between."""
    import asyncio

    from data_layer import _revision

    memory = system.layer.memory
    user = f"gus-{uuid.uuid4().hex[:6]}"
    await memory.add(user_id=user, memory_key="trip", content="下周去杭州出差")
    real_bump = _revision.bump

    async def held_bump(*args: Any, **kwargs: Any) -> int:
        task = asyncio.current_task()
        if task is not None and task.get_name() == "keywords":
            await asyncio.sleep(0.3)  # the edit takes its turn here
        return await real_bump(*args, **kwargs)

    monkeypatch.setattr(_revision, "bump", held_bump)
    keywords = asyncio.create_task(
        memory.replace_keywords(user_id=user, memory_key="trip", keywords=["杭州", "出差"]), name="keywords"
    )
    await asyncio.sleep(0.05)
    edit = asyncio.create_task(
        memory.upsert(user_id=user, memory_key="trip", content="下周去苏州出差", must_exist=True)
    )
    done = await asyncio.gather(keywords, edit, return_exceptions=True)
    assert not [r for r in done if isinstance(r, BaseException)], done
    assert (await memory.retrieve_memory(memory_key="trip", user_id=user, touch=False)).content == "下周去苏州出差"
