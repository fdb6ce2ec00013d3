"""Profile history and answers "as of" a time, on both backends: an item's earlier values with when they
held, what replaced them and their evidence; search, recall_memory and evidence recall as of a time."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_memory.history import memory_history
from agent_memory.system import MemorySystem
from data_layer import AgentFusionDataLayer, InvalidInputError, MessageRecord, NewMessage, NotFoundError

T0 = datetime(2026, 1, 2, 20, 0, tzinfo=UTC)
MOVED = T0 + timedelta(days=30)


async def moved(system: MemorySystem) -> list[MessageRecord]:
    """The user lived in 杭州, then moved to 深圳 thirty days later (two sessions, archived)."""
    said = [
        NewMessage(role="user", content="我住在杭州", friend_id="xiaozhu", created_at=T0),
        NewMessage(role="user", content="我搬到深圳了", friend_id="xiaozhu", created_at=MOVED),
    ]
    records = await system.layer.messages.append_many(user_id="u1", messages=said)
    await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    return records


async def test_a_changed_item_lists_every_version_with_its_time_successor_and_evidence(system: MemorySystem) -> None:
    first, second = await moved(system)
    versions = await memory_history(system.layer.memory, user_id="u1", memory_key="profile-residence")
    assert [v.value for v in versions] == ["住在杭州", "住在深圳"]
    old, new = versions
    assert (old.valid_from, old.valid_to, old.current) == (T0, MOVED, False)
    assert old.superseded_by == new.memory_key == "profile-residence"
    assert old.evidence_ids == (first.id,) and new.evidence_ids == (second.id, first.id)
    assert (new.valid_from, new.valid_to, new.current, new.superseded_by) == (MOVED, None, True, None)
    # the key of an earlier version names the same item
    assert await memory_history(system.layer.memory, user_id="u1", memory_key=old.memory_key) == versions
    with pytest.raises(NotFoundError, match="memory list"):
        await memory_history(system.layer.memory, user_id="u1", memory_key="profile-nothing")


async def test_search_as_of_a_time_answers_with_the_value_current_then(system: MemorySystem) -> None:
    await moved(system)
    now = await system.search.search("住在哪里 杭州 深圳", user_id="u1")
    assert [h.record.metadata["value"] for h in now if h.memory_key.startswith("profile-residence")] == ["住在深圳"]
    then = await system.search.search("住在哪里 杭州 深圳", user_id="u1", as_of=T0 + timedelta(days=5))
    residence = [h for h in then if h.memory_key.startswith("profile-residence")]
    assert [h.record.metadata["value"] for h in residence] == ["住在杭州"]
    before = await system.search.search("住在哪里 杭州 深圳", user_id="u1", as_of=T0 - timedelta(days=1))
    assert not [h for h in before if h.memory_key.startswith("profile-residence")]  # nothing said yet
    with pytest.raises(InvalidInputError, match="as_of must be timezone-aware"):
        await system.search.search("住在哪里 杭州 深圳", user_id="u1", as_of=T0.replace(tzinfo=None))


async def test_recall_memory_as_of_gives_that_versions_value_and_updated_at(system: MemorySystem) -> None:
    await moved(system)
    query = {"query": "住在哪里 杭州 深圳", "friend_id": "xiaozhu", "similarity_threshold": 0.1}
    now = await system.recall_memory(user_id="u1", request=query)
    assert [(p.content, p.updated_at) for p in now.profiles] == [("住在深圳", MOVED.date().isoformat())]
    then = await system.recall_memory(user_id="u1", request={**query, "as_of": T0 + timedelta(days=5)})
    assert [(p.content, p.updated_at) for p in then.profiles] == [("住在杭州", T0.date().isoformat())]


async def test_evidence_recall_as_of_reads_only_the_messages_up_to_then(system: MemorySystem) -> None:
    first, _ = await moved(system)
    agent = system.evidence_agent(system.scope("u1", "xiaozhu"))
    then = await agent.recall("我住在哪里？", now=MOVED + timedelta(days=1), as_of=T0 + timedelta(days=5))
    assert {e.message_id for e in then.output.evidence} == {first.id}
    now = await agent.recall("我住在哪里？", now=MOVED + timedelta(days=1))
    assert any("深圳" in e.content for e in now.output.evidence)


async def test_the_cli_mcp_and_web_page_show_the_history(system: MemorySystem, db_url: str) -> None:
    from typer.testing import CliRunner

    from agent_memory.cli import app
    from agent_memory.mcp import MemoryMcpTools

    first, second = await moved(system)
    tools = MemoryMcpTools(system, user_id="u1")
    shown = await tools.call("memory_history", {"memory_key": "profile-residence"})
    assert [(v["value"], v["current"], v["evidence_ids"]) for v in shown["versions"]] == [
        ("住在杭州", False, [first.id]),
        ("住在深圳", True, [second.id, first.id]),
    ]
    assert shown["versions"][0]["valid_to"] == MOVED.isoformat()
    asked = {"query": "住在哪里 杭州 深圳", "friend_id": "xiaozhu", "similarity_threshold": 0.1}
    recalled = await tools.call("recall_memory", {**asked, "as_of": "2026-01-05T00:00:00Z"})
    assert [p["content"] for p in recalled["profiles"]] == ["住在杭州"]
    out = await asyncio.to_thread(
        CliRunner().invoke, app, ["memory", "history", "profile-residence", "-u", "u1", "--json", "--url", db_url]
    )
    assert out.exit_code == 0, out.output
    assert [v["value"] for v in json.loads(out.output)] == ["住在杭州", "住在深圳"]
    missing = await asyncio.to_thread(
        CliRunner().invoke, app, ["memory", "history", "nope", "-u", "u1", "--url", db_url]
    )
    assert missing.exit_code == 2 and "no memory 'nope'" in missing.output, missing.output


async def test_a_memory_past_its_expires_at_is_not_returned_as_current(system: MemorySystem, db_url: str) -> None:
    from typer.testing import CliRunner

    from agent_memory.cli import app
    from agent_memory.history import with_expiry
    from agent_memory.mcp import MemoryMcpTools

    memory = system.layer.memory
    await memory.add(
        user_id="u1",
        memory_key="trip",
        content="下周去成都出差",
        memory_type="general",
        metadata=with_expiry({"topic": "出行"}, T0 + timedelta(days=7)),
        created_at=T0,
    )
    await MemoryMcpTools(system, user_id="u1").call(
        "add_memory", {"memory_key": "trip-mcp", "content": "周末去成都看熊猫", "expires_at": "2026-01-04T00:00:00Z"}
    )
    cli = ["memory", "add", "trip-cli", "成都的火锅店订好了", "-u", "u1", "--url", db_url]
    invoked = await asyncio.to_thread(CliRunner().invoke, app, [*cli, "--expires-at", "2026-01-04T12:00:00+08:00"])
    assert invoked.exit_code == 0, invoked.output

    async def found(now: datetime) -> set[str]:
        return {h.memory_key for h in await system.search.search("成都", user_id="u1", now=now)}

    assert await found(T0) == {"trip", "trip-mcp", "trip-cli"}
    assert await found(datetime(2026, 1, 4, 12, tzinfo=UTC)) == {"trip"}  # both weekend plans lapsed
    assert await found(T0 + timedelta(days=8)) == set()
    # as of a time before its end, an expired memory is what held then (the others were stored later)
    then = await system.search.search("成都", user_id="u1", as_of=T0 + timedelta(days=1), now=T0 + timedelta(days=8))
    assert {h.memory_key for h in then} == {"trip"}
    naive = await asyncio.to_thread(
        CliRunner().invoke,
        app,
        ["memory", "add", "x", "成都", "-u", "u1", "--expires-at", "2026-01-05T00:00:00", "--url", db_url],
    )
    assert naive.exit_code == 2 and "--expires-at needs a time zone" in naive.output


async def test_every_edit_of_a_profile_item_keeps_the_earlier_value(system: MemorySystem, db_url: str) -> None:
    """An item changed by hand keeps its earlier value as the archiver's changes do: after the web page's
    edit (PATCH), ``memory add --replace`` and MCP update_memory, ``memory history KEY`` lists each earlier
    value, superseded by the item, and the answer as of a time before the edit is the earlier value."""
    import httpx
    from typer.testing import CliRunner

    from agent_memory.cli import app
    from agent_memory.mcp import MemoryMcpTools
    from agent_memory.web import create_app

    memory = system.layer.memory
    await memory.add(user_id="u1", memory_key="profile-diet", content="饮食: 不吃辣", memory_type="profile")
    before_edits = datetime.now(UTC)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(system)), base_url="http://127.0.0.1"
    ) as client:
        assert (await client.post("/api/session", json={"name": "u1"})).status_code == 200
        edited = await client.patch("/api/memories/profile-diet", json={"content": "饮食: 爱吃辣"})
        assert edited.status_code == 200, edited.text
    replaced = await asyncio.to_thread(
        CliRunner().invoke,
        app,
        ["memory", "add", "profile-diet", "饮食: 少吃辣", "-t", "profile", "--replace", "-u", "u1", "--url", db_url],
    )
    assert replaced.exit_code == 0 and "replaced" in replaced.output, replaced.output
    memory._changed("u1")  # the CLI wrote from another system
    await MemoryMcpTools(system, user_id="u1").call(
        "update_memory", {"memory_key": "profile-diet", "content": "饮食: 不吃香菜"}
    )
    out = await asyncio.to_thread(
        CliRunner().invoke, app, ["memory", "history", "profile-diet", "-u", "u1", "--json", "--url", db_url]
    )
    assert out.exit_code == 0, out.output
    versions = json.loads(out.output)
    assert [v["content"] for v in versions] == ["饮食: 不吃辣", "饮食: 爱吃辣", "饮食: 少吃辣", "饮食: 不吃香菜"]
    assert [v["current"] for v in versions] == [False, False, False, True]
    assert all(v["valid_to"] and v["superseded_by"] for v in versions[:3])
    page = await memory.list_memories(user_id="u1", limit=50)
    assert [m.content for m in page.items] == ["饮食: 不吃香菜"]  # the versions are history, not current
    found = await system.search.search("饮食 辣", user_id="u1", as_of=before_edits, min_relevance_score=0.0)
    assert [h.record.content for h in found] == ["饮食: 不吃辣"]


async def test_an_item_whose_key_holds_the_separator_keeps_a_history_of_its_own(system: MemorySystem) -> None:
    """``pet--cat`` is an item of its own, not a version of ``pet``: each lists only its own values, and
    the answer as of a time before an edit of one is not the other's value."""
    from agent_memory.history import revise, versions_at

    memory = system.layer.memory
    await memory.add(user_id="u1", memory_key="pet", memory_type="profile", content="宠物: 猫叫咪咪")
    await memory.add(user_id="u1", memory_key="pet--cat", memory_type="profile", content="猫的颜色: 白色")
    before = datetime.now(UTC)
    await revise(memory, user_id="u1", memory_key="pet--cat", content="猫的颜色: 黑色", memory_type="profile")

    assert [v.content for v in await memory_history(memory, user_id="u1", memory_key="pet")] == ["宠物: 猫叫咪咪"]
    own = await memory_history(memory, user_id="u1", memory_key="pet--cat")
    assert [(v.content, v.current) for v in own] == [("猫的颜色: 白色", False), ("猫的颜色: 黑色", True)]
    # a version's own key still finds its item's history
    assert [v.content for v in await memory_history(memory, user_id="u1", memory_key=own[0].memory_key)] == [
        "猫的颜色: 白色",
        "猫的颜色: 黑色",
    ]
    then = await versions_at(memory, user_id="u1", at=before)
    assert {k: r.content for k, r in then.items()} == {"pet--cat": "猫的颜色: 白色"}


async def test_the_kept_version_is_written_inactive_in_one_step(system: MemorySystem, monkeypatch: Any) -> None:
    """No step of keeping a version leaves it active: a delete after the write (the old two steps) would
    leave it current for search and recall if it failed; here deleting fails and the edit still keeps an
    inactive version."""
    from agent_memory.history import memory_history, revise

    memory = system.layer.memory
    await memory.add(user_id="u1", memory_key="city", memory_type="profile", content="居住地: 杭州")

    async def no_delete(**_: Any) -> bool:
        raise RuntimeError("the second step failed")

    monkeypatch.setattr(memory, "delete", no_delete)
    await revise(memory, user_id="u1", memory_key="city", content="居住地: 深圳", memory_type="profile")
    page = await memory.list_memories(user_id="u1", limit=10)
    assert [r.content for r in page.items] == ["居住地: 深圳"]  # only the current value is active
    versions = await memory_history(memory, user_id="u1", memory_key="city")
    assert [v.content for v in versions] == ["居住地: 杭州", "居住地: 深圳"]


async def test_an_item_with_a_key_near_the_length_limit_keeps_every_version(system: MemorySystem, db_url: str) -> None:
    """A 250-character key leaves no room for ``--`` and a 13-digit number: its versions are kept under a
    shortened stem with a hash of the whole key, and its history (by its key or a version's) lists every
    value after the web page's, the CLI's and MCP's edits; a second long key that starts alike keeps a
    history of its own."""
    import httpx
    from typer.testing import CliRunner

    from agent_memory.cli import app
    from agent_memory.history import versions_at
    from agent_memory.mcp import MemoryMcpTools
    from agent_memory.web import create_app

    memory = system.layer.memory
    key, twin = "profile-" + "a" * 237 + "-diet", "profile-" + "a" * 237 + "-pets"
    assert len(key) == len(twin) == 250
    await memory.add(user_id="u1", memory_key=key, content="饮食: 不吃辣", memory_type="profile")
    await memory.add(user_id="u1", memory_key=twin, content="宠物: 一只猫", memory_type="profile")
    before_edits = datetime.now(UTC)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(system)), base_url="http://127.0.0.1"
    ) as client:
        assert (await client.post("/api/session", json={"name": "u1"})).status_code == 200
        edited = await client.patch(f"/api/memories/{key}", json={"content": "饮食: 爱吃辣"})
        assert edited.status_code == 200, edited.text
        assert (await client.patch(f"/api/memories/{twin}", json={"content": "宠物: 两只猫"})).status_code == 200
    replaced = await asyncio.to_thread(
        CliRunner().invoke,
        app,
        ["memory", "add", key, "饮食: 少吃辣", "-t", "profile", "--replace", "-u", "u1", "--url", db_url],
    )
    assert replaced.exit_code == 0 and "replaced" in replaced.output, replaced.output
    memory._changed("u1")  # the CLI wrote from another system
    await MemoryMcpTools(system, user_id="u1").call("update_memory", {"memory_key": key, "content": "饮食: 不吃香菜"})

    versions = await memory_history(memory, user_id="u1", memory_key=key)
    assert [v.content for v in versions] == ["饮食: 不吃辣", "饮食: 爱吃辣", "饮食: 少吃辣", "饮食: 不吃香菜"]
    assert [v.current for v in versions] == [False, False, False, True]
    assert all(len(v.memory_key) <= 255 and v.memory_key != key for v in versions[:3])
    assert versions[-1].memory_key == key
    assert await memory_history(memory, user_id="u1", memory_key=versions[0].memory_key) == versions
    assert [v.content for v in await memory_history(memory, user_id="u1", memory_key=twin)] == [
        "宠物: 一只猫",
        "宠物: 两只猫",
    ]
    then = await versions_at(memory, user_id="u1", at=before_edits)
    assert sorted(r.content for r in then.values()) == ["宠物: 一只猫", "饮食: 不吃辣"]
    found = await system.search.search("饮食 辣", user_id="u1", as_of=before_edits, min_relevance_score=0.0)
    assert [h.record.content for h in found] == ["饮食: 不吃辣"]


async def test_two_edits_of_one_item_at_once_keep_every_value(layer: AgentFusionDataLayer, db_url: str) -> None:
    """Two edits from two processes (two data layers on one database: the web page of one server, MCP of
    another) that both read 杭州 before either writes: the one that commits second reads the item again
    and keeps the first one's value as a version, so no value is lost and 杭州 is kept once."""
    from agent_memory.history import revise

    await layer.memory.add(user_id="u1", memory_key="city", memory_type="profile", content="居住地: 杭州")
    both_read = asyncio.Barrier(2)

    async with AgentFusionDataLayer(db_url) as other:
        edits = []
        for memory in (layer.memory, other.memory):
            read = memory.retrieve_memory
            first = asyncio.Event()

            async def reading_together(*, _read: Any = read, _first: asyncio.Event = first, **kwargs: Any) -> Any:
                record = await _read(**kwargs)
                if not _first.is_set():  # each edit's first read waits for the other's: both saw 杭州
                    _first.set()
                    await asyncio.wait_for(both_read.wait(), timeout=60)
                return record

            memory.retrieve_memory = reading_together
            edits.append(memory)
        await asyncio.gather(
            revise(edits[0], user_id="u1", memory_key="city", content="居住地: 深圳", memory_type="profile"),
            revise(edits[1], user_id="u1", memory_key="city", content="居住地: 上海", memory_type="profile"),
        )
    fresh = AgentFusionDataLayer(db_url)
    async with fresh:
        versions = await memory_history(fresh.memory, user_id="u1", memory_key="city")
        current = await fresh.memory.retrieve_memory(user_id="u1", memory_key="city", touch=False)
    values = [v.content for v in versions]
    assert values[0] == "居住地: 杭州" and sorted(values[1:]) == ["居住地: 上海", "居住地: 深圳"]
    assert [v.current for v in versions] == [False, False, True]
    assert current is not None and current.content == values[2]
    middle = versions[1]
    assert middle.superseded_by == "city" and middle.valid_to is not None and middle.valid_from <= middle.valid_to


async def test_an_edit_expecting_content_another_edit_changed_writes_nothing(system: MemorySystem) -> None:
    from data_layer import ExpectedContent, NewMemory, StaleMemoryError

    memory = system.layer.memory
    await memory.add(user_id="u1", memory_key="city", memory_type="profile", content="居住地: 杭州")
    with pytest.raises(StaleMemoryError, match="read it again"):
        await memory.upsert(
            user_id="u1",
            memory_key="city",
            content="居住地: 深圳",
            memory_type="profile",
            expect=ExpectedContent("居住地: 北京"),
            keep=NewMemory(memory_key="city--1", content="居住地: 北京"),
        )
    with pytest.raises(StaleMemoryError):  # expecting no item where there is one
        await memory.upsert(user_id="u1", memory_key="city", content="居住地: 深圳", expect=ExpectedContent(None))
    current = await memory.retrieve_memory(user_id="u1", memory_key="city", touch=False)
    assert current is not None and current.content == "居住地: 杭州"
    assert await memory.retrieve_memory(user_id="u1", memory_key="city--1", include_inactive=True) is None
    # what was read still holds: the edit and its kept version commit together, the version inactive
    await memory.upsert(
        user_id="u1",
        memory_key="city",
        content="居住地: 深圳",
        memory_type="profile",
        expect=ExpectedContent("居住地: 杭州"),
        keep=NewMemory(memory_key="city--1", content="居住地: 杭州"),
    )
    kept = await memory.retrieve_memory(user_id="u1", memory_key="city--1", include_inactive=True)
    assert kept is not None and not kept.is_active and kept.content == "居住地: 杭州"


async def test_an_edit_between_the_archivers_read_and_its_write_is_kept(system: MemorySystem, monkeypatch: Any) -> None:
    """The user corrects the item on the web page while the archiver, having read 杭州, applies 我搬到深圳了
    (said in February): the archiver reads again and finds the correction, made now, newer than what it
    applies, so 深圳 becomes history and the correction stays current; every value is kept once (without
    the read again, the correction was overwritten and 杭州 kept twice)."""
    from agent_memory.history import revise

    memory = system.layer.memory
    said = NewMessage(role="user", content="我住在杭州", friend_id="xiaozhu", created_at=T0)
    await system.layer.messages.append_many(user_id="u1", messages=[said])
    await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    moved = NewMessage(role="user", content="我搬到深圳了", friend_id="xiaozhu", created_at=MOVED)
    await system.layer.messages.append_many(user_id="u1", messages=[moved])
    read = memory.retrieve_memory
    edited = False

    async def edit_after_the_read(**kwargs: Any) -> Any:
        nonlocal edited
        record = await read(**kwargs)
        if kwargs.get("memory_key") == "profile-residence" and not edited:
            edited = True  # the web page's edit commits after the archiver read the item
            monkeypatch.setattr(memory, "retrieve_memory", read)
            await revise(
                memory, user_id="u1", memory_key="profile-residence", content="居住地: 宁波", memory_type="profile"
            )
            monkeypatch.setattr(memory, "retrieve_memory", edit_after_the_read)
        return record

    monkeypatch.setattr(memory, "retrieve_memory", edit_after_the_read)
    await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    monkeypatch.setattr(memory, "retrieve_memory", read)
    assert edited
    contents = [v.content for v in await memory_history(memory, user_id="u1", memory_key="profile-residence")]
    assert len(contents) == 3 and "杭州" in contents[0] and "深圳" in contents[1] and contents[2] == "居住地: 宁波"
