"""``agent-memory messages import``: all or nothing per file, re-runnable without duplicates; the data
layer's ``skip_existing`` appends and message identity behind it, on both backends."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import create_async_engine
from typer.testing import CliRunner

from agent_memory.cli import app
from data_layer import AgentFusionDataLayer, InvalidInputError, NewMessage, downgrade, normalize_url, upgrade
from data_layer._message_repo import content_hash

runner = CliRunner()
T0 = datetime(2025, 1, 1, 10, 0, tzinfo=UTC)


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


def _chat(n: int, **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"消息 {i}",
            "created_at": (T0 + timedelta(minutes=i)).isoformat(),
            **extra,
        }
        for i in range(n)
    ]


def _messages(url: str, user: str = "u1") -> list[tuple[str | None, str | None, str, str]]:
    async def go() -> list[tuple[str | None, str | None, str, str]]:
        async with AgentFusionDataLayer(url) as layer:
            page = await layer.messages.list_range(user_id=user, page_size=1000)
        return [(m.friend_id, m.thread_id, m.role, m.content) for m in page.items]

    return asyncio.run(go())


# -- the command ---------------------------------------------------------------------------------------


def test_import_twice_stores_each_message_once(db_url: str, tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "chat.jsonl", _chat(30, user_id="u1", friend_id="A"))
    first = runner.invoke(app, ["messages", "import", str(data), "--url", db_url])
    assert first.exit_code == 0, first.output
    assert "imported 30 messages for 1 user(s); skipped 0" in first.output
    again = runner.invoke(app, ["messages", "import", str(data), "--url", db_url])
    assert again.exit_code == 0, again.output
    assert "imported 0 messages for 1 user(s); skipped 30" in again.output
    assert len(_messages(db_url)) == 30
    # a longer export of the same chat adds only the new lines
    longer = _jsonl(tmp_path / "longer.jsonl", _chat(35, user_id="u1", friend_id="A"))
    out = runner.invoke(app, ["messages", "import", str(longer), "--url", db_url])
    assert "imported 5 messages" in out.output
    assert [m[3] for m in _messages(db_url)] == [f"消息 {i}" for i in range(35)]


def test_user_and_friend_options_fill_lines_without_them(db_url: str, tmp_path: Path) -> None:
    rows = [
        {"role": "user", "content": "默认的朋友", "created_at": T0.isoformat()},
        {"role": "user", "content": "自己的朋友", "friend_id": "B", "created_at": T0.isoformat()},
        {"role": "user", "content": "另一个用户", "user_id": "u2", "created_at": T0.isoformat()},
    ]
    data = _jsonl(tmp_path / "chat.jsonl", rows)
    out = runner.invoke(app, ["messages", "import", str(data), "--user", "u1", "--friend", "A", "--url", db_url])
    assert out.exit_code == 0, out.output
    assert "imported 3 messages for 2 user(s)" in out.output
    assert _messages(db_url) == [("A", None, "user", "默认的朋友"), ("B", None, "user", "自己的朋友")]
    assert _messages(db_url, "u2") == [("A", None, "user", "另一个用户")]


def test_bad_line_anywhere_imports_nothing_and_names_the_line(db_url: str, tmp_path: Path) -> None:
    rows: list[Any] = _chat(10, user_id="u1")
    for lineno, bad, cause in (
        (4, {"role": "user", "content": "no user"}, "no user_id"),
        (7, {"user_id": "u1", "role": "user", "content": "   "}, "content is empty"),
        (9, {"user_id": "u1", "role": "robot", "content": "x"}, "robot"),
        (3, {"user_id": "u1", "role": "user", "content": "x", "created_at": "2025-01-01T10:00:00"}, "time zone"),
        (10, {"user_id": "u1", "role": "user", "content": "x", "colour": "red"}, "unknown fields"),
    ):
        lines = [json.dumps(r, ensure_ascii=False) for r in rows]
        lines.insert(lineno - 1, json.dumps(bad))
        path = tmp_path / f"bad{lineno}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        out = runner.invoke(app, ["messages", "import", str(path), "--url", db_url])
        assert out.exit_code == 2, out.output
        assert f"line {lineno}" in out.stderr and cause in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) <= 2
    assert _messages(db_url) == []


def test_ids_are_identities_and_repeated_ids_must_agree(db_url: str, tmp_path: Path) -> None:
    rows = [{"user_id": "u1", "role": "user", "content": f"m{i}", "id": f"ext-{i}"} for i in range(3)]
    data = _jsonl(tmp_path / "ids.jsonl", rows)
    assert runner.invoke(app, ["messages", "import", str(data), "--url", db_url]).exit_code == 0
    edited = _jsonl(tmp_path / "edited.jsonl", [{**rows[0], "content": "edited"}, *rows[1:]])
    out = runner.invoke(app, ["messages", "import", str(edited), "--url", db_url])
    assert "imported 0 messages" in out.output  # the id is the identity: no second copy
    clash = _jsonl(tmp_path / "clash.jsonl", [rows[0], {**rows[0], "content": "other"}])
    out = runner.invoke(app, ["messages", "import", str(clash), "--url", db_url])
    assert (
        out.exit_code == 2 and "line 2: id 'ext-0' is given to two different messages (first on line 1)" in out.stderr
    )
    assert [m[3] for m in _messages(db_url)] == ["m0", "m1", "m2"]


def test_an_interrupted_import_leaves_nothing(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.progress import Progress

    monkeypatch.setattr("data_layer._message_repo.CHUNK", 10)
    calls: list[int] = []

    def advance(self: Progress, task: Any, advance: float = 1) -> None:
        calls.append(int(advance))
        raise KeyboardInterrupt  # Ctrl-C after the first chunk was inserted

    monkeypatch.setattr(Progress, "advance", advance)
    data = _jsonl(tmp_path / "chat.jsonl", _chat(35, user_id="u1"))
    out = runner.invoke(app, ["messages", "import", str(data), "--url", db_url])
    assert calls == [10]
    assert out.exit_code == 130 and "interrupted" in out.stderr
    assert _messages(db_url) == []


# -- the data layer ------------------------------------------------------------------------------------


def _msg(content: str, **kw: Any) -> NewMessage:
    return NewMessage(role=kw.pop("role", "user"), content=content, **kw)


async def test_skip_existing_identity(layer: AgentFusionDataLayer) -> None:
    base = [_msg("你好", friend_id="A", created_at=T0), _msg("在吗", friend_id="A", created_at=T0)]
    assert len(await layer.messages.append_many(user_id="u1", messages=base, skip_existing=True)) == 2
    assert await layer.messages.append_many(user_id="u1", messages=base, skip_existing=True) == []
    variants = [
        _msg("你好", friend_id="A", created_at=T0 + timedelta(seconds=1)),  # another time
        _msg("你好", friend_id="B", created_at=T0),  # another friend
        _msg("你好", friend_id="A", thread_id="t", created_at=T0),  # another thread
        _msg("你好", friend_id="A", created_at=T0, role="assistant"),  # another role
        _msg("你好!", friend_id="A", created_at=T0),  # other content
    ]
    stored = await layer.messages.append_many(user_id="u1", messages=variants, skip_existing=True)
    assert len(stored) == 5
    assert await layer.messages.append_many(user_id="u2", messages=base, skip_existing=True) != []  # another user
    # repeats inside one call are one message; without skip_existing everything is stored
    twice = [_msg("重复", created_at=T0), _msg("重复", created_at=T0)]
    assert len(await layer.messages.append_many(user_id="u3", messages=twice, skip_existing=True)) == 1
    assert len(await layer.messages.append_many(user_id="u3", messages=twice)) == 2
    assert await layer.messages.count(user_id="u1") == 7


async def test_messages_without_time_match_by_conversation_role_and_content(layer: AgentFusionDataLayer) -> None:
    chat = [_msg("ok", friend_id="A"), _msg("好的", friend_id="A"), _msg("ok", friend_id="A")]
    assert len(await layer.messages.append_many(user_id="u1", messages=chat, skip_existing=True)) == 3
    assert await layer.messages.append_many(user_id="u1", messages=chat, skip_existing=True) == []
    more = [*chat, _msg("ok", friend_id="A")]  # the conversation said "ok" a third time
    stored = await layer.messages.append_many(user_id="u1", messages=more, skip_existing=True)
    assert [m.content for m in stored] == ["ok"]
    assert await layer.messages.count(user_id="u1") == 4


async def test_external_ids(layer: AgentFusionDataLayer) -> None:
    first = [_msg("a", external_id="x-1"), _msg("b", external_id=2)]
    assert len(await layer.messages.append_many(user_id="u1", messages=first)) == 2
    with pytest.raises(InvalidInputError, match="'x-1' is already stored"):
        await layer.messages.append_many(user_id="u1", messages=[_msg("changed", external_id="x-1")])
    assert (
        await layer.messages.append_many(
            user_id="u1", messages=[_msg("changed", external_id="x-1")], skip_existing=True
        )
        == []
    )
    assert len(await layer.messages.append_many(user_id="u2", messages=first)) == 2  # ids are per user
    with pytest.raises(InvalidInputError, match="two different messages"):
        await layer.messages.append_many(
            user_id="u3", messages=[_msg("a", external_id="e"), _msg("b", external_id="e")]
        )
    for bad in ("", " ", "x" * 256, "a\nb", True, 1.5):
        with pytest.raises(InvalidInputError, match="external_id"):
            layer.messages.validate(user_id="u1", messages=[_msg("a", external_id=bad)])


@pytest.mark.parametrize("content", ["", " ", "\n\t "])
async def test_empty_content_is_refused(layer: AgentFusionDataLayer, content: str) -> None:
    with pytest.raises(InvalidInputError, match="content is empty"):
        await layer.messages.append(user_id="u1", role="user", content=content)
    with pytest.raises(InvalidInputError, match="content is empty"):
        await layer.messages.append_many(user_id="u1", messages=[_msg("fine"), _msg(content)])
    with pytest.raises(InvalidInputError, match="content is empty"):
        layer.messages.validate(user_id="u1", messages=[_msg(content)])
    assert await layer.messages.count(user_id="u1") == 0


async def test_all_users_in_one_transaction(layer: AgentFusionDataLayer, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInputError):  # a bad message for u2 stores nothing for u1 either
        await layer.messages.append_for_users({"u1": [_msg("a")], "u2": [_msg("b", role="robot")]})
    monkeypatch.setattr("data_layer._message_repo.CHUNK", 3)
    done: list[int] = []

    def progress(n: int) -> None:
        done.append(n)
        if sum(done) >= 6:
            raise RuntimeError("stop")

    batches = {"u1": [_msg(f"a{i}", created_at=T0) for i in range(5)], "u2": [_msg(f"b{i}") for i in range(5)]}
    with pytest.raises(RuntimeError):
        await layer.messages.append_for_users(batches, skip_existing=True, on_progress=progress)
    assert done == [3, 2, 3]  # two chunks of u1 and one of u2 were inserted before the failure
    assert await layer.messages.count(user_id="u1") == 0 and await layer.messages.count(user_id="u2") == 0
    stored = await layer.messages.append_for_users(batches, skip_existing=True)
    assert {u: len(v) for u, v in stored.items()} == {"u1": 5, "u2": 5}


async def test_concurrent_imports_store_once(layer: AgentFusionDataLayer, db_url: str) -> None:
    chat = [_msg(f"m{i}", created_at=T0 + timedelta(seconds=i)) for i in range(50)]
    async with AgentFusionDataLayer(db_url) as other:
        await asyncio.gather(
            layer.messages.append_many(user_id="u1", messages=chat, skip_existing=True),
            other.messages.append_many(user_id="u1", messages=chat, skip_existing=True),
        )
    assert await layer.messages.count(user_id="u1") == 50


async def test_a_many_chunk_import_numbers_messages_in_order(layer: AgentFusionDataLayer) -> None:
    """Every stored message gets its own id, ascending in the order given, across chunks and users of one
    transaction and after messages written one at a time; each id reads back its own message."""
    await layer.messages.append(user_id="u0", role="user", content="before")
    chats = {
        user: [_msg(f"{user} {i}", created_at=T0 + timedelta(seconds=i)) for i in range(1_203)] for user in ("u1", "u2")
    }
    stored = await layer.messages.append_for_users(chats, skip_existing=True)
    after = await layer.messages.append(user_id="u1", role="user", content="after")
    ids = [m.id for user in ("u1", "u2") for m in stored[user]]
    assert ids == sorted(ids) and len(set(ids)) == len(ids) == 2_406
    assert after.id > ids[-1]
    for user in ("u1", "u2"):
        for i in (0, 499, 500, 1_202):
            got = await layer.messages.get(user_id=user, message_id=stored[user][i].id)
            assert got is not None and got.content == f"{user} {i}"
    page = await layer.messages.list_range(user_id="u1", page_size=1_000)
    assert [m.content for m in page.items[:3]] == ["u1 0", "u1 1", "u1 2"]


async def test_identity_lookup_uses_the_index(db_url: str, backend: str) -> None:
    engine = create_async_engine(normalize_url(db_url))
    try:
        async with engine.connect() as conn:
            indexes = await conn.run_sync(lambda c: {i["name"]: i for i in inspect(c).get_indexes("chat_messages")})
            assert indexes["ix_chat_messages_user_content_hash"]["column_names"] == ["user_id", "content_hash"]
            assert indexes["ux_chat_messages_user_external_id"]["unique"]
            if backend == "sqlite":
                query = "SELECT content FROM chat_messages WHERE user_id = 'u' AND content_hash IN ('a', 'b')"
                plan = (await conn.execute(text(f"EXPLAIN QUERY PLAN {query}"))).all()
                assert "ix_chat_messages_user_content_hash" in " ".join(str(r) for r in plan)
    finally:
        await engine.dispose()


async def test_upgrade_hashes_the_stored_messages(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
    await upgrade(url, "0003_search_index")
    engine = create_async_engine(normalize_url(url))
    try:
        async with engine.begin() as conn:
            for i, content in enumerate(["旧消息", "old message"]):
                await conn.execute(
                    text(
                        "INSERT INTO chat_messages (user_id, friend_id, role, content, created_at) "
                        "VALUES ('u1', 'A', 'user', :c, :t)"
                    ),
                    {"c": content, "t": (T0 + timedelta(minutes=i)).replace(tzinfo=None)},
                )
        await upgrade(url)
        async with engine.connect() as conn:
            rows = (await conn.execute(text("SELECT content, content_hash FROM chat_messages"))).all()
        assert {r.content_hash for r in rows} == {content_hash("旧消息"), content_hash("old message")}
    finally:
        await engine.dispose()
    async with AgentFusionDataLayer(url) as layer:
        again = [
            _msg("旧消息", friend_id="A", created_at=T0),
            _msg("old message", friend_id="A", created_at=T0 + timedelta(minutes=1)),
        ]
        assert await layer.messages.append_many(user_id="u1", messages=again, skip_existing=True) == []
    assert await downgrade(url, "0003_search_index") == "0003_search_index"
