"""Precision on both backends: neighbour lifting only inside one conversation session, through the
stored ``session_id`` metadata (read in SQL on SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from data_layer import SESSION_FIELD, NewMemory

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


async def _keys(system: Any, text: str) -> list[str]:
    return [h.memory_key for h in await system.search.search(text, user_id="u1", now=NOW)]


async def test_memories_written_minutes_apart_do_not_recall_each_other(system: Any) -> None:
    """The newcomer's case: "café" recalled "改成去成都" only because it was written minutes later."""
    t = NOW - timedelta(days=1)
    await system.layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory("cafe", "周末喜欢去 café 看书", created_at=t),
            NewMemory("trip", "旅行计划改成去成都", created_at=t + timedelta(minutes=2)),
        ],
    )
    assert await _keys(system, "café") == ["cafe"]


async def test_turns_of_one_session_find_each_other_and_other_sessions_do_not(words_system: Any) -> None:
    system = words_system  # the words alone: this is about lifting, not about likeness in meaning
    t = NOW - timedelta(days=1)
    turns = [
        ("q1", "公司停车场的车位号是多少？", "1", 0),
        ("a1", "B2 层 117 号，靠近电梯", "1", 1),
        ("q2", "雨伞放在哪个柜子？", "s2", 2),
        ("a2", "门口鞋柜第二格", "s2", 3),
    ]
    await system.layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory(k, text, created_at=t + timedelta(minutes=m), metadata={SESSION_FIELD: s})
            for k, text, s, m in turns
            if k != "a1"
        ]
        + [
            NewMemory("a1", "B2 层 117 号，靠近电梯", created_at=t + timedelta(minutes=1), metadata={SESSION_FIELD: 1})
        ],  # a number names the same session as "1"
    )
    system.search.neighbours = None  # 停车场 and 门口 are near in meaning (0.61); this is about lifting
    found = await _keys(system, "停车场车位")
    assert found[:1] == ["q1"]
    assert "a1" in found  # the answer, through its question in the same session
    assert not {"q2", "a2"} & set(found)  # the next session, a minute later, is not lifted


async def test_the_reply_to_a_matching_question_is_lifted_and_nothing_else(words_system: Any) -> None:
    """The question "How long have you had them?" matches; its answer, "three years now", holds none of
    its words. The turn after a question (the next memory of its type: a gist between them is passed over)
    is lifted to 0.9 of the question's relevance; after a statement it is not, nor is the turn before,
    nor a reply the filters leave out."""
    system = words_system
    t = NOW - timedelta(days=1)
    opening = {"u1": "Awww! How long have you had the turtles?", "u2": "Awww! You have had the turtles a long time."}
    for user, first in opening.items():
        turns = [
            ("before", "I went to the pet shop on Sunday.", "conversation"),
            ("ask", first, "conversation"),
            ("gist", "Talked about pets: turtles, a pet shop", "general"),  # another kind (a gist): passed over
            ("reply", "Three years now, they bring me so much joy.", "conversation"),
            ("after", "My sister started a painting class.", "conversation"),
        ]
        await system.layer.memory.add_many(
            user_id=user,
            memories=[
                NewMemory(k, text, memory_type=kind, created_at=t + timedelta(minutes=i), metadata={SESSION_FIELD: "s"})
                for i, (k, text, kind) in enumerate(turns)
            ]
            + [NewMemory("tank", "Nate cleaned the turtle tank", created_at=t)],
        )
    question = "How long has Nate had his turtles?"

    def raw(score: float) -> float:  # the relevance under the reported scale (``calibrate``)
        return 1 - (1 - score) ** (1 / 3)

    asked = {h.memory_key: h.score for h in await system.search.search(question, user_id="u1", now=NOW)}
    told = {h.memory_key: h.score for h in await system.search.search(question, user_id="u2", now=NOW)}
    assert asked["gist"] == pytest.approx(told["gist"], abs=0.02)  # the gist between them is not the reply
    assert raw(asked["reply"]) == pytest.approx(0.9 * raw(asked["ask"]), rel=0.02)
    assert asked["reply"] > asked["before"]
    # a statement's next turn is not lifted: it and the turn before are listed through the session's words
    # (the neighbours find them), and neither holds a word of the question, so nothing supports them
    assert told["reply"] == told["before"] == 0.0 < told["ask"]
    assert told["reply"] < asked["reply"] - 0.1
    assert asked["before"] == pytest.approx(told["before"], abs=0.02)  # the turn before is not lifted
    before_reply = await system.search.search(question, user_id="u1", end=t + timedelta(minutes=3), now=NOW)
    assert {"ask", "gist"} <= {h.memory_key for h in before_reply}
    assert "reply" not in {h.memory_key for h in before_reply}  # a filter keeps a reply out as any memory


async def test_a_question_naming_one_speaker_weighs_the_others_words_less(words_system: Any) -> None:
    """ "What does Joanna do while she writes?" is about Joanna: her words rank before the same words said
    by Nate, whose relevance counts two thirds; a memory without a speaker, and a question naming both
    speakers, are left alone. u2 holds the same memories without speakers."""
    system = words_system
    t = NOW - timedelta(days=1)
    said = [
        ("nate", "Nate", "I write every night with the stuffed dog beside me"),
        ("joanna", "Joanna", "I write every night with the stuffed dog beside me"),
        ("plain", None, "a stuffed dog sits beside the desk"),
    ]
    for user in ("u1", "u2"):
        await system.layer.memory.add_many(
            user_id=user,
            memories=[
                NewMemory(k, text, created_at=t, metadata={"speaker": who} if who and user == "u1" else {})
                for k, who, text in said
            ],
        )

    def raw(score: float) -> float:  # the relevance under the reported scale (``calibrate``)
        return 1 - (1 - score) ** (1 / 3)

    async def scores(user: str, text: str) -> dict[str, float]:
        return {h.memory_key: h.score for h in await system.search.search(text, user_id=user, now=NOW)}

    question = "What does Joanna do while she writes, the stuffed dog?"
    about, control = await scores("u1", question), await scores("u2", question)
    assert list(about)[:1] == ["joanna"]
    assert control["nate"] == control["joanna"]  # the same words: without speakers, a tie
    assert raw(about["nate"]) == pytest.approx(2 / 3 * raw(control["nate"]), rel=0.01)
    assert about["joanna"] == control["joanna"] and about["plain"] == control["plain"]
    both = await scores("u1", "What do Joanna and Nate do while she writes, the stuffed dog?")
    assert both["nate"] == both["joanna"]


# -- what a score means: the share of the message a memory covers ---------------------------------------

EVERYDAY = {
    "parents": "今天和爸妈视频，他们一直问我吃得好不好",
    "income": "这个月的收入终于比支出多了",
    "photos": "学校运动会我拍了好多照片",
    "phone": "我用的手机是小米14，买了快一年",
    "boss": "我上司身高一米八五，以前打过篮球",
}


async def _store(system: Any, texts: dict[str, str]) -> None:
    """Store ``{key: text}`` for u1, written two days before :data:`NOW`."""
    memories = [NewMemory(k, t, created_at=NOW - timedelta(days=2)) for k, t in texts.items()]
    await system.layer.memory.add_many(user_id="u1", memories=memories)


async def _scores(system: Any, text: str) -> dict[str, float]:
    """Scores by key of a search for ``text`` over :data:`EVERYDAY` (stored on the first call)."""
    if not (await system.layer.memory.list_memories(user_id="u1")).items:
        await _store(system, EVERYDAY)
    return {h.memory_key: h.score for h in await system.search.search(text, user_id="u1", now=NOW)}


@pytest.mark.parametrize("message", ["主子今天胃口好多了，总算松了口气", "钱终于够了，明天就去下单任天堂的掌机"])
async def test_a_memory_sharing_only_an_everyday_word_stays_under_the_recall_threshold(
    system: Any, message: str
) -> None:
    """今天 and 终于 are all these messages share with the memories; counted over the words the memories
    hold, such a memory covered "all" of the message and scored 0.58-0.82, over the recall's 0.5."""
    scores = await _scores(system, message)
    assert scores  # still listed, as a weak match
    assert max(scores.values()) < 0.5


@pytest.mark.parametrize("message", ["主子胃口好多了。今天好累。", "终于周五了！主子胃口好多了"])
async def test_a_short_sentence_of_everyday_words_does_not_recall_a_memory_holding_them(
    system: Any, message: str
) -> None:
    """A sentence is scored on its own only for the memories that hold one of its content words: 今天
    and 终于 alone do not make "今天和爸妈视频……" or "这个月的收入终于……" about the cat."""
    assert max((await _scores(system, message)).values()) < 0.5


async def test_a_keyword_filter_is_searched_with_every_sentence_not_as_a_sentence_of_its_own(words_system: Any) -> None:
    """The filter keywords are added to the searched text; after a "？" they would have been a sentence
    of their own that every memory the filter lets through matches fully. (The words' scores: a sentence
    encoder reads the "？" too.)"""
    system = words_system
    memories = [NewMemory("port", "数据库端口改成了5433"), NewMemory("backup", "数据库每天凌晨备份")]
    await system.layer.memory.add_many(user_id="u1", memories=memories)

    async def scores(text: str) -> dict[str, float]:
        hits = await system.search.search(text, user_id="u1", now=NOW, keywords=["数据库"])
        return {h.memory_key: h.score for h in hits}

    asked, plain = await scores("端口改成多少了？"), await scores("端口改成多少了")
    assert asked == plain
    assert max(asked, key=asked.get) == "port" and asked["backup"] < asked["port"] - 0.2


async def test_a_question_keeps_its_memory_although_it_names_what_it_asks(system: Any) -> None:
    """型号 and 多高 are what the questions ask; the memory holds the answer, not the word."""
    assert (await _scores(system, "我的手机是什么型号来着？"))["phone"] >= 0.5
    scores = await _scores(system, "我上司有多高来着？")
    assert max(scores, key=scores.get) == "boss" and scores["boss"] >= 0.5


async def test_the_last_sentence_of_a_long_message_finds_its_memory(system: Any) -> None:
    """The question comes after two sentences of small talk: the memory answering it covers that sentence,
    and is first; the small talk's 今天 does not lift the memory that merely says 今天 over it."""
    message = "今天天气真好，阳光明媚，想去海边走走。昨天看的电视剧也挺好看的。对了，我上司有多高来着？"
    scores = await _scores(system, message)
    assert max(scores, key=scores.get) == "boss"
    assert scores["boss"] >= 0.5 and scores.get("parents", 0.0) < 0.5


async def test_a_word_of_the_message_counts_once_not_again_inside_its_compound(system: Any) -> None:
    """A rare compound is searched as itself and its words (今天天气 was 今天天气, 今天, 天天 and 天气). A memory
    saying only 今天 matched 今天, and through it the compound at the prefix tier: it covered most of
    "今天天气真好" (0.72) and passed the answer to the question that follows."""
    scores = await _scores(system, "今天天气真好……对了，我上司有多高来着？")
    assert max(scores, key=scores.get) == "boss" and scores["boss"] >= 0.5
    assert scores.get("parents", 0.0) < 0.5


async def test_a_memory_holding_the_compound_or_its_head_still_matches_it(system: Any) -> None:
    """Counting a word once leaves the compound's own matches: the memory holding 今天天气 covers the
    message, the one holding 天气 (the head) part of it, the one saying only 今天 less and under the recall
    threshold (0.70 when 今天 also matched the compound, and 一直 the 天天 across 今天 | 天气), and a prefix
    not in the message still counts."""
    await _store(
        system,
        {
            "weather": "今天天气不错，适合去公园跑步",
            "forecast": "天气预报说周末有大雨",
            "video": "今天和爸妈视频，他们一直问我吃得好不好",
        },
    )
    hits = await system.search.search("今天天气怎么样", user_id="u1", now=NOW)
    scores = {h.memory_key: h.score for h in hits}
    assert [h.memory_key for h in hits][:2] == ["weather", "forecast"]
    video = scores.get("video", 0.0)
    assert scores["weather"] >= 0.87 and scores["forecast"] > video and video < 0.5
    prefix = {h.memory_key: h.score for h in await system.search.search("天气", user_id="u1", now=NOW)}
    assert prefix["forecast"] >= 0.87 and prefix["weather"] >= 0.87  # 天气预报 starts with 天气


@pytest.mark.parametrize("message", ["今天天气真好", "今天好开心呀！", "最近工作好忙啊", "刚才的事别提了"])
async def test_a_time_counted_from_now_is_no_word_a_memory_shares(system: Any, message: str) -> None:
    """A memory's 今天, 最近 or 刚才 is the time it was said, the message's is now: "今天和爸妈视频……" is not
    about today's weather (it scored 0.72), nor "……最近不爱吃饭" about work (0.68). The time a message
    names is read apart and weighs by date (see test_search)."""
    await _store(
        system,
        {
            "video": "今天和爸妈视频，他们一直问我吃得好不好",
            "cat": "我家猫叫主子，三岁了，最近不爱吃饭",
            "late": "刚才开会又拖堂了",
        },
    )
    hits = await system.search.search(message, user_id="u1", now=NOW)
    assert all(h.score < 0.3 for h in hits)


async def test_the_recall_brings_nothing_for_a_message_about_something_else(system: Any) -> None:
    """The recall_memory output at the default threshold: no profile or event for the cat's appetite."""
    await system.layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory("films", "喜欢科幻电影，不喜欢恐怖片", memory_type="profile"),
            NewMemory("video", "今天和爸妈视频，他们一直问我吃得好不好", memory_type="event", friend_id="xiaozhu"),
        ],
    )
    request = {"query": "主子今天胃口好多了，总算松了口气", "friend_id": "xiaozhu"}
    out = await system.recall_memory(user_id="u1", request=request)
    assert out.profiles == [] and out.events == []
    films = await system.recall_memory(user_id="u1", request={**request, "query": "推荐一部科幻电影吧"})
    assert [p.content for p in films.profiles] == ["喜欢科幻电影，不喜欢恐怖片"]


async def test_a_question_is_about_what_it_asks_not_only_about_whom(words_system: Any) -> None:
    """ "我同事有多高？" asks for a height: a memory about a friend (朋友, a word near 同事 in meaning) is
    not its answer, as it was when the question's words were only 同事."""
    system = words_system
    await system.layer.memory.add_many(
        user_id="u1",
        memories=[NewMemory("hike", "周末和朋友去爬山了，累但开心"), NewMemory("height", "我同事身高162cm")],
    )
    for question in ("我同事有多高？", "我同事有多高来着？"):
        hits = await system.search.search(question, user_id="u1")
        assert hits[0].memory_key == "height" and hits[0].score >= 0.5, question
        assert all(h.score < 0.5 for h in hits if h.memory_key == "hike"), question


async def test_another_person_near_in_meaning_is_not_the_person_asked_about(words_system: Any) -> None:
    """Word vectors place 同事 near 朋友 and 女朋友 (they occur in the same sentences); the thesaurus names
    all three people of the user's relations, and a memory about a friend does not answer a question about
    a colleague. A listed synonym still does: 老公 finds 丈夫."""
    system = words_system
    await system.layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory("hike", "周末和朋友去爬山了，累但开心"),
            NewMemory("trip", "上周和女朋友去了一趟厦门"),
            NewMemory("job", "我同事小王跳槽去了字节"),
            NewMemory("husband", "我丈夫喜欢钓鱼"),
        ],
    )
    hits = await system.search.search("我同事最近怎么样", user_id="u1")
    assert [h.memory_key for h in hits] == ["job"]
    assert "husband" in [h.memory_key for h in await system.search.search("我老公周末干嘛", user_id="u1")]
    thesaurus = system.search.thesaurus
    assert thesaurus.names_person("同事") and thesaurus.names_person("朋友") and not thesaurus.names_person("电影")


async def test_a_word_that_only_occurs_with_the_asked_one_does_not_answer_it_alone(words_system: Any) -> None:
    """晚饭 and 晚上 are near in the word vectors (0.69): a memory about the evenings is listed for a
    question about dinner, but under the recall threshold, while the memory that holds the word is over it."""
    system = words_system
    await system.layer.memory.add_many(
        user_id="u1",
        memories=[NewMemory("sleep", "最近失眠，晚上总是睡不着"), NewMemory("dinner", "昨天晚饭吃了火锅")],
    )
    scores = {h.memory_key: h.score for h in await system.search.search("晚饭吃什么好？", user_id="u1")}
    assert scores["dinner"] >= 0.5 and scores.get("sleep", 0.0) < 0.5


async def test_a_turn_admitted_only_by_its_neighbours_words_is_found_but_not_supported(words_system: Any) -> None:
    """ "多穿点，喝点热水" holds no word of "又怕一直打喷嚏"; its neighbour "换季了一直打喷嚏" does. The
    neighbours find it and order it (it is listed, after the matching turn), but its reported score, the one
    the recall's threshold reads, is what its own words give; a question's reply keeps its share of the
    question's (the answer holds other words than the question by nature)."""
    system = words_system  # the words alone: the likeness in meaning would be a support of its own
    t = NOW - timedelta(days=1)
    turns = [
        ("sneeze", "换季了一直打喷嚏，可能是着凉了。"),
        ("advice", "多穿点，喝点热水。"),
        ("ask", "你的猫掉毛严重吗？"),
        ("answer", "还行，每天梳两次。"),
    ]
    await system.layer.memory.add_many(
        user_id="u1",
        memories=[
            NewMemory(
                k, text, memory_type="conversation", created_at=t + timedelta(minutes=i), metadata={SESSION_FIELD: "s"}
            )
            for i, (k, text) in enumerate(turns)
        ],
    )
    hits = await system.search.search("想去她屋里玩，又怕一直打喷嚏", user_id="u1", now=NOW)
    scores = {h.memory_key: h.score for h in hits}
    assert [h.memory_key for h in hits][:2] == ["sneeze", "advice"]
    assert scores["sneeze"] >= 0.5 > scores["advice"]
    kept = await system.search.search("想去她屋里玩，又怕一直打喷嚏", user_id="u1", now=NOW, min_relevance_score=0.3)
    assert [h.memory_key for h in kept] == ["sneeze"]  # a floor compares the score it reports
    cat = {h.memory_key: h.score for h in await system.search.search("猫掉毛严重怎么办", user_id="u1", now=NOW)}
    assert cat["answer"] >= 0.5  # the reply to the matching question
