"""Bad input, texts and types: every stored text and structure is accepted or refused the same way on
SQLite and PostgreSQL, with an ``InvalidInputError`` that names the argument, and nothing is written."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from data_layer import (
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    AgentFusionDataLayer,
    AgentMemoryError,
    InvalidInputError,
    NewMemory,
    NewMessage,
)

NUL = "a\x00b"
SURROGATE = "a\ud800b"

Call = Callable[[AgentFusionDataLayer, str], Awaitable[Any]]

#: Every public write that stores caller text, with the bad text put in one argument.
WRITES: list[tuple[str, Call]] = [
    ("content", lambda dl, t: dl.memory.add(user_id="u1", memory_key="k", content=t)),
    ("summary", lambda dl, t: dl.memory.add(user_id="u1", memory_key="k", content="c", summary=t)),
    ("user_id", lambda dl, t: dl.memory.add(user_id=t, memory_key="k", content="c")),
    ("friend_id", lambda dl, t: dl.memory.add(user_id="u1", memory_key="k", content="c", friend_id=t)),
    ("memory_key", lambda dl, t: dl.memory.add(user_id="u1", memory_key=t, content="c")),
    ("metadata", lambda dl, t: dl.memory.add(user_id="u1", memory_key="k", content="c", metadata={"v": t})),
    ("metadata", lambda dl, t: dl.memory.add(user_id="u1", memory_key="k", content="c", metadata={t: 1})),
    ("metadata", lambda dl, t: dl.memory.add(user_id="u1", memory_key="k", content="c", metadata={"l": [[t]]})),
    ("keyword", lambda dl, t: dl.memory.add(user_id="u1", memory_key="k", content="c", keywords=[t])),
    ("content", lambda dl, t: dl.memory.upsert(user_id="u1", memory_key="k", content=t)),
    (
        "content",
        lambda dl, t: dl.memory.add_many(user_id="u1", memories=[NewMemory("ok", "fine"), NewMemory("k", t)]),
    ),
    ("content", lambda dl, t: dl.messages.append(user_id="u1", role="user", content=t)),
    ("thread_id", lambda dl, t: dl.messages.append(user_id="u1", role="user", content="c", thread_id=t)),
    (
        "external_id",
        lambda dl, t: dl.messages.append_many(user_id="u1", messages=[NewMessage("user", "c", external_id=t)]),
    ),
    ("result_full", lambda dl, t: dl.archive.save(user_id="u1", tool_name="t", result_full=t)),
    ("tool_name", lambda dl, t: dl.archive.save(user_id="u1", tool_name=t, result_full="r")),
    ("query_summary", lambda dl, t: dl.archive.save(user_id="u1", tool_name="t", result_full="r", query_summary=t)),
    ("tool_input", lambda dl, t: dl.archive.save(user_id="u1", tool_name="t", result_full="r", tool_input={"q": t})),
    ("source", lambda dl, t: dl.archive.save(user_id="u1", tool_name="t", result_full="r", sources=[t])),
    ("keyword", lambda dl, t: dl.memory.add_synonym("数据库", t)),
]


async def _nothing_stored(layer: AgentFusionDataLayer) -> None:
    assert await layer.memory.count(user_id="u1", include_inactive=True) == 0
    assert await layer.messages.count(user_id="u1") == 0
    assert await layer.archive.list_results(user_id="u1") == []
    assert await layer.memory.list_synonyms() == []


@pytest.mark.parametrize("bad", [NUL, SURROGATE], ids=["nul", "lone-surrogate"])
@pytest.mark.parametrize(("name", "call"), WRITES, ids=[f"{i}-{n}" for i, (n, _) in enumerate(WRITES)])
async def test_nul_and_lone_surrogates_are_refused_on_both_backends(
    layer: AgentFusionDataLayer, name: str, call: Call, bad: str
) -> None:
    """F4/F5: SQLite stored them, PostgreSQL raised DataError / UnicodeEncodeError; now both refuse."""
    with pytest.raises(InvalidInputError) as caught:
        await call(layer, bad)
    message = str(caught.value)
    assert name in message or "may only hold" in message or "control characters" in message, message
    assert "NUL" in message or "surrogate" in message or "may only hold" in message or "control" in message
    await _nothing_stored(layer)


async def test_a_nul_in_the_cut_off_tail_of_long_content_is_harmless(layer: AgentFusionDataLayer) -> None:
    text = "x" * 200_000 + "\x00"
    rec = await layer.memory.add(user_id="u1", memory_key="long", content=text)
    assert "\x00" not in rec.content and rec.metadata["truncation"]["original_bytes"] == 200_001


async def test_data_moves_between_backends(layer: AgentFusionDataLayer) -> None:
    """What one backend accepts the other accepts: emoji, astral CJK, RTL and control-free text round-trip."""
    text = "emoji 😀 astral 𠀀 rtl שלום tab\tnewline\n end"
    rec = await layer.memory.add(user_id="u1", memory_key="k", content=text, metadata={"note": text, "𠀀": [text]})
    back = await layer.memory.retrieve_memory(user_id="u1", memory_key="k", touch=False)
    assert back is not None and back.content == text == rec.content and back.metadata["𠀀"] == [text]


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


async def test_metadata_depth_limit(layer: AgentFusionDataLayer) -> None:
    """F8: 5,000 levels raised RecursionError; now a clear error, and the limit itself is accepted."""
    await layer.memory.add(user_id="u1", memory_key="ok", content="c", metadata=_deep(MAX_METADATA_DEPTH))
    for levels in (MAX_METADATA_DEPTH + 1, 5_000):
        with pytest.raises(InvalidInputError, match=f"more than {MAX_METADATA_DEPTH} levels"):
            await layer.memory.add(user_id="u1", memory_key="deep", content="c", metadata=_deep(levels))
    circular: dict[str, Any] = {}
    circular["self"] = circular
    with pytest.raises(InvalidInputError, match="levels"):
        await layer.memory.add(user_id="u1", memory_key="loop", content="c", metadata=circular)
    assert await layer.memory.count(user_id="u1") == 1


async def test_metadata_size_limit(layer: AgentFusionDataLayer) -> None:
    """F9: 10 MB of metadata was accepted while content is cut at 100 KB; now refused over 64 KB."""
    await layer.memory.add(user_id="u1", memory_key="ok", content="c", metadata={"v": "x" * 60_000})
    shared = ["y" * 1000] * 10
    for meta in ({"v": "x" * 10_000_000}, {"v": "x" * (MAX_METADATA_BYTES + 1)}, {"l": [shared] * 1000}):
        with pytest.raises(InvalidInputError, match="larger than 64 KB"):
            await layer.memory.add(user_id="u1", memory_key="big", content="c", metadata=meta)
    assert await layer.memory.count(user_id="u1") == 1


@pytest.mark.parametrize(
    ("meta", "message"),
    [({"when": object()}, "not a JSON value"), ({"n": float("nan")}, "JSON-serialisable"), ({(1, 2): 1}, "keys")],
)
async def test_metadata_values_must_be_json(layer: AgentFusionDataLayer, meta: dict[Any, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        await layer.memory.add(user_id="u1", memory_key="k", content="c", metadata=meta)


async def test_keywords_given_as_one_string_are_refused(layer: AgentFusionDataLayer) -> None:
    """F7: add_keywords("abc") stored the keywords a, b and c."""
    await layer.memory.add(user_id="u1", memory_key="k", content="内容")
    for call in (
        lambda: layer.memory.add_keywords(user_id="u1", memory_key="k", keywords="abc"),
        lambda: layer.memory.replace_keywords(user_id="u1", memory_key="k", keywords="abc"),
        lambda: layer.memory.remove_keywords(user_id="u1", memory_key="k", keywords="abc"),
        lambda: layer.memory.synonyms_for("abc"),
        lambda: layer.memory.add_synonyms("abc"),
    ):
        with pytest.raises(InvalidInputError, match=r"(keywords|synonyms) must be a list"):
            await call()
    assert [k.keyword for k in await layer.memory.get_keywords(user_id="u1", memory_key="k")] == []
    assert await layer.memory.add_keywords(user_id="u1", memory_key="k", keywords=("abc",)) == 1


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda dl: dl.memory.get_by_ids(user_id="u1", ids="not-ids"), "uuid.UUID"),
        (lambda dl: dl.memory.get_by_ids(user_id="u1", ids=["x"]), "uuid.UUID"),
        (lambda dl: dl.memory.store_analysis(user_id="u1", analyses=[(uuid.uuid4(), "x")]), "MemoryAnalysis"),
        (lambda dl: dl.memory.store_extracted_keywords(user_id="u1", extracted=[1]), "pairs"),
        (lambda dl: dl.memory.store_embeddings(user_id="u1", embedder="e", vectors="v"), "pairs"),
        (lambda dl: dl.memory.list_memories(user_id="u1", memory_types="profile"), "list of memory type"),
        (lambda dl: dl.memory.list_memories(user_id="u1", memory_types=["bogus"]), "unknown memory_type"),
        (lambda dl: dl.archive.save(user_id="u1", tool_name="t", result_full="r", sources="s"), "sources"),
        (lambda dl: dl.archive.save(user_id="u1", tool_name="t", result_full="r", tool_input=[1]), "mapping"),
        (lambda dl: dl.memory.add(user_id="u1", memory_key="k", content="c", keywords=["x" * 101]), "at most 100"),
    ],
)
async def test_parameter_types_are_checked(
    layer: AgentFusionDataLayer, call: Callable[[AgentFusionDataLayer], Awaitable[Any]], message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        await call(layer)
    await _nothing_stored(layer)


def test_the_root_error_covers_every_kind() -> None:
    import agent_memory
    import data_layer

    for name in ("InvalidInputError", "NotFoundError", "DuplicateError", "StorageError", "MemoryNotFoundError"):
        kind = getattr(data_layer, name)
        assert issubclass(kind, AgentMemoryError) and getattr(agent_memory, name) is kind
    assert data_layer.DataLayerError is AgentMemoryError is agent_memory.AgentMemoryError
    assert issubclass(InvalidInputError, ValueError) and issubclass(data_layer.NotFoundError, LookupError)
    assert issubclass(data_layer.DuplicateMemoryKeyError, data_layer.DuplicateError)
    assert issubclass(data_layer.UnsupportedDatabaseURLError, InvalidInputError)
