"""The conversation rules' inputs, on both backends where storage is involved: which memories ask
something, who said them (stored values read alike on SQLite and PostgreSQL), which turn follows which,
and who a query names."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text

from agent_memory.search import HybridMemorySearch
from agent_memory.search._index import IndexedMemory, UserIndex, turn_order
from agent_memory.search._speakers import SpeakerNames
from data_layer import AgentFusionDataLayer, NewMemory

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

ASKS = {
    "plain": ("no question here", False),
    "end": ("How long have you had them?", True),
    "middle": ("Is it? Yes it is", True),
    "quoted": ('He said "why?" and left', True),
    "both": ("What?! No way", True),
    "wide": ("真的吗？好吧", True),
    "link": ("see https://example.com/page?id=3 for the rest", False),
    "glued": ("a?b", False),
    "percent": ("100% sure_ok?", True),  # LIKE's own wildcards in the text change nothing
}


async def test_what_asks_something_and_who_said_it_read_alike_on_both_backends(layer: AgentFusionDataLayer) -> None:
    """A "?" asks where a sentence ends (or any full-width "？"), never inside a link; a speaker stored
    before speakers were checked (a number, true, a list) reads as none, as text it reads as written."""
    await layer.memory.add_many(
        user_id="u1", memories=[NewMemory(k, content, metadata={"speaker": "Ann"}) for k, (content, _) in ASKS.items()]
    )
    legacy = {"plain": 5, "end": True, "middle": ["a", "b"], "quoted": 1e20}
    async with layer.db.write() as session:  # written around the checks, as an older version could
        for key, value in legacy.items():
            await session.execute(
                text("UPDATE agent_memories SET content_metadata = :meta WHERE memory_key = :key"),
                {"meta": json.dumps({"speaker": value}), "key": key},
            )
    rows = {r.memory_key: r for r in await layer.memory.index_rows(user_id="u1")}
    assert {k: r.asks for k, r in rows.items()} == {k: asks for k, (_, asks) in ASKS.items()}
    assert {k: r.speaker for k, r in rows.items()} == {k: None if k in legacy else "Ann" for k in ASKS}


def _index(turns: list[tuple[str, str, int]]) -> UserIndex:
    """An index of one session's turns ``(key, memory type, seconds after T0)``; every turn asks."""
    index = UserIndex(link_minutes=30)
    for key, kind, seconds in turns:
        index.put(IndexedMemory(key, key, None, kind, T0 + timedelta(seconds=seconds), ("x",), session="s", asks=True))
    return index


def _follows(index: UserIndex) -> dict[str, str]:
    keys = {index.slot(k): k for k in index.ids()}
    return {keys[a]: keys[int(b)] for a, b in enumerate(index.followers()) if b >= 0 and a in keys}


def test_turns_written_at_once_follow_in_the_order_of_their_numbers() -> None:
    index = _index([(f"turn-{i}", "conversation", 0) for i in (1, 2, 9, 10, 11)])
    assert _follows(index) == {"turn-1": "turn-2", "turn-2": "turn-9", "turn-9": "turn-10", "turn-10": "turn-11"}
    assert sorted(["msg-f-10", "msg-f-9", "msg-f-100"], key=turn_order) == ["msg-f-9", "msg-f-10", "msg-f-100"]


def test_a_memory_of_another_type_between_a_question_and_its_reply_is_passed_over() -> None:
    # the archiver's gist carries its first message's time, and "gist-" sorts before "msg-"
    index = _index([("msg-6", "conversation", 0), ("gist-7", "event", 60), ("msg-7", "conversation", 60)])
    assert _follows(index) == {"msg-6": "msg-7"}
    index.remove("msg-7")
    assert _follows(index) == {}  # no turn of its type within two: nothing follows


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("What does Joanna do while she writes?", ["joanna"]),
        ("what does joanna do?", []),  # written with a capital: found as written
        ("What did Will tell Nate?", ["nate", "will"]),  # a stop word as a name is still a name
        ("I will call him later", []),
        ("when is the appointment marked?", []),
        ("Did Mark mark it?", ["mark"]),
        ("Does Anna Lee like turtles?", ["anna lee"]),  # the longer name is meant
        ("Did Anna see it?", ["anna"]),
        ("劉德華唱了什么？", ["刘德华"]),  # traditional and simplified are one person
        ("ＪＯＡＮＮＡ？", []),
        ("Joanna's turtles", ["joanna"]),
    ],
)
def test_who_a_query_names(query: str, named: list[str]) -> None:
    table = SpeakerNames.of(["Joanna", "Nate", "Will", "Mark", "Anna", "Anna Lee", "刘德华", "  ", "?"])
    assert sorted(table.names[p] for p in table.named(query)) == named


def test_spellings_that_fold_alike_are_one_person() -> None:
    table = SpeakerNames.of(["Joanna", "joanna", " Ｊｏａｎｎａ ", "劉德華", "刘德华", "--"])
    assert table.person_of.tolist() == [0, 0, 0, 1, 1, -1]
    assert [table.names[p] for p in table.named("what did joanna say")] == ["joanna"]  # the lower-case spelling


async def test_a_person_named_who_said_nothing_in_the_scope_does_not_count(layer: AgentFusionDataLayer) -> None:
    """Tim speaks only in friend f2's chat: a search in f1's scope naming Tim weighs nobody in f1."""
    engine = HybridMemorySearch(layer.memory)
    layer.memory.set_analyzer(engine.analyzer)
    said = [
        ("f1-nate", "f1", "Nate", "turtles eat lettuce in winter"),
        ("f1-joanna", "f1", "Joanna", "turtles eat lettuce in winter"),
        ("f2-tim", "f2", "Tim", "I have no turtles"),
    ]
    await layer.memory.add_many(
        user_id="u1",
        memories=[NewMemory(k, t, friend_id=f, created_at=T0, metadata={"speaker": s}) for k, f, s, t in said],
    )

    async def scores(query: str, friend: str | None) -> dict[str, Any]:
        hits = await engine.search(query, user_id="u1", friend_id=friend, include_shared=False, now=T0)
        return {h.memory_key: h.score for h in hits}

    in_f1 = await scores("Does Tim know what turtles eat in winter?", "f1")
    assert in_f1["f1-nate"] == in_f1["f1-joanna"]
    everywhere = await scores("Does Tim know what turtles eat in winter?", None)
    assert everywhere["f1-nate"] < in_f1["f1-nate"]  # where Tim said something, the others weigh less
