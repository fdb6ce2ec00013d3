"""Session archiving on both backends: chats become gists and profile items, idempotently, resumably,
with history kept, and gists never cross friends."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_memory.formation import make_gists, split_sessions
from agent_memory.system import MemorySystem
from agent_memory.text import Tokenizer
from data_layer import InvalidInputError, MessageRecord, NewMessage

T0 = datetime(2026, 1, 2, 20, 0, tzinfo=UTC)


def msg(text: str, *, at: datetime, role: str = "user", friend: str = "xiaozhu") -> NewMessage:
    return NewMessage(role=role, content=text, friend_id=friend, created_at=at)


async def store(system: MemorySystem, *messages: NewMessage, user: str = "u1") -> list[MessageRecord]:
    return await system.layer.messages.append_many(user_id=user, messages=list(messages))


def test_sessions_end_at_idle_gaps_and_size() -> None:
    records = [
        MessageRecord(id=i, user_id="u", friend_id="f", thread_id=None, role="user", content=str(i), created_at=at)
        for i, at in enumerate([T0, T0 + timedelta(minutes=10), T0 + timedelta(hours=2), T0 + timedelta(hours=2)], 1)
    ]
    sessions = split_sessions(records, idle=timedelta(minutes=30), max_messages=40)
    assert [[m.id for m in s.messages] for s in sessions] == [[1, 2], [3, 4]]
    capped = split_sessions(records, idle=timedelta(days=1), max_messages=3)
    assert [len(s.messages) for s in capped] == [3, 1]
    assert sessions[0].is_over(now=T0 + timedelta(hours=3), idle=timedelta(minutes=30), max_messages=40)
    assert not sessions[1].is_over(now=T0 + timedelta(hours=2, minutes=5), idle=timedelta(minutes=30), max_messages=40)


def test_an_english_gist_quotes_the_user() -> None:
    records = [
        MessageRecord(id=i, user_id="u", friend_id="f", thread_id=None, role=role, content=text, created_at=T0)
        for i, (role, text) in enumerate([("user", "I broke up with my girlfriend."), ("assistant", "I'm sorry.")], 1)
    ]
    [gist] = make_gists(records, tokenizer=Tokenizer())
    assert (gist.content, gist.source_ids) == ('2026-01-02: the user said "I broke up with my girlfriend"', (1,))


def records_of(*turns: tuple[str, str]) -> list[MessageRecord]:
    return [
        MessageRecord(
            id=i,
            user_id="u",
            friend_id="f",
            thread_id=None,
            role=role,
            content=text,
            created_at=T0 + timedelta(minutes=i),
        )
        for i, (role, text) in enumerate(turns, 1)
    ]


def test_a_gist_holds_one_episode() -> None:
    records = records_of(
        ("user", "我家猫叫糯米，这几天一直不肯吃猫粮"),
        ("assistant", "先观察一下它的精神状态。"),
        ("user", "嗯，明天不行就带去医院"),  # goes on with the cat
        ("user", "对了，我不吃辣"),  # a new subject
        ("user", "我又开始吃火锅了，不过是清汤的"),  # the same topic (饮食), two messages later
        ("user", "上个月和男朋友分手了"),
        ("assistant", "他知道你的感受吗？"),
        ("user", "一直没说，心里很难受"),  # the answer to the question about the breakup
    )
    gists = make_gists(records, tokenizer=Tokenizer())
    assert [g.source_ids for g in gists] == [(1, 3), (4, 5), (6, 8)]
    assert "猫粮" in gists[0].content and "不吃辣" in gists[1].content and "分手" in gists[2].content


def test_a_reply_that_leaves_the_question_and_a_time_of_its_own_start_new_episodes() -> None:
    """A yes-or-no question is answered by a first clause that says yes or no or echoes it; a reply that
    does neither tells something else. 这周 opens a time counted from now, as 今天 would: it points
    back at nothing. A question for a content is answered by whatever follows."""
    records = records_of(
        ("user", "今天带我妈去医院复查"),
        ("assistant", "阿姨还好吗？"),
        ("user", "下午去剪了个头发"),  # leaves the question unanswered: a subject of its own
        ("user", "这周天气不错，周末打算去爬山"),  # 这周: when, not a pointer back
        ("assistant", "爬哪座山？"),
        ("user", "可能去香山吧"),  # answers the question for a content
        ("user", "我养了一只柯基"),
        ("assistant", "它乖吗？"),
        ("user", "不太乖，总咬拖鞋"),  # says no: the answer
        ("user", "I started a new job at a bank."),
        ("assistant", "Do you like it?"),
        ("user", "My sister is getting married in May."),  # no yes or no: another subject
    )
    gists = make_gists(records, tokenizer=Tokenizer())
    assert [g.source_ids for g in gists] == [(1,), (3,), (4, 6), (7, 9), (10,), (12,)], [g.content for g in gists]


async def test_two_episodes_drawn_from_one_message_are_two_gists(system: MemorySystem) -> None:
    (both,) = await store(system, msg("我不吃辣，闻到辣椒都难受。对了，我和男朋友分手了。", at=T0))
    report = await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    assert report.gists == 2
    page = await system.layer.memory.list_memories(user_id="u1", limit=10)
    gists = [m for m in page.items if m.memory_type == "event"]
    assert sorted(m.memory_key for m in gists) == [f"gist-xiaozhu-{both.id}", f"gist-xiaozhu-{both.id}-2"]
    assert all(m.metadata["source_message_ids"] == [both.id] for m in gists)
    assert sorted("分手" in m.content for m in gists) == [False, True]


async def test_a_chat_becomes_gists_and_a_shared_profile(system: MemorySystem) -> None:
    stored = await store(
        system,
        msg("最近工作压力好大，下周要做重要的项目汇报", at=T0),
        msg("听起来很辛苦，准备得怎么样了？", at=T0 + timedelta(minutes=1), role="assistant"),
        msg("我是产品经理，我喜欢科幻电影，不喜欢恐怖片", at=T0 + timedelta(days=1)),
        msg("你好", at=T0 + timedelta(days=2)),
    )
    report = await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    assert report.sessions == 3 and report.gists == 2  # the greeting session forms nothing
    assert report.turns == 3  # every message that says something stays searchable in its own words
    page = await system.layer.memory.list_memories(user_id="u1", limit=50)
    gists = [m for m in page.items if m.memory_type == "event"]
    profiles = {m.memory_key: m for m in page.items if m.memory_type == "profile"}
    assert all(g.friend_id == "xiaozhu" for g in gists)
    first = next(g for g in gists if g.metadata["source_message_ids"] == [stored[0].id])
    assert "项目汇报" in first.content and first.metadata["date"] == "2026-01-02"
    second = next(g for g in gists if g.metadata["source_message_ids"] == [stored[2].id])
    # the user's own words in quotation marks: "我" stays the user, never reads as the assistant
    assert second.content == "2026-01-03：用户说：“我是产品经理，我喜欢科幻电影，不喜欢恐怖片”"
    assert "听起来很辛苦" not in first.content  # the assistant's words are no part of what the user said
    assert profiles["profile-occupation"].friend_id is None  # shared with every friend
    assert profiles["profile-occupation"].metadata["value"] == "产品经理"
    assert profiles["profile-interest-恐怖片"].metadata["polarity"] == "negative"
    assert profiles["profile-interest-科幻电影"].metadata["source_message_ids"] == [stored[2].id]
    # a second run writes nothing and moves nothing
    again = await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    assert (again.sessions, again.gists, again.profiles) == (0, 0, 0)
    assert len((await system.layer.memory.list_memories(user_id="u1", limit=50)).items) == len(page.items)


async def test_the_open_session_waits_for_the_idle_gap(system: MemorySystem) -> None:
    await store(system, msg("我搬到上海了", at=T0))
    still_open = await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", now=T0 + timedelta(minutes=5))
    assert still_open.open_sessions == 1 and still_open.profiles == 0
    later = await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", now=T0 + timedelta(hours=1))
    assert later.sessions == 1 and later.profiles == 1


async def test_a_newer_statement_supersedes_and_the_old_one_stays_as_history(system: MemorySystem) -> None:
    await store(
        system,
        msg("我住在北京", at=T0),
        msg("我很喜欢吃辣", at=T0 + timedelta(minutes=1)),
        msg("我搬到深圳了", at=T0 + timedelta(days=30)),
        msg("我现在不吃辣了", at=T0 + timedelta(days=30, minutes=1)),
    )
    report = await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    assert report.superseded == 2
    memory = system.layer.memory
    home = await memory.retrieve_memory(memory_key="profile-residence", user_id="u1")
    assert home is not None and "深圳" in home.content
    history = (await memory.list_memories(user_id="u1", include_inactive=True, limit=50)).items
    old = [m for m in history if not m.is_active and m.metadata.get("superseded_by") == "profile-residence"]
    assert len(old) == 1 and "北京" in old[0].content and old[0].metadata["valid_to"].startswith("2026-02-01")
    spicy = [m for m in history if m.is_active and m.metadata.get("topic") == "diet"]
    assert len(spicy) == 1 and spicy[0].metadata["polarity"] == "negative"
    # searches see only the current values
    hits = await system.search.search("住在哪里 北京 深圳", user_id="u1")
    assert "profile-residence" in [h.memory_key for h in hits]
    assert all(h.record.is_active for h in hits)


@pytest.mark.parametrize(
    ("said", "key", "old", "new"),
    [
        (
            ("I live in London with my partner.", "Work relocated me: I moved to Berlin in May."),
            "profile-residence",
            "London",
            "Berlin",
        ),
        (("I work at Shopify.", "I quit my job last week."), "profile-employer", "Shopify", "left their job"),
        (("我是单身", "我上个月结婚了"), "profile-marital", "单身", "已婚"),
        (("我在华为上班", "我换工作了，现在在小米上班"), "profile-employer", "华为", "小米"),
    ],
)
async def test_a_change_of_state_supersedes_with_the_evidence_of_both(
    system: MemorySystem, said: tuple[str, str], key: str, old: str, new: str
) -> None:
    first, second = await store(system, msg(said[0], at=T0), msg(said[1], at=T0 + timedelta(days=40)))
    report = await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    assert report.superseded == 1
    current = await system.layer.memory.retrieve_memory(memory_key=key, user_id="u1")
    assert current is not None and new in current.content and old not in current.content
    assert current.metadata["source_message_ids"] == [second.id, first.id]
    history = (await system.layer.memory.list_memories(user_id="u1", include_inactive=True, limit=50)).items
    earlier = [m for m in history if not m.is_active and m.metadata.get("superseded_by") == key]
    assert len(earlier) == 1 and old in earlier[0].content and earlier[0].metadata["source_message_ids"] == [first.id]


@pytest.mark.parametrize(
    "later",
    [
        "If I moved to Berlin, I'd miss my friends.",
        "Should I move to Berlin?",
        "My sister moved to Berlin.",
        "要是搬到柏林，我会想家的",
        "我要不要搬到柏林？",
        "我妹妹搬到柏林了",
    ],
)
async def test_a_supposition_a_question_or_someone_elses_move_changes_no_home(system: MemorySystem, later: str) -> None:
    await store(system, msg("I have always lived in London.", at=T0), msg(later, at=T0 + timedelta(days=40)))
    report = await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    assert report.superseded == 0
    home = await system.layer.memory.retrieve_memory(memory_key="profile-residence", user_id="u1")
    assert home is not None and home.content.endswith("lives in London")


async def test_messages_out_of_id_order_or_imported_late_are_archived_by_the_next_run(system: MemorySystem) -> None:
    archiver, day = system.session_archiver, timedelta(days=1)
    # imported with created_at out of id order: the later-id message is the earlier session
    later, earlier = await store(system, msg("我在准备马拉松", at=T0 + 2 * day), msg("我喜欢爬山", at=T0))
    first = await archiver.run(user_id="u1", friend_id="xiaozhu", now=T0 + 2 * day + timedelta(minutes=5))
    assert (first.sessions, first.open_sessions) == (1, 1)  # the first day's session; the third day's is open
    second = await archiver.run(user_id="u1", friend_id="xiaozhu", now=T0 + 3 * day)
    assert second.sessions == 1 and f"msg-xiaozhu-{later.id}" in second.memory_keys
    # a chat imported afterwards, dated before everything archived
    (old,) = await store(system, msg("我搬到深圳了", at=T0 - 30 * day))
    third = await archiver.run(user_id="u1", friend_id="xiaozhu", now=T0 + 3 * day)
    assert third.sessions == 1 and third.profiles == 1
    home = await system.layer.memory.retrieve_memory(memory_key="profile-residence", user_id="u1")
    assert home is not None and home.metadata["source_message_ids"] == [old.id]
    assert (await archiver.run(user_id="u1", friend_id="xiaozhu", now=T0 + 3 * day)).sessions == 0
    assert await system.layer.archive_state.last(user_id="u1", friend_id="xiaozhu") == old.id
    assert earlier.id < old.id


async def test_marking_takes_only_the_chats_own_messages(system: MemorySystem) -> None:
    mine, other = await store(system, msg("a", at=T0), msg("b", at=T0, friend="other"))
    state = system.layer.archive_state
    assert await state.mark_archived(user_id="u1", friend_id="xiaozhu", message_ids=[mine.id, other.id]) == 1
    assert await state.mark_archived(user_id="u1", friend_id="xiaozhu", message_ids=[mine.id]) == 0
    assert [m.id for m in await state.pending(user_id="u1", friend_id="other")] == [other.id]
    assert await state.pending(user_id="u1", friend_id="xiaozhu") == []
    with pytest.raises(InvalidInputError, match="message_ids"):
        await state.mark_archived(user_id="u1", friend_id="xiaozhu", message_ids=[0])


async def test_an_interrupted_run_resumes_without_duplicates(system: MemorySystem, monkeypatch: Any) -> None:
    day = timedelta(days=1)
    await store(system, *(msg(f"第{n}天 我在准备马拉松训练计划", at=T0 + n * day) for n in range(4)))
    archiver = system.session_archiver
    calls = 0
    original = archiver.profiles.apply

    async def failing(user_id: str, statements: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RuntimeError("power cut")
        return await original(user_id, statements)

    monkeypatch.setattr(archiver.profiles, "apply", failing)
    with pytest.raises(RuntimeError, match="power cut"):
        await archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    assert await system.layer.archive_state.last(user_id="u1", friend_id="xiaozhu") == 2
    monkeypatch.setattr(archiver.profiles, "apply", original)
    resumed = await archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    assert resumed.sessions == 2
    formed = list((await system.layer.memory.list_memories(user_id="u1", limit=50)).items)
    # one gist and one archived turn per day, each once
    assert sorted(m.memory_type for m in formed) == ["conversation"] * 4 + ["event"] * 4
    assert len({m.memory_key for m in formed}) == 8


async def test_a_gist_of_one_friend_is_never_recalled_for_another(system: MemorySystem) -> None:
    await store(system, msg("我和女朋友分手了，心情很低落，晚上睡不着", at=T0, friend="xiaozhu"))
    await store(system, msg("下周要做季度项目汇报", at=T0, friend="mentor"))
    await system.session_archiver.run(user_id="u1", all_friends=True, end_open=True)
    for friend, own, other in (("mentor", "汇报", "分手"), ("xiaozhu", "分手", "汇报")):
        hits = await system.search.search("分手 心情 汇报 季度", user_id="u1", friend_id=friend)
        texts = " ".join(h.record.content for h in hits)
        assert own in texts and other not in texts
        agent = system.recall_agent(system.scope("u1", friend))
        result = await agent.recall([("user", "分手 心情低落 季度汇报")])
        assert all(other not in item.content_preview for item in result.found)
        run = await system.evidence_agent(system.scope("u1", friend)).recall("分手 心情低落 季度汇报", now=T0)
        assert all(other not in e.content for e in run.output.evidence)


async def test_the_evidence_recall_reads_the_time_a_question_names(system: MemorySystem) -> None:
    """The skill's "a named date = that date": 上周 (T0 is a Friday) reads the week before this one; a
    time still to come names no window; a time word ("最近") keeps its own window back from now."""
    await store(
        system,
        msg("在杭州吃了一碗片儿川，汤头很鲜", at=T0 - timedelta(days=10)),
        msg("杭州又下雨了，没出门吃饭", at=T0 - timedelta(days=2)),
    )
    run = await system.evidence_agent(system.scope("u1", "xiaozhu")).recall("我上周在杭州吃了什么？", now=T0)
    window = run.output.limits.time_range
    assert (window.since, window.until) == ("2025-12-22T00:00:00+00:00", "2025-12-29T00:00:00+00:00")
    assert run.output.evidence[0].content == "在杭州吃了一碗片儿川，汤头很鲜"
    ahead = await system.evidence_agent(system.scope("u1", "xiaozhu")).recall("我下周在杭州吃什么？", now=T0)
    assert ahead.output.limits.time_range.since is None
    assert {e.content for e in ahead.output.evidence} == {"在杭州吃了一碗片儿川，汤头很鲜", "杭州又下雨了，没出门吃饭"}
    recent = await system.evidence_agent(system.scope("u1", "xiaozhu")).recall("我最近在杭州吃了什么？", now=T0)
    assert recent.output.limits.time_range.since == (T0 - timedelta(days=7)).isoformat()
    assert recent.output.evidence[0].content == "杭州又下雨了，没出门吃饭"
    agent = system.evidence_agent(system.scope("u1", "xiaozhu"))
    with pytest.raises(InvalidInputError, match="timezone-aware"):  # 上周 in which time zone?
        await agent.recall("我上周吃了什么？", now=T0.replace(tzinfo=None))
    with pytest.raises(InvalidInputError, match="question must be a string, not int"):
        await agent.recall(123, now=T0)


async def test_a_question_about_what_happened_in_a_time_cites_that_times_messages(system: MemorySystem) -> None:
    """ "我们上周聊了什么" shares no word with last week's messages: the recall reads those days' messages
    (it found the week's gists and then cited nothing), and only those days' (the earlier week is not
    evidence, nor is another friend's chat)."""
    await store(
        system,
        msg("在准备季度汇报，压力好大", at=T0 - timedelta(days=9)),  # last week (T0 is a Friday)
        msg("辛苦了，准备到哪一步了？", at=T0 - timedelta(days=9, minutes=-1), role="assistant"),
        msg("周末打算去爬香山放松一下", at=T0 - timedelta(days=7)),
        msg("前一周去看了牙医", at=T0 - timedelta(days=16)),
        msg("上周也跟导师聊了跳槽", at=T0 - timedelta(days=8), friend="mentor"),
    )
    await system.session_archiver.run(user_id="u1", all_friends=True, end_open=True)
    scope = system.scope("u1", "xiaozhu")
    for question in ("我们上周聊了什么？", "What did we talk about last week?"):
        run = await system.evidence_agent(scope).recall(question, now=T0)
        cited = {e.content for e in run.output.evidence}
        assert {"在准备季度汇报，压力好大", "周末打算去爬香山放松一下"} <= cited, question
        assert not cited & {"前一周去看了牙医", "上周也跟导师聊了跳槽"}, question
        assert run.output.limits.messages_considered >= 2
    greeting = await system.evidence_agent(scope).recall("你好呀", now=T0)  # no time, nothing to read
    assert greeting.output.evidence == [] and greeting.output.limits.messages_considered == 0


async def test_a_message_about_the_last_days_is_searched_not_read_from_the_windows_start(system: MemorySystem) -> None:
    """ "最近睡眠不好" tells how the last days went; it is searched by its words. Reading the window's
    first messages (as for "我们上周聊了什么") would cite a week of lunches and crowd out the one message
    it is about."""
    chatter = [msg(f"今天中午吃了第{i}家的面，预算还够", at=T0 - timedelta(days=6, minutes=-i)) for i in range(25)]
    await store(system, *chatter, msg("这几天睡眠很差，总是半夜醒", at=T0 - timedelta(days=1)))
    run = await system.evidence_agent(system.scope("u1", "xiaozhu")).recall("最近睡眠不好", now=T0)
    cited = [e.content for e in run.output.evidence]
    assert "这几天睡眠很差，总是半夜醒" in cited
    assert sum("中午吃了" in c for c in cited) <= 3, cited  # neighbours of the anchor at most, not the window


async def test_the_first_recall_of_a_process_loads_the_dictionaries_outside_its_rounds(
    system: MemorySystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new process's first question lost its first round (0.5 s) to loading the dictionaries and found
    nothing; the recalls now load them (once) before the timed rounds."""
    await store(system, msg("我下周二要去北京出差，有点紧张", at=T0 - timedelta(days=1)))
    await system.session_archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True)
    cold = [True]
    tokens = Tokenizer.tokens

    def first_call_slow(self: Tokenizer, text: str) -> list[str]:
        if cold[0]:  # what loading jieba's dictionaries costs a new process
            cold[0] = False
            time.sleep(0.8)
        return tokens(self, text)

    monkeypatch.setattr(Tokenizer, "tokens", first_call_slow)
    system.search._warmed = None  # as in a new process
    run = await system.evidence_agent(system.scope("u1", "xiaozhu")).recall("北京出差的事你还记得吗", now=T0)
    assert not cold[0] and any("北京" in m.content for m in run.output.evidence)
    assert run.ledger.found(), "the first round found nothing"
    cold[0] = True
    system.search._warmed = None
    result = await system.recall_agent(system.scope("u1", "xiaozhu")).recall([("user", "北京出差的事你还记得吗")])
    assert not cold[0] and any("北京" in item.content_preview for item in result.found)


async def test_background_archiving_never_blocks_and_forms_memories(db_url: str) -> None:
    from agent_memory.settings import load_settings

    settings = load_settings(memory_database_url=db_url, memory_sessions_idle_minutes=1)
    async with MemorySystem.from_settings(settings) as system:
        await store(system, msg("我在腾讯工作", at=datetime.now(UTC) - timedelta(hours=2)))
        context = system.context(user_id="u1", friend_id="xiaozhu")
        from autogen_core.models import UserMessage

        await context.add_message(UserMessage(content="今天天气不错", source="user"))
        await system.session_archiver.drain()
        employer = await system.layer.memory.retrieve_memory(memory_key="profile-employer", user_id="u1")
        assert employer is not None and "腾讯" in employer.content


def test_archiver_options_are_checked() -> None:
    with pytest.raises(ValueError, match="idle"):
        split_sessions([], idle=timedelta(0), max_messages=10)
    with pytest.raises(ValueError, match="max_messages"):
        split_sessions([], idle=timedelta(minutes=5), max_messages=1)


async def test_a_live_chat_is_not_read_again_after_every_message(system: MemorySystem) -> None:
    """``schedule`` skips the run while the session the last run saw plainly goes on (a live chat was
    read again from its start after every message); a few skips at most, a message after the idle gap
    or a long session runs it again, and the memories in the end are the same as without skipping."""
    from sqlalchemy import event

    from agent_memory.formation import MAX_SKIPPED
    from data_layer import Scope

    archiver, scope = system.session_archiver, Scope.of("u1", "xiaozhu")
    reads: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "FROM chat_messages" in statement:
            reads.append(statement)

    event.listen(system.layer.db.engine.sync_engine, "before_cursor_execute", record)
    at = T0
    ran: list[bool] = []
    for i in range(MAX_SKIPPED + 2):  # a turn a minute: message, schedule, reply
        at += timedelta(minutes=1)
        await store(system, msg(f"第{i}件事：我今天去了{i}号公园", at=at))
        before = len(reads)
        await archiver.drain()
        task = archiver.schedule(scope, now=at)
        await archiver.drain()
        ran.append(task is not None and len(reads) > before)
        await store(system, msg(f"好的{i}", at=at + timedelta(seconds=5), role="assistant"))
    assert ran == [True, *[False] * MAX_SKIPPED, True]  # the first sees the chat, then skips, then a full run
    later = at + timedelta(hours=2)  # back after the idle gap: the session that ended is archived at once
    await store(system, msg("我回来了", at=later))
    assert archiver.schedule(scope, now=later) is not None
    await archiver.drain()
    page = await system.layer.memory.list_memories(user_id="u1", memory_types=["event"], limit=100)
    assert page.items and all(m.created_at <= later for m in page.items)
    turns = await system.layer.memory.list_memories(user_id="u1", memory_types=["conversation"], limit=100)
    assert {m.content for m in turns.items} >= {f"第{i}件事：我今天去了{i}号公园" for i in range(MAX_SKIPPED + 2)}


async def test_after_an_archive_the_next_message_neither_rereads_the_chat_nor_the_new_memories(
    system: MemorySystem,
) -> None:
    """After a run that archived everything ("整理记忆", or a session that ended), the next message starts a
    session that cannot have ended yet: its run is skipped (it read the chat again). The run's new
    memories are already in the user's loaded search index, with their records, so the next search
    reads no rows."""
    from sqlalchemy import event

    from data_layer import Scope

    archiver, scope = system.session_archiver, Scope.of("u1", "xiaozhu")
    await store(system, msg("我下周二要去北京出差，有点紧张", at=T0))
    await system.search.search("北京", user_id="u1", now=T0)  # the user's index is loaded
    reads: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        reads.append(statement)

    report = await archiver.run(user_id="u1", friend_id="xiaozhu", end_open=True, now=T0 + timedelta(minutes=1))
    assert report.gists >= 1
    event.listen(system.layer.db.engine.sync_engine, "before_cursor_execute", record)
    later = T0 + timedelta(minutes=3)
    await store(system, msg("北京出差的事你还记得吗", at=later))
    reads.clear()
    assert archiver.schedule(scope, now=later) is None  # nothing can have ended: no run
    hits = await system.search.search("北京 出差", user_id="u1", friend_id="xiaozhu", now=later)
    assert any(h.record.memory_type == "event" for h in hits)  # the gist is found ...
    assert not [s for s in reads if "agent_memory_search_index" in s]  # ... without reading index rows
    assert not [s for s in reads if "FROM agent_memories" in s], reads  # ... or the memories' records
    back = T0 + timedelta(hours=3)  # after the idle gap the run happens again
    await store(system, msg("我回来了", at=back))
    assert archiver.schedule(scope, now=back) is not None
    await archiver.drain()


class _CountingExtractor:
    """The offline rules, counting how many sessions are being extracted at once. ``together``: the
    first extractions wait until that many are under way (so the count shows how many the archiver
    lets run at once, not how fast the machine is); ``release``: an event every extraction that starts
    while it is set waits for."""

    def __init__(self, *, together: int = 1) -> None:
        import asyncio

        from agent_memory.formation import OfflineExtractor

        self.inner = OfflineExtractor(tokenizer=Tokenizer(stem=False))
        self.tokenizer = self.inner.tokenizer
        self.active = self.most = self.sessions = 0
        self.release: Any = None
        self.together = asyncio.Event()
        self._together = together

    async def extract(self, session: Any) -> Any:
        self.active += 1
        self.most = max(self.most, self.active)
        if self.active >= self._together:
            self.together.set()
        try:
            await self.together.wait()
            if self.release is not None:
                await self.release.wait()
            self.sessions += 1
            return await self.inner.extract(session)
        finally:
            self.active -= 1


async def _until(condition: Any) -> None:
    """Wait (in the event loop) until ``condition()`` holds; :data:`HUNG_S` ends a run that never gets there."""
    import asyncio

    async with asyncio.timeout(HUNG_S):
        while not condition():  # noqa: ASYNC110 (the objects watched offer no event to wait for)
            await asyncio.sleep(0.01)


#: When a test that waits for a condition is taken as hung (not a measure of speed).
HUNG_S = 600


@pytest.mark.parametrize("slots", [1, 3])
async def test_background_runs_take_turns(system: MemorySystem, slots: int) -> None:
    """Sessions of five chats end together: the background runs work on ``slots`` chats at once (all
    five at once before), and every chat is archived in the end."""
    import asyncio

    from agent_memory.formation import SessionArchiver
    from data_layer import Scope

    extractor = _CountingExtractor(together=slots)  # the first runs wait for each other: at once, if allowed
    archiver = SessionArchiver(system.layer, extractor=extractor, background_runs=slots)
    friends = [f"friend{i}" for i in range(5)]
    for i, friend in enumerate(friends):
        await store(system, msg(f"我上周去了第{i}个城市旅行，玩得很开心", at=T0, friend=friend))
    later = T0 + timedelta(hours=3)  # every session is over (idle gap)
    tasks = [archiver.schedule(Scope.of("u1", friend), now=later) for friend in friends]
    assert all(task is not None for task in tasks)
    async with asyncio.timeout(HUNG_S):  # fewer slots than runs waiting for each other would never end
        await archiver.drain()
    assert extractor.most == slots and extractor.sessions == 5
    for friend in friends:
        page = await system.layer.memory.list_memories(user_id="u1", friend_id=friend, memory_types=["event"])
        assert len(page.items) == 1, friend


async def test_a_waiting_caller_does_not_queue_behind_background_runs(system: MemorySystem) -> None:
    """``run`` (someone waits for it) goes ahead while the one background slot is taken and another
    chat's background run waits for it."""
    import asyncio

    from agent_memory.formation import SessionArchiver
    from data_layer import Scope

    extractor = _CountingExtractor()
    gate = extractor.release = asyncio.Event()  # the first background run holds the slot until set
    archiver = SessionArchiver(system.layer, extractor=extractor, background_runs=1)
    for friend in ("busy", "queued", "asked"):
        await store(system, msg(f"我在{friend}公司工作了三年", at=T0, friend=friend))
    later = T0 + timedelta(hours=3)
    busy = archiver.schedule(Scope.of("u1", "busy"), now=later)
    await _until(lambda: extractor.active == 1)  # "busy" is extracting now, held by the gate
    queued = archiver.schedule(Scope.of("u1", "queued"), now=later)
    slot = archiver._background_slots
    await _until(lambda: len(getattr(slot, "_waiters", None) or ()) == 1)  # "queued" waits for the slot
    assert busy is not None and queued is not None
    assert extractor.active == 1 and not busy.done() and not queued.done()
    extractor.release = None  # the asked run extracts without the gate
    async with asyncio.timeout(HUNG_S):  # were it queued behind the held slot, it would never end
        report = await archiver.run(user_id="u1", friend_id="asked", now=later)
    assert report.sessions == 1 and not busy.done() and not queued.done()
    gate.set()
    await archiver.drain()
    assert extractor.sessions == 3 and extractor.most == 2  # the asked run beside the busy one
    for friend in ("busy", "queued", "asked"):
        page = await system.layer.memory.list_memories(user_id="u1", friend_id=friend, memory_types=["event"])
        assert len(page.items) == 1, friend


def test_background_runs_must_be_a_positive_whole_number(system: MemorySystem) -> None:
    from agent_memory.formation import SessionArchiver

    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="background_runs must be a whole number"):
            SessionArchiver(system.layer, background_runs=bad)


async def test_draining_one_chat_does_not_wait_for_the_others(system: MemorySystem) -> None:
    """Before a friend is deleted, only its chat's background run is waited for: with the runs taking
    turns, waiting for all would wait for every other chat's run queued before."""
    import asyncio

    from agent_memory.formation import SessionArchiver
    from data_layer import Scope

    extractor = _CountingExtractor()
    gate = extractor.release = asyncio.Event()
    archiver = SessionArchiver(system.layer, extractor=extractor, background_runs=1)
    for friend in ("busy", "queued"):
        await store(system, msg(f"我在{friend}公司工作了三年", at=T0, friend=friend))
    later = T0 + timedelta(hours=3)
    busy = archiver.schedule(Scope.of("u1", "busy"), now=later)
    await asyncio.sleep(0.05)
    queued = archiver.schedule(Scope.of("u1", "queued"), now=later)
    assert busy is not None and queued is not None
    await asyncio.wait_for(archiver.drain(scope=Scope.of("u1", "idle")), 1)  # no run of its own: at once
    waiting = asyncio.ensure_future(archiver.drain(scope=Scope.of("u1", "queued")))
    await asyncio.sleep(0.1)
    assert not waiting.done()  # its run waits for the busy one's slot
    gate.set()
    await asyncio.wait_for(waiting, 5)
    assert queued.done() and busy.done()
    with pytest.raises(TypeError, match="scope must be a Scope"):
        await archiver.drain(scope=("u1", "queued"))
