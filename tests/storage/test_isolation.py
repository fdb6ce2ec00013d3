"""Every repository method, called with another user's id, finds nothing of this user."""

from __future__ import annotations

import pytest

from data_layer import (
    AgentFusionDataLayer,
    KeywordInput,
    MemoryNotFoundError,
    MessageNotFoundError,
    NewMemory,
)

OWNER, INTRUDER = "alice", "mallory"


@pytest.fixture
async def owned(layer: AgentFusionDataLayer) -> dict[str, object]:
    rec = await layer.memory.add(
        user_id=OWNER,
        memory_key="secret",
        content="alice's diary",
        memory_type="event",
        friend_id="A",
        keywords=["diary"],
    )
    msg = await layer.messages.append(user_id=OWNER, role="user", content="hello", friend_id="A", thread_id="t")
    arc = await layer.archive.save(user_id=OWNER, tool_name="search", result_full="x" * 20_000)
    await layer.settings.update(user_id=OWNER, patch={"memory": {"rounds": 1}})
    return {"memory": rec, "message": msg, "archive": arc}


async def test_memory_reads(layer: AgentFusionDataLayer, owned: dict[str, object]) -> None:
    m = layer.memory
    assert await m.retrieve_memory(memory_key="secret", user_id=INTRUDER) is None
    assert await m.retrieve_memory(memory_key="secret", user_id=INTRUDER, include_inactive=True) is None
    assert await m.get_many(user_id=INTRUDER, memory_keys=["secret"]) == {}
    assert await m.get_by_ids(user_id=INTRUDER, ids=[owned["memory"].id]) == []
    assert (await m.list_memories(user_id=INTRUDER)).items == []
    assert (await m.list_memories(user_id=INTRUDER, friend_id="A")).items == []
    assert await m.count(user_id=INTRUDER, include_inactive=True) == 0
    assert await m.pending_keyword_extraction(user_id=INTRUDER) == []
    with pytest.raises(MemoryNotFoundError):
        await m.get_keywords(user_id=INTRUDER, memory_key="secret")


async def test_memory_writes(layer: AgentFusionDataLayer, owned: dict[str, object]) -> None:
    m = layer.memory
    assert not await m.delete(user_id=INTRUDER, memory_key="secret")
    assert not await m.delete(user_id=INTRUDER, memory_key="secret", hard=True)
    with pytest.raises(MemoryNotFoundError):
        await m.add_keywords(user_id=INTRUDER, memory_key="secret", keywords=["x"])
    with pytest.raises(MemoryNotFoundError):
        await m.replace_keywords(user_id=INTRUDER, memory_key="secret", keywords=["x"])
    with pytest.raises(MemoryNotFoundError):
        await m.remove_keywords(user_id=INTRUDER, memory_key="secret", keywords=["diary"])
    assert (
        await m.store_extracted_keywords(
            user_id=INTRUDER,
            extracted=[(owned["memory"].id, [KeywordInput("pwned")])],
        )
        == 0
    )
    # The same key for another user is a different memory, not an overwrite.
    mine = await m.upsert(user_id=INTRUDER, memory_key="secret", content="mallory's")
    assert mine.created
    await m.add_many(user_id=INTRUDER, memories=[NewMemory("other", "x")])
    rec = await m.retrieve_memory(memory_key="secret", user_id=OWNER, touch=False)
    assert rec is not None and rec.content == "alice's diary" and rec.is_active
    assert [k.keyword for k in await m.get_keywords(user_id=OWNER, memory_key="secret")] == ["diary"]


async def test_messages(layer: AgentFusionDataLayer, owned: dict[str, object]) -> None:
    msg_id = owned["message"].id
    assert await layer.messages.get(user_id=INTRUDER, message_id=msg_id) is None
    with pytest.raises(MessageNotFoundError):
        await layer.messages.neighbors(user_id=INTRUDER, message_id=msg_id)
    assert (await layer.messages.list_range(user_id=INTRUDER)).items == []
    assert (await layer.messages.list_range(user_id=INTRUDER, friend_id="A", thread_id="t")).items == []
    assert await layer.messages.latest(user_id=INTRUDER, friend_id="A") == []
    assert await layer.messages.count(user_id=INTRUDER) == 0


async def test_archive(layer: AgentFusionDataLayer, owned: dict[str, object]) -> None:
    uid = owned["archive"].uuid
    assert await layer.archive.get(user_id=INTRUDER, archive_uuid=uid) is None
    assert await layer.archive.list_results(user_id=INTRUDER) == []
    assert not await layer.archive.delete(user_id=INTRUDER, archive_uuid=uid)
    from datetime import UTC, datetime, timedelta

    assert await layer.archive.purge_older_than(user_id=INTRUDER, before=datetime.now(UTC) + timedelta(days=1)) == 0
    assert await layer.archive.get(user_id=OWNER, archive_uuid=uid) is not None


async def test_settings(layer: AgentFusionDataLayer, owned: dict[str, object]) -> None:
    assert (await layer.settings.get(user_id=INTRUDER)).memory.rounds == 3
    await layer.settings.update(user_id=INTRUDER, patch={"memory": {"rounds": 5}})
    assert (await layer.settings.get(user_id=OWNER)).memory.rounds == 1
