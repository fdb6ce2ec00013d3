"""MessageRepository, ArchiveRepository and SettingsRepository on both backends."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event

from data_layer import AgentFusionDataLayer, InvalidInputError, MessageNotFoundError, NewMessage

T0 = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)


async def _conversation(layer: AgentFusionDataLayer, n: int = 10) -> list[int]:
    msgs = [
        NewMessage(
            role="user" if i % 2 == 0 else "assistant",
            content=f"m{i}",
            friend_id="A",
            thread_id="t1",
            created_at=T0 + timedelta(minutes=i),
        )
        for i in range(n)
    ]
    records = await layer.messages.append_many(user_id="u1", messages=msgs)
    return [r.id for r in records]


async def test_append_returns_increasing_ids(layer: AgentFusionDataLayer) -> None:
    ids = await _conversation(layer)
    assert ids == sorted(ids) and len(set(ids)) == 10
    one = await layer.messages.append(user_id="u1", role="user", content="later", friend_id="A", thread_id="t1")
    assert one.id > ids[-1]
    assert (await layer.messages.get(user_id="u1", message_id=one.id)) == one


async def test_concurrent_appends_share_transactions_and_keep_each_chats_order(layer: AgentFusionDataLayer) -> None:
    """Chat turns of many users append at the same time: on SQLite their appends are written together
    (group commit), and each caller still gets exactly its own messages, stored in the order it sent them."""
    transactions: list[int] = []
    event.listen(layer.db.engine.sync_engine, "begin", lambda _conn: transactions.append(1))

    async def chat(user: str) -> list[str]:
        said = []
        for i in range(5):
            stored = await layer.messages.append(user_id=user, friend_id="f1", role="user", content=f"{user} 第{i}句")
            said.append(stored.content)
        return said

    users = [f"u{k}" for k in range(8)]
    replies = await asyncio.gather(*(chat(u) for u in users))
    written = len(transactions)
    if layer.db.backend == "sqlite":  # one writer at a time: appends at the same time share a transaction
        assert written < 20, written  # 40 appends, one transaction each before
    else:  # PostgreSQL: each its own (a batch would lock every user in it)
        assert written == 40, written
    for user, said in zip(users, replies, strict=True):
        assert said == [f"{user} 第{i}句" for i in range(5)]
        stored = await layer.messages.latest(user_id=user, friend_id="f1", limit=10)
        assert [m.content for m in stored] == said
        assert [m.id for m in stored] == sorted(m.id for m in stored)


async def test_list_range_pages_in_order_with_filters(layer: AgentFusionDataLayer) -> None:
    await _conversation(layer)
    await layer.messages.append(user_id="u1", role="user", content="other friend", friend_id="B", created_at=T0)
    seen: list[str] = []
    cursor = None
    while True:
        page = await layer.messages.list_range(user_id="u1", friend_id="A", page_size=4, cursor=cursor)
        seen.extend(m.content for m in page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [f"m{i}" for i in range(10)]
    users = await layer.messages.list_range(user_id="u1", friend_id="A", role="user")
    assert [m.content for m in users.items] == ["m0", "m2", "m4", "m6", "m8"]
    window = await layer.messages.list_range(
        user_id="u1", since=T0 + timedelta(minutes=3), until=T0 + timedelta(minutes=5)
    )
    assert [m.content for m in window.items] == ["m3", "m4"]
    latest = await layer.messages.latest(user_id="u1", friend_id="A", limit=3)
    assert [m.content for m in latest] == ["m7", "m8", "m9"]


async def test_list_range_pages_newest_first_through_equal_times(layer: AgentFusionDataLayer) -> None:
    """Two messages share each time stamp: the id breaks the tie, so no page repeats or skips one, in
    either direction, and another user's message at the same times never shows."""
    for i in range(11):
        await layer.messages.append(
            user_id="u1", role="user", content=f"m{i}", friend_id="A", created_at=T0 + timedelta(minutes=i // 2)
        )
    await layer.messages.append(user_id="u2", role="user", content="other user", friend_id="A", created_at=T0)
    for newest_first in (False, True):
        seen: list[str] = []
        cursor = None
        while True:
            page = await layer.messages.list_range(
                user_id="u1", friend_id="A", page_size=3, cursor=cursor, newest_first=newest_first
            )
            seen.extend(m.content for m in page.items)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        in_order = [f"m{i}" for i in range(11)]
        assert seen == (in_order[::-1] if newest_first else in_order)
    first = (await layer.messages.list_range(user_id="u1", page_size=1)).items[0]
    assert first.created_at == T0 and first.created_at.tzinfo is not None


async def test_neighbors_stay_in_the_conversation(layer: AgentFusionDataLayer) -> None:
    ids = await _conversation(layer)
    await layer.messages.append(
        user_id="u1",
        role="user",
        content="other thread",
        friend_id="A",
        thread_id="t2",
        created_at=T0 + timedelta(minutes=5, seconds=30),
    )
    around = await layer.messages.neighbors(user_id="u1", message_id=ids[5], before=2, after=2)
    assert [m.content for m in around] == ["m3", "m4", "m5", "m6", "m7"]
    edge = await layer.messages.neighbors(user_id="u1", message_id=ids[0], before=3, after=0)
    assert [m.content for m in edge] == ["m0"]
    with pytest.raises(MessageNotFoundError):
        await layer.messages.neighbors(user_id="u1", message_id=ids[-1] + 100)


async def test_archive_save_get_list_delete(layer: AgentFusionDataLayer) -> None:
    full = "段落" * 30_000
    rec = await layer.archive.save(
        user_id="u1",
        tool_name="search_docs",
        result_full=full,
        conversation_id="c1",
        tool_input={"q": "权限管理"},
        query_summary="权限管理",
        result_summary="摘要",
        sources=["doc-1"],
    )
    assert rec.result_length == 60_000
    got = await layer.archive.get(user_id="u1", archive_uuid=rec.uuid.upper())
    assert got is not None and got.result_full == full and got.tool_input == {"q": "权限管理"}
    assert [r.uuid for r in await layer.archive.list_results(user_id="u1", conversation_id="c1")] == [rec.uuid]
    assert await layer.archive.list_results(user_id="u1", conversation_id="c2") == []
    assert await layer.archive.delete(user_id="u1", archive_uuid=rec.uuid)
    assert await layer.archive.get(user_id="u1", archive_uuid=rec.uuid) is None


async def test_archive_purge_older_than(layer: AgentFusionDataLayer) -> None:
    await layer.archive.save(user_id="u1", tool_name="t", result_full="old", created_at=T0)
    new = await layer.archive.save(user_id="u1", tool_name="t", result_full="new")
    assert await layer.archive.purge_older_than(user_id="u1", before=T0 + timedelta(days=1)) == 1
    assert [r.uuid for r in await layer.archive.list_results(user_id="u1")] == [new.uuid]


async def test_settings_defaults_update_and_validation(layer: AgentFusionDataLayer) -> None:
    defaults = await layer.settings.get(user_id="u1")
    assert defaults.memory.rounds == 3 and defaults.chat.show_tool_calls is False
    updated = await layer.settings.update(
        user_id="u1", patch={"memory": {"rounds": 2}, "chat": {"show_thinking": True}}
    )
    assert updated.memory.rounds == 2 and updated.chat.show_thinking is True
    assert (await layer.settings.get(user_id="u1")) == updated
    with pytest.raises(InvalidInputError, match=r"memory.rounds"):
        await layer.settings.update(user_id="u1", patch={"memory": {"rounds": 9}})
    with pytest.raises(InvalidInputError, match=r"similarity_threshold"):
        await layer.settings.update(user_id="u1", patch={"memory": {"similarity_threshold": 1.5}})
    with pytest.raises(InvalidInputError, match="unknown settings section"):
        await layer.settings.update(user_id="u1", patch={"colour": {"x": 1}})
    with pytest.raises(InvalidInputError, match=r"memory.roundz: unknown setting \(known: enabled, rounds"):
        await layer.settings.update(user_id="u1", patch={"memory": {"roundz": 2}})
    assert (await layer.settings.get(user_id="u1")).memory.rounds == 2, "a refused update changes nothing"
