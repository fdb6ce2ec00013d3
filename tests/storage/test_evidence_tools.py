"""The evidence tools on a real database (SQLite and PostgreSQL): a small Chinese + English chat
of one user with two AI friends, shared messages, and another user's messages that must never show."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import ToolCallExecutionEvent
from sqlalchemy import text

from agent_memory.evidence import (
    EVIDENCE_TOOLS,
    EvidenceToolbox,
    MessageIndex,
    SearchFilter,
    parse_query,
)
from agent_memory.text import Tokenizer
from data_layer import AgentFusionDataLayer, NewMessage, Scope
from scripted import call, replay

T0 = datetime(2026, 1, 2, 10, 0, tzinfo=UTC)


def at(days: float, minutes: int = 0) -> datetime:
    return T0 + timedelta(days=days, minutes=minutes)


MENTOR = [  # (key, role, content, time)
    ("nospicy", "user", "我不吃辣，太辣的菜受不了", at(0)),
    ("ack", "assistant", "好的，记住了：你不吃辣。", at(0, 1)),
    ("hike", "user", "Last week I went hiking in the Alps.", at(1)),
    ("weekend", "user", "I love spicy food; the last weekend was fun.", at(2)),
    ("job", "user", "我在一家互联网公司做产品经理", at(3)),
    ("job_reply", "assistant", "产品经理的工作很忙吧？", at(3, 1)),
    ("hotpot", "user", "周末想吃火锅，但要微辣的", at(8)),
]
XIAOZHU = [
    ("b_secret", "user", "我不吃辣的说法是开玩笑的，其实最爱麻辣火锅", at(1, 30)),
    ("b_reply", "assistant", "哈哈，原来你能吃辣！last week 你也这么说", at(1, 31)),
]
SHARED = [("birthday", "user", "我的生日是三月五号", at(4))]
OTHER_USER = [("u2_nospicy", "user", "我不吃辣，也不吃香菜", at(0, 5))]


@dataclass
class Chat:
    layer: AgentFusionDataLayer
    index: MessageIndex
    ids: dict[str, int]

    def box(self, friend: str | None = "mentor", *, user: str = "u1", include_shared: bool = True) -> EvidenceToolbox:
        return EvidenceToolbox(self.layer, self.index, scope=Scope.of(user, friend, include_shared=include_shared))

    def keys(self, messages: list[Any]) -> list[str]:
        names = {v: k for k, v in self.ids.items()}
        return [names[m.message_id] for m in messages]

    def foreign(self, *groups: list[tuple[str, str, str, datetime]]) -> set[int]:
        return {self.ids[key] for group in groups for key, *_ in group}


async def _store(layer: AgentFusionDataLayer, user: str, friend: str | None, rows: list[Any]) -> dict[str, int]:
    items = [
        NewMessage(role=role, content=content, friend_id=friend, created_at=when) for _, role, content, when in rows
    ]
    stored = await layer.messages.append_many(user_id=user, messages=items)
    return {key: record.id for (key, *_), record in zip(rows, stored, strict=True)}


@pytest.fixture
async def chat(layer: AgentFusionDataLayer) -> Chat:
    ids: dict[str, int] = {}
    ids |= await _store(layer, "u1", "mentor", MENTOR[:3])
    ids |= await _store(layer, "u2", "mentor", OTHER_USER)  # interleaved ids: the other user's sit in between
    ids |= await _store(layer, "u1", "xiaozhu", XIAOZHU)
    ids |= await _store(layer, "u1", "mentor", MENTOR[3:])
    ids |= await _store(layer, "u1", None, SHARED)
    return Chat(layer, MessageIndex(layer), ids)


# -- lexical_search ----------------------------------------------------------------------------------


async def test_quoted_phrase_must_occur(chat: Chat) -> None:
    box = chat.box()
    out = await box.lexical_search('"不吃辣"')
    assert out.success and set(chat.keys(out.messages)) == {"nospicy", "ack"}
    user_only = await box.lexical_search('"不吃辣"', filter={"role": "user"})
    assert chat.keys(user_only.messages) == ["nospicy"]
    # full-width and Chinese quotes are phrases too
    assert chat.keys((await box.lexical_search("“不吃辣”", filter={"role": "user"})).messages) == ["nospicy"]
    assert all(m.score is not None and 0 < m.score <= 1 for m in out.messages)


async def test_quoted_english_phrase_matches_whole_words(chat: Chat) -> None:
    box = chat.box()
    phrase = await box.lexical_search('"last week"')
    assert chat.keys(phrase.messages) == ["hike"]  # not "last weekend"; case folded
    words = await box.lexical_search("weekend hiking")  # unquoted: BM25 over either word
    assert set(chat.keys(words.messages)) == {"hike", "weekend"}
    assert (await box.lexical_search('"hiking spicy"')).messages == []


async def test_unquoted_words_rank_by_bm25(chat: Chat) -> None:
    out = await chat.box().lexical_search("火锅 周末")
    assert chat.keys(out.messages)[0] == "hotpot"
    scores = [m.score or 0 for m in out.messages]
    assert scores == sorted(scores, reverse=True)
    parsed = parse_query('"不吃辣" 火锅 “last week”', Tokenizer())
    assert parsed.phrases == ("不吃辣", "last week") and "火锅" in parsed.terms


async def test_lexical_time_filter(chat: Chat) -> None:
    box = chat.box()
    since = at(2).isoformat()
    out = await box.lexical_search("产品经理 辣 hiking spicy", filter={"time_range": {"since": since}})
    assert set(chat.keys(out.messages)) <= {"weekend", "job", "job_reply", "hotpot"}
    assert {"job", "weekend"} <= set(chat.keys(out.messages))
    until = await box.lexical_search("产品经理", filter=SearchFilter.model_validate({"time_range": {"until": since}}))
    assert until.messages == []


async def test_lexical_pagination(chat: Chat) -> None:
    box = chat.box()
    query = "辣 产品经理 hiking 火锅 week"
    everything = chat.keys((await box.lexical_search(query, page_size=100)).messages)
    assert len(everything) >= 5
    pages: list[str] = []
    cursor = None
    while True:
        out = await box.lexical_search(query, page_size=2, cursor=cursor)
        assert out.success and len(out.messages) <= 2
        pages += chat.keys(out.messages)
        if out.next_cursor is None:
            break
        cursor = out.next_cursor
    assert pages == everything
    wrong = await box.lexical_search("别的查询", page_size=2, cursor=cursor)
    assert not wrong.success and "cursor" in (wrong.message or "")
    garbage = await box.lexical_search(query, cursor="not-a-cursor")
    assert not garbage.success and "next_cursor" in (garbage.message or "")


# -- semantic_search ---------------------------------------------------------------------------------


async def test_semantic_search(chat: Chat) -> None:
    box = chat.box()
    out = await box.semantic_search("我不吃辣的饮食偏好", top_k=3, min_score=0.0)
    assert out.success and 1 <= len(out.messages) <= 3
    assert chat.keys(out.messages)[0] in {"nospicy", "ack"}
    scores = [m.score or 0 for m in out.messages]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
    replies = await box.semantic_search("不吃辣", filter={"role": "assistant"}, min_score=0.0)
    assert replies.messages and all(m.role == "assistant" for m in replies.messages)
    strict = await box.semantic_search("完全无关的内容 quantum", min_score=0.99)
    assert strict.success and strict.messages == [] and "min_score" in (strict.message or "")


# -- messages_list -----------------------------------------------------------------------------------


async def test_messages_list_pages_in_time_order(chat: Chat) -> None:
    box = chat.box()
    seen: list[str] = []
    cursor = None
    while True:
        out = await box.messages_list(page_size=3, cursor=cursor)
        assert out.success and len(out.messages) <= 3
        seen += chat.keys(out.messages)
        if out.next_cursor is None:
            break
        cursor = out.next_cursor
    mentor_and_shared = sorted([*MENTOR, *SHARED], key=lambda row: row[3])
    assert seen == [key for key, *_ in mentor_and_shared]


async def test_messages_list_filters(chat: Chat) -> None:
    box = chat.box()
    out = await box.messages_list(since=at(1).isoformat(), until=at(4), role="user")
    assert chat.keys(out.messages) == ["hike", "weekend", "job"]
    naive = await box.messages_list(since="2026-01-03T10:00:00", until="2026-01-06")  # no offset: UTC
    assert chat.keys(naive.messages) == ["hike", "weekend", "job", "job_reply"]
    assert all(m.created_at.endswith("+00:00") for m in naive.messages)
    assistant = await box.messages_list(role="assistant")
    assert chat.keys(assistant.messages) == ["ack", "job_reply"]


# -- neighbors ---------------------------------------------------------------------------------------


async def test_neighbors(chat: Chat) -> None:
    box = chat.box()
    out = await box.neighbors(chat.ids["job"], before=1, after=1)
    assert out.success and out.anchor_id == chat.ids["job"]
    assert chat.keys(out.messages) == ["weekend", "job", "job_reply"]
    first = await box.neighbors(chat.ids["nospicy"], before=5, after=0)
    assert chat.keys(first.messages) == ["nospicy"]


async def test_neighbors_refuses_messages_outside_the_scope(chat: Chat) -> None:
    box = chat.box()
    other_friend = await box.neighbors(chat.ids["b_secret"])
    other_user = await box.neighbors(chat.ids["u2_nospicy"])
    missing = await box.neighbors(10_000)
    assert not missing.success and missing.message is not None and "没有找到消息 10000" in missing.message
    for out, mid in ((other_friend, "b_secret"), (other_user, "u2_nospicy")):
        assert not out.success and out.messages == []
        assert out.message == missing.message.replace("10000", str(chat.ids[mid]))  # nothing tells them apart
    assert box.read == []
    # the shared message is the user's own: a friend's scope may expand it, unless it excludes shared ones
    assert (await box.neighbors(chat.ids["birthday"], before=0, after=0)).success
    assert not (await chat.box(include_shared=False).neighbors(chat.ids["birthday"])).success


# -- isolation ---------------------------------------------------------------------------------------


async def _everything(box: EvidenceToolbox, chat: Chat) -> set[int]:
    found: set[int] = set()
    cursor = None
    while True:
        page = await box.messages_list(page_size=2, cursor=cursor)
        found |= {m.message_id for m in page.messages}
        if (cursor := page.next_cursor) is None:
            break
    for query in ('"不吃辣"', "不吃辣 香菜 麻辣 火锅", "last week 开玩笑", '"开玩笑"', '"香菜"'):
        found |= {m.message_id for m in (await box.lexical_search(query, page_size=100)).messages}
    for query in ("不吃辣", "开玩笑 麻辣火锅", "香菜", "last week"):
        hits = await box.semantic_search(query, top_k=50, min_score=0.0)
        found |= {m.message_id for m in hits.messages}
    for mid in chat.ids.values():
        found |= {m.message_id for m in (await box.neighbors(mid, before=20, after=20)).messages}
    return found


async def test_friend_scopes_never_see_each_other(chat: Chat) -> None:
    mentor = await _everything(chat.box("mentor"), chat)
    assert mentor == chat.foreign(MENTOR, SHARED)
    xiaozhu = await _everything(chat.box("xiaozhu"), chat)
    assert xiaozhu == chat.foreign(XIAOZHU, SHARED)
    private = await _everything(chat.box("mentor", include_shared=False), chat)
    assert private == chat.foreign(MENTOR)
    whole_user = await _everything(chat.box(None), chat)
    assert whole_user == chat.foreign(MENTOR, XIAOZHU, SHARED)
    other = await _everything(chat.box("mentor", user="u2"), chat)
    assert other == chat.foreign(OTHER_USER)


# -- bad arguments -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("messages_list", {"page_size": 0}, "page_size"),
        ("messages_list", {"since": "last tuesday"}, "since"),
        ("messages_list", {"since": "2026-13-01"}, "since"),
        ("messages_list", {"since": "2026-02-01", "until": "2026-01-01"}, "swap"),
        ("messages_list", {"role": "boss"}, "role"),
        ("messages_list", {"cursor": "garbage"}, "cursor"),
        ("messages_list", {"user_id": "u2"}, "不要传 user_id"),
        ("lexical_search", {"query_text": ""}, "query_text"),
        ("lexical_search", {"query_text": "x", "page_size": 101}, "page_size"),
        ("lexical_search", {"query_text": "x", "filter": {"role": "admin"}}, "filter.role"),
        ("lexical_search", {"query_text": "x", "filter": {"time_range": {"since": "soon"}}}, "since"),
        ("lexical_search", {"query_text": "的 the"}, "停用词"),
        ("semantic_search", {"query_text": "x", "top_k": 1000}, "top_k"),
        ("semantic_search", {"query_text": "x", "min_score": 1.5}, "min_score"),
        ("semantic_search", {"query_text": "x", "friend_id": "xiaozhu"}, "不要传 friend_id"),
        ("neighbors", {"message_id": 1, "before": 21}, "before"),
        ("neighbors", {"message_id": "abc"}, "message_id"),
        ("neighbors", {}, "message_id"),
    ],
)
async def test_bad_arguments_come_back_as_failures(chat: Chat, tool: str, args: dict[str, Any], expected: str) -> None:
    box = chat.box()
    out = await box.call(tool, args)
    assert isinstance(out, EVIDENCE_TOOLS[tool].output_model)
    assert out.success is False and expected in (out.message or ""), out.message
    assert box.read == []


# -- the store's engine keeps in step ------------------------------------------------------------------


async def test_search_reads_new_messages_and_a_rewritten_history(chat: Chat) -> None:
    box = chat.box()
    assert (await box.lexical_search("寿司")).messages == []
    new = await chat.layer.messages.append(
        user_id="u1", friend_id="mentor", role="user", content="今晚想吃寿司", created_at=at(9)
    )
    out = await box.lexical_search("寿司")
    assert [m.message_id for m in out.messages] == [new.id]
    async with chat.layer.db.write() as session:  # the history is cleared and re-written
        await session.execute(text("DELETE FROM chat_messages"))
    fresh = await _store(chat.layer, "u1", "mentor", [("sushi2", "user", "寿司还是算了，吃拉面", at(10))])
    out = await box.lexical_search("寿司")
    assert [m.message_id for m in out.messages] == [fresh["sushi2"]]
    assert (await box.lexical_search('"不吃辣"')).messages == []


async def test_messages_written_without_terms_are_analysed_before_a_search(layer: AgentFusionDataLayer) -> None:
    index = MessageIndex(layer)
    layer.messages.set_analyzer(None)  # another writer, without the analyzer: stored without terms
    rows = [
        NewMessage(role="user", content=f"第 {i} 条：咖啡 number {i}", friend_id="f", created_at=at(i))
        for i in range(30)
    ]
    await layer.messages.append_many(user_id="u1", messages=rows)
    assert len(await layer.messages.unanalysed(user_id="u1")) == 30
    box = EvidenceToolbox(layer, index, scope=Scope.of("u1", "f"))
    out = await box.lexical_search("咖啡", page_size=100)
    assert len(out.messages) == 30 and await layer.messages.unanalysed(user_id="u1") == []
    assert (await box.lexical_search('"number 29"')).messages[0].content.endswith("29")
    layer.messages.set_analyzer(index.analyzer)
    stored = await layer.messages.append(user_id="u1", friend_id="f", role="user", content="咖啡 espresso")
    assert await layer.messages.unanalysed(user_id="u1") == []  # written with its terms
    assert (await box.lexical_search("espresso")).messages[0].message_id == stored.id


async def test_terms_with_punctuation_survive_the_engine(layer: AgentFusionDataLayer) -> None:
    """The engine holds the project's tokens as they are: a token with punctuation, quotes or a backslash
    is one token (matched exactly, no more, no less), on both backends."""
    odd = ["c++", "e-mail", "don't", 'say"hi', "a\\b", "50%", "x_y", "3.5", "火锅"]
    await layer.messages.append_many(
        user_id="u1", messages=[NewMessage(role="user", content=f"m{i}", created_at=at(i)) for i in range(len(odd) + 1)]
    )
    stored = await layer.messages.list_range(user_id="u1", page_size=100)
    ids = [m.id for m in stored.items]
    async with layer.db.write() as session:  # the odd terms, as an analyzer might make them
        await session.execute(text("UPDATE chat_messages SET search_terms = NULL, search_length = NULL"))
    await layer.messages.store_terms(
        user_id="u1", terms=[(mid, [term, "common"]) for mid, term in zip(ids, odd, strict=False)] + [(ids[-1], ["c"])]
    )
    scope = Scope.of("u1")
    for mid, term in zip(ids, odd, strict=False):
        found = await layer.messages.term_candidates(scope, any_of=[term])
        assert [c.id for c in found] == [mid], term
        stats = await layer.messages.term_statistics(scope, [term, "common"])
        assert stats.frequencies == {term: 1, "common": len(odd)} and stats.documents == len(odd) + 1
    assert [c.id for c in await layer.messages.term_candidates(scope, any_of=["c"])] == [ids[-1]]
    assert await layer.messages.term_candidates(Scope.of("u2"), any_of=["common"]) == []


# -- the AutoGen path --------------------------------------------------------------------------------


async def _statistics(layer: AgentFusionDataLayer) -> tuple[list[Any], list[Any]]:
    """``chat_search_statistics`` (chats at zero left out) and the same sums counted from the messages."""
    async with layer.db.read() as session:
        kept = (
            await session.execute(
                text(
                    "SELECT user_id, friend_key, messages, total_length FROM chat_search_statistics"
                    " WHERE messages <> 0 OR total_length <> 0 ORDER BY 1, 2"
                )
            )
        ).all()
        counted = (
            await session.execute(
                text(
                    "SELECT user_id, coalesce(friend_id, ''), count(search_length), sum(search_length)"
                    " FROM chat_messages WHERE search_length IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2"
                )
            )
        ).all()
    return [tuple(r) for r in kept], [tuple(r) for r in counted]


async def test_the_chat_statistics_follow_every_write(layer: AgentFusionDataLayer) -> None:
    """The per-chat count and total length BM25 reads are what the messages hold after writes with and
    without terms, a late analysis, a friend's deletion (its messages go) and a user's erasure."""
    index = MessageIndex(layer)
    for user in ("u1", "u2"):
        for friend in ("mentor", "xiaozhu", None):
            await layer.messages.append_many(
                user_id=user,
                messages=[
                    NewMessage(role="user", content=f"{friend} 火锅 number {i}", friend_id=friend, created_at=at(i))
                    for i in range(4)
                ],
            )
    layer.messages.set_analyzer(None)
    await layer.messages.append(user_id="u1", friend_id="mentor", role="user", content="written without terms")
    kept, counted = await _statistics(layer)
    assert kept == counted and len(kept) == 6 and kept[0][2] == 4
    scope = Scope.of("u1", "mentor")
    assert (await layer.messages.term_statistics(scope, [])).documents == 8  # mentor's and the shared ones
    await EvidenceToolbox(layer, index, scope=scope).lexical_search("火锅")  # analyses the one without terms
    kept, counted = await _statistics(layer)
    assert kept == counted and (await layer.messages.term_statistics(scope, [])).documents == 9
    await layer.friends.create(user_id="u1", name="小猪", friend_id="xiaozhu")
    await layer.friends.delete(user_id="u1", friend_id="xiaozhu")
    await layer.erase_user("u2")
    kept, counted = await _statistics(layer)
    assert kept == counted and {(r[0], r[1]) for r in kept} == {("u1", "mentor"), ("u1", "")}
    stats = await layer.messages.term_statistics(Scope.of("u1"), ["火锅"])
    assert (stats.documents, stats.frequencies) == (9, {"火锅": 8})
    assert stats.total_length == sum(r[3] for r in counted)


async def test_agent_calls_lexical_search_then_neighbors(chat: Chat) -> None:
    box = chat.box()
    anchor = chat.ids["nospicy"]
    client = replay(
        [
            call("lexical_search", {"query_text": '"不吃辣"', "filter": {"role": "user"}}, 1),
            call("neighbors", {"message_id": anchor, "before": 0, "after": 1}, 2),
            call("lexical_search", {"query_text": "x", "page_size": 0}, 3),
            "用户说过不吃辣。",
        ]
    )
    agent = AssistantAgent("recall", model_client=client, tools=box.tools(), max_tool_iterations=4)
    result = await agent.run(task="我是不是说过我不吃辣？")
    executions = [m for m in result.messages if isinstance(m, ToolCallExecutionEvent)]
    outputs = [json.loads(e.content[0].content) for e in executions]
    assert [o["success"] for o in outputs] == [True, True, False]
    assert [m["message_id"] for m in outputs[0]["messages"]] == [anchor]
    assert [m["message_id"] for m in outputs[1]["messages"]] == [anchor, chat.ids["ack"]]
    assert "page_size" in outputs[2]["message"] and not executions[2].content[0].is_error
    assert "不吃辣" in executions[0].content[0].content  # UTF-8, not \\u escapes
    assert "score" not in outputs[1]["messages"][0]  # None fields are left out
    assert [m.message_id for m in box.read] == [anchor, chat.ids["ack"]]
    schemas = {t.name: t.schema for t in box.tools()}
    assert set(schemas) == set(EVIDENCE_TOOLS)
    for schema in schemas.values():
        props = schema.get("parameters", {}).get("properties", {})
        assert "user_id" not in props and "friend_id" not in props and "args" not in props
    lexical = schemas["lexical_search"].get("parameters", {}).get("properties", {})
    assert {"query_text", "filter", "page_size", "cursor"} == set(lexical)
