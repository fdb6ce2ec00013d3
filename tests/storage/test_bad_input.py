"""Bad input gets a clear error (or the documented behaviour) and changes nothing."""

from __future__ import annotations

from datetime import datetime

import pytest

from agent_memory.settings import SettingsError, load_settings
from data_layer import (
    AgentFusionDataLayer,
    DuplicateMemoryKeyError,
    InvalidInputError,
    NewMemory,
    UnsupportedDatabaseURLError,
    normalize_url,
)
from data_layer._validation import encode_cursor


async def test_oversized_content_refused_when_asked(layer: AgentFusionDataLayer) -> None:
    with pytest.raises(InvalidInputError, match="at most 102400"):
        await layer.memory.add(user_id="u1", memory_key="big", content="x" * 200_000, on_oversize="error")
    assert await layer.memory.count(user_id="u1") == 0


@pytest.mark.parametrize("bad", ["memory", "PROFILE", "", 3, None])
async def test_unknown_memory_type(layer: AgentFusionDataLayer, bad: object) -> None:
    with pytest.raises(InvalidInputError, match=r"unknown memory_type .* use one of: user_preference"):
        await layer.memory.add(user_id="u1", memory_key="k", content="x", memory_type=bad)


async def test_duplicate_key_says_use_upsert_and_keeps_original(layer: AgentFusionDataLayer) -> None:
    await layer.memory.add(user_id="u1", memory_key="k", content="original")
    with pytest.raises(DuplicateMemoryKeyError, match="upsert\\(\\) in Python"):
        await layer.memory.add(user_id="u1", memory_key="k", content="second")
    await layer.memory.delete(user_id="u1", memory_key="k")
    with pytest.raises(DuplicateMemoryKeyError, match="deleted"):
        await layer.memory.add(user_id="u1", memory_key="k", content="third")
    with pytest.raises(DuplicateMemoryKeyError):
        await layer.memory.add_many(user_id="u1", memories=[NewMemory("new", "n"), NewMemory("k", "x")])
    assert await layer.memory.get_many(user_id="u1", memory_keys=["new"]) == {}, "a refused batch writes nothing"
    rec = await layer.memory.retrieve_memory(memory_key="k", user_id="u1", include_inactive=True, touch=False)
    assert rec is not None and rec.content == "original"


async def test_duplicate_key_inside_one_batch(layer: AgentFusionDataLayer) -> None:
    with pytest.raises(InvalidInputError, match="appears twice"):
        await layer.memory.add_many(user_id="u1", memories=[NewMemory("a", "1"), NewMemory("a", "2")])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"memory_key": "has space"}, "may only hold letters"),
        ({"memory_key": "x" * 300}, "at most 255"),
        ({"memory_key": ""}, "must not be empty"),
        ({"content": "\u200b\ufeff \u200d"}, "content is empty"),  # zero-width characters show nothing
        ({"user_id": "\u200b"}, "non-empty id"),
        # fields the library reads itself: evidence ids, the conversation (neighbour lifting), who said it, a date
        ({"metadata": {"source_message_ids": [1, "2"]}}, "source_message_ids must be a list"),
        ({"metadata": {"source_message_ids": [0]}}, "positive integers"),
        ({"metadata": {"source_message_ids": 5}}, "source_message_ids must be a list"),
        ({"metadata": {"session_id": {"a": 1}}}, "session_id must be a conversation id"),
        ({"metadata": {"session_id": True}}, "session_id must be a conversation id"),
        ({"metadata": {"speaker": 7}}, "speaker must be the name of who said it"),
        ({"metadata": {"speaker": "  "}}, "speaker must be the name of who said it"),
        ({"metadata": {"speaker": "x" * 129}}, "speaker must be the name of who said it"),
        ({"metadata": {"date": {"y": 1}}}, "metadata.date must be text"),
        ({"user_id": True}, "str or int"),
        ({"user_id": None}, "user_id is required"),
        ({"user_id": " u1"}, "surrounding spaces"),
        ({"friend_id": 1.5}, "friend_id must be a str or int"),
        ({"content": b"bytes"}, "content must be a str"),
        ({"metadata": {"when": datetime(2025, 1, 1)}}, "JSON-serialisable"),
        ({"metadata": ["not", "a", "dict"]}, "must be a mapping"),
        ({"created_at": datetime(2025, 1, 1)}, "timezone-aware"),
        ({"summary": "s" * 3000}, "at most 2000"),
        ({"keywords": [("kw", 1.5)]}, "out of range"),
        ({"keywords": "single string"}, "keywords must be a list"),
    ],
)
async def test_invalid_memory_fields(layer: AgentFusionDataLayer, kwargs: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"user_id": "u1", "memory_key": "k", "content": "x", **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        await layer.memory.add(**fields)
    assert await layer.memory.count(user_id="u1", include_inactive=True) == 0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda dl: dl.memory.list_memories(user_id="u1", limit=0), "limit=0 is out of range"),
        (lambda dl: dl.memory.list_memories(user_id="u1", limit=5000), "out of range; use 1 to 1000"),
        (lambda dl: dl.memory.list_memories(user_id="u1", cursor="garbage!"), "cursor is not one this library"),
        (lambda dl: dl.memory.list_memories(user_id="u1", memory_types=[]), "must not be empty"),
        (lambda dl: dl.messages.list_range(user_id="u1", page_size=-1), "out of range"),
        *(  # forged cursors: a time without its zone, no time, an id out of range
            (lambda dl, c=cursor: dl.messages.list_range(user_id="u1", cursor=c), "cursor is not one this library")
            for cursor in (
                encode_cursor(["2026-03-01T12:00:00", 5]),
                encode_cursor(["yesterday", 5]),
                encode_cursor(["2026-03-01T12:00:00+00:00", 2**70]),
                encode_cursor(["2026-03-01T12:00:00+00:00", True]),
            )
        ),
        *(  # the same rule for the memory listing's cursors (time, memory id)
            (lambda dl, c=cursor: dl.memory.list_memories(user_id="u1", cursor=c), "cursor is not one this library")
            for cursor in (
                encode_cursor(["2026-03-01T12:00:00", "7d4f1c9e-2a6b-4c3d-9e8f-0a1b2c3d4e5f"]),
                encode_cursor(["2026-03-01T12:00:00+00:00", "not-a-uuid"]),
            )
        ),
        (lambda dl: dl.messages.append(user_id="u1", role="robot", content="x"), "role 'robot' unknown"),
        (
            lambda dl: dl.messages.append(user_id="u1", role="user", content="x" * (1024 * 1024 + 1)),
            "(?i)archive",
        ),
        (lambda dl: dl.messages.neighbors(user_id="u1", message_id=1, before=1000), "out of range"),
        (lambda dl: dl.archive.get(user_id="u1", archive_uuid="not-a-uuid"), "not an archive uuid"),
        (lambda dl: dl.memory.add_synonym("db", "DB"), "its own synonym"),
    ],
)
async def test_invalid_arguments(layer: AgentFusionDataLayer, call, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        await call(layer)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "empty"),
        ("not a url", "malformed"),
        ("mysql://root@localhost/db", "unsupported database driver 'mysql'"),
        ("postgresql+asyncpg://u@h/db", "unsupported database driver"),
        ("sqlite+aiosqlite://", "in-memory SQLite is not supported"),
        ("postgresql://u@h", "names no database"),
    ],
)
def test_bad_database_urls(url: str, message: str) -> None:
    with pytest.raises(UnsupportedDatabaseURLError, match=message):
        normalize_url(url)
    with pytest.raises(UnsupportedDatabaseURLError):
        AgentFusionDataLayer(url)


def test_plain_urls_get_the_async_driver() -> None:
    assert normalize_url("sqlite:///x.db").drivername == "sqlite+aiosqlite"
    assert normalize_url("postgres://u@h/db").drivername == "postgresql+psycopg"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MEMORY_RECALL_ROUNDS": "9"}, r"MEMORY_RECALL_ROUNDS='9'.*allowed: 1 to 5"),
        (
            {"MEMORY_RECALL_SIMILARITY_THRESHOLD": "1.5"},
            r"MEMORY_RECALL_SIMILARITY_THRESHOLD.*allowed: 0.0 to 1.0",
        ),
        (
            {"MEMORY_SEARCH_DEFAULT_MODE": "fuzzy"},
            r"MEMORY_SEARCH_DEFAULT_MODE.*allowed: keyword, semantic, hybrid",
        ),
        ({"MEMORY_TOOLS_MAX_RESULTS_PER_SEARCH": "11"}, r"MEMORY_TOOLS_MAX_RESULTS_PER_SEARCH.*1 to 10"),
        ({"MEMORY_CHAT_SHOW_TOOL_CALLS": "maybe"}, r"MEMORY_CHAT_SHOW_TOOL_CALLS.*true or false"),
        ({"MEMORY_SEARCH_KEYWORD_WEIGHT": "0.9"}, r"must add up to 1.0"),
    ],
)
def test_out_of_range_settings_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    monkeypatch.chdir("/")  # no stray .env
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError, match=message):
        load_settings()


def test_settings_read_env_and_dotenv(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    (tmp_path / ".env").write_text("MEMORY_RECALL_ROUNDS=4\nMEMORY_SEARCH_HALF_LIFE_DAYS=10\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMORY_SEARCH_HALF_LIFE_DAYS", "20")
    s = load_settings()
    assert s.memory_recall_rounds == 4  # from .env
    assert s.memory_search_half_life_days == 20  # the environment wins over .env
    assert s.user_defaults().memory.rounds == 4


def test_visible_text_and_the_archivers_hook_refuse_wrong_types() -> None:
    from agent_memory.formation import SessionArchiver
    from data_layer import has_visible_text

    assert has_visible_text("a\u200b") and not has_visible_text("\u200b\ufeff \u2060")
    with pytest.raises(InvalidInputError, match="text must be a str, got int"):
        has_visible_text(5)
    with pytest.raises(TypeError, match="on_archived must be an async function"):
        SessionArchiver(None, on_archived="refresh")
