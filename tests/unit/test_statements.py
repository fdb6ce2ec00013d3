"""Self-statement extraction: each rule in Chinese and English, speech kinds, no false statements, linear time."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import pytest

from agent_memory.formation import _statements as statements_module
from agent_memory.formation._statements import MAX_CHARS, Statement, extract_statements
from agent_memory.formation._topics import SINGLE_VALUED, topic_label

AT = datetime(2024, 5, 15, 10, 30, tzinfo=UTC)


def one(text: str, *, role: str = "user") -> Statement:
    found = extract_statements(text, role=role, at=AT, message_id=7)
    assert len(found) == 1, found
    return found[0]


def facts(text: str, *, role: str = "user") -> set[tuple[str, str, str, str]]:
    return {(s.topic, s.subject, s.polarity, s.speech) for s in extract_statements(text, role=role, at=AT)}


@pytest.mark.parametrize(
    ("text", "topic", "subject", "polarity"),
    [
        # interest / diet by the like verbs; food decides diet
        ("我很喜欢科幻电影", "interest", "科幻电影", "positive"),
        ("我不太喜欢恐怖片", "interest", "恐怖片", "negative"),
        ("我讨厌香菜", "diet", "香菜", "negative"),
        ("我超爱吃辣的", "diet", "辣", "positive"),
        ("I love sci-fi movies.", "interest", "sci-fi movies", "positive"),
        ("I'm really into jazz.", "interest", "jazz", "positive"),
        ("I can't stand horror movies.", "interest", "horror movies", "negative"),
        ("I hate cilantro.", "diet", "cilantro", "negative"),
        # diet
        ("我不吃辣", "diet", "辣", "negative"),
        ("我吃素", "diet", "肉", "negative"),
        ("我是素食者", "diet", "肉", "negative"),
        ("我对花生过敏", "diet", "花生", "negative"),
        ("我戒了咖啡", "diet", "咖啡", "negative"),
        ("I don't eat spicy food.", "diet", "spicy food", "negative"),
        ("I'm vegetarian.", "diet", "meat", "negative"),
        ("I'm allergic to peanuts.", "diet", "peanuts", "negative"),
        ("I quit coffee.", "diet", "coffee", "negative"),
        # health (non-food allergy, smoking, conditions)
        ("我对花粉过敏", "health", "花粉过敏", "positive"),
        ("我戒烟了", "health", "吸烟", "negative"),
        ("I have asthma.", "health", "asthma", "positive"),
        # schedule
        ("我每天7点起床", "schedule", "起床", "positive"),
        ("我经常熬夜", "schedule", "熬夜", "positive"),
        ("I usually go to bed at 11pm.", "schedule", "bedtime", "positive"),
        ("I wake up at 6:30 am.", "schedule", "waking up", "positive"),
        # family
        ("我有一个女儿", "family", "孩子", "positive"),
        ("我养了一只猫", "family", "猫", "positive"),
        ("我没有孩子", "family", "孩子", "negative"),
        ("I have a daughter.", "family", "kids", "positive"),
        ("I don't have kids.", "family", "kids", "negative"),
        ("My wife is great.", "family", "wife", "positive"),
    ],
)
def test_multi_valued_rules(text: str, topic: str, subject: str, polarity: str) -> None:
    s = one(text)
    assert (s.topic, s.subject, s.polarity, s.speech) == (topic, subject, polarity, "direct")
    assert s.topic_label == topic_label(topic, "zh" if any("\u4e00" <= c <= "\u9fff" for c in text) else "en")
    assert s.message_id == 7 and s.at == AT and s.role == "user" and not s.single_valued


@pytest.mark.parametrize(
    ("text", "topic", "value"),
    [
        ("我在字节跳动工作", "employer", "在字节跳动工作"),
        ("我在一家创业公司上班", "employer", "在一家创业公司工作"),
        ("我跳槽到字节了", "employer", "在字节工作"),
        ("I work at Google.", "employer", "works at Google"),
        ("I just joined Stripe.", "employer", "works at Stripe"),
        ("我是一名产品经理", "occupation", "产品经理"),
        ("我是互联网公司的产品经理", "occupation", "互联网公司的产品经理"),
        ("I'm a software engineer.", "occupation", "software engineer"),
        ("I work as a nurse.", "occupation", "nurse"),
        ("我住在北京", "residence", "住在北京"),
        ("我搬到了成都", "residence", "住在成都"),
        ("I live in Berlin.", "residence", "lives in Berlin"),
        ("I moved to Berlin last year.", "residence", "lives in Berlin"),
        ("我叫小明", "name", "小明"),
        ("My name is Alex Chen.", "name", "Alex Chen"),
        ("我今年二十八岁", "age", "28岁"),
        ("I'm 28 years old.", "age", "28 years old"),
    ],
)
def test_single_valued_rules(text: str, topic: str, value: str) -> None:
    s = one(text)
    assert (s.topic, s.value, s.subject, s.speech) == (topic, value, "", "direct")
    assert s.single_valued and topic in SINGLE_VALUED


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # where and what in one clause: the employer and the job (the README's own sample sentence)
        ("我在腾讯做产品经理", {("employer", "在腾讯工作"), ("occupation", "产品经理")}),
        ("我在字节跳动当了三年工程师", {("employer", "在字节跳动工作"), ("occupation", "工程师")}),
        (
            "I work at Google as a product manager.",
            {("employer", "works at Google"), ("occupation", "product manager")},
        ),
        ("我在北京做程序员", {("occupation", "程序员")}),  # a city is no employer
        ("我在家做饭", set()),  # no job named
        ("我在公司做项目", set()),
        ("我不在腾讯做产品经理了", set()),  # which of the two ended is not said
    ],
)
def test_employer_and_job_in_one_clause(text: str, expected: set[tuple[str, str]]) -> None:
    assert {(s.topic, s.value) for s in extract_statements(text, role="user", at=AT)} == expected


def test_several_objects_and_consistent_values() -> None:
    assert facts("我喜欢科幻电影和悬疑小说") == {
        ("interest", "科幻电影", "positive", "direct"),
        ("interest", "悬疑小说", "positive", "direct"),
    }
    assert facts("I love sci-fi movies and mystery novels.") == {
        ("interest", "sci-fi movies", "positive", "direct"),
        ("interest", "mystery novels", "positive", "direct"),
    }
    # the same fact said two ways has the same value (the profile writer compares values)
    assert one("我不吃辣").value == one("我现在不吃辣了").value == "不吃辣"


@pytest.mark.parametrize(
    ("text", "role", "expected"),
    [
        ("我妈总说“你要多吃辣”", "user", {("diet", "辣", "positive", "quoted")}),
        ('My bio says "I love wine".', "user", {("diet", "wine", "positive", "quoted")}),
        ("如果我不吃辣的话，你会怎么做？", "user", {("diet", "辣", "negative", "hypothetical")}),
        ("If I were vegetarian I would skip this.", "user", {("diet", "meat", "negative", "hypothetical")}),
        ("我打算搬到上海", "user", {("residence", "", "positive", "hypothetical")}),
        ("我朋友说她不吃香菜", "user", {("diet", "香菜", "negative", "reported")}),
        ("My friend says she doesn't eat cilantro.", "user", {("diet", "cilantro", "negative", "reported")}),
        ("你觉得我能吃辣吗？", "user", {("diet", "辣", "positive", "question")}),
        ("Do I like horror movies?", "user", {("interest", "horror movies", "positive", "question")}),
        ("Am I vegan?", "user", {("diet", "meat", "negative", "question")}),
        ("你说过你不吃辣", "assistant", {("diet", "辣", "negative", "reported")}),
        ("你喜欢恐怖片对吧？", "assistant", {("interest", "恐怖片", "positive", "reported")}),
        ("You mentioned you like horror movies.", "assistant", {("interest", "horror movies", "positive", "reported")}),
        ("你喜欢吃辣吗？", "assistant", {("diet", "辣", "positive", "question")}),
    ],
)
def test_speech_kinds(text: str, role: str, expected: set[tuple[str, str, str, str]]) -> None:
    assert facts(text, role=role) == expected
    assert all(s.role == role for s in extract_statements(text, role=role, at=AT))


def test_reported_scope_ends_with_its_clause_and_at_a_contrast() -> None:
    assert facts("他说的对，我确实不喜欢香菜") == {("diet", "香菜", "negative", "direct")}
    assert facts("我朋友说，她不吃香菜") == {("diet", "香菜", "negative", "reported")}
    assert facts("我室友的口头禅是“我最爱吃辣了”，可我自己根本不吃辣") == {
        ("diet", "辣", "positive", "quoted"),
        ("diet", "辣", "negative", "direct"),
    }


def test_change_and_past_markers() -> None:
    before, after = extract_statements("我以前很喜欢吃辣，现在一点都不能吃了", role="user", at=AT)
    assert (before.polarity, before.past, after.polarity, after.change_marker) == ("positive", True, "negative", True)
    before, after = extract_statements("I used to love spicy food, but now I can't stand it.", role="user", at=AT)
    assert before.past and after.subject == "spicy food" and after.polarity == "negative" and after.change_marker
    assert not one("I've never liked horror movies.").past  # present perfect is about now


@pytest.mark.parametrize(
    ("text", "role"),
    [
        ("你好呀，今天天气不错", "user"),
        ("Hello, how are you?", "user"),
        ("你喜欢什么电影？", "user"),  # a question about the assistant
        ("Do you like jazz?", "user"),
        ("他不吃辣", "user"),  # third person without a reporting verb
        ("She loves jazz.", "user"),
        ("我妈不吃辣", "user"),
        ("我们都喜欢火锅", "user"),
        ("我爱你", "user"),
        ("I love you", "user"),
        ("I like it", "user"),  # a pronoun with nothing to refer back to
        ("我喜欢的电影是星际穿越", "user"),
        ("我昨天吃了火锅", "user"),  # an event, not a habit
        ("我今天熬夜了", "user"),
        ("我在北京工作", "user"),  # a city is not an employer
        ("I live in a small flat.", "user"),  # only named places are residences
        ("我不是医生，但我知道", "user"),  # a hedge, not a change of job
        ("I'm not a doctor, but I think so.", "user"),
        ("我也喜欢科幻电影", "assistant"),  # the assistant about itself
        ("I love sci-fi too!", "assistant"),
        ("主要是我叫了外卖", "user"),
        ("看了一本小说，我很喜欢", "user"),
    ],
)
def test_no_false_statements(text: str, role: str) -> None:
    assert extract_statements(text, role=role, at=AT) == []


def test_empty_and_whitespace() -> None:
    assert extract_statements("", role="user", at=AT) == []
    assert extract_statements(" \n。。！？", role="user", at=AT) == []


def test_linear_time_and_length_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    # adversarial inputs for the bounded spans: one 100 KB token, long runs of the rule prefixes
    inputs = ("a" * 100_000, "我" * 100_000, "我很" * 50_000, "I really " * 12_000, "在" * 100_000)
    for text in inputs:
        assert extract_statements(text, role="user", at=AT) == []
    # with the cap lifted the regexes still run in linear time (about 1-2 s per 100 KB here; a nested
    # quantifier would take minutes): assert on the result, with a very generous time bound
    monkeypatch.setattr(statements_module, "MAX_CHARS", 10**7)
    started = time.perf_counter()
    assert extract_statements("我很" * 50_000, role="user", at=AT) == []
    assert extract_statements("I really " * 12_000, role="user", at=AT) == []
    assert time.perf_counter() - started < 60
    monkeypatch.undo()
    # the cap: a statement beyond MAX_CHARS is not read, one before it is
    padding = "嗯" * MAX_CHARS
    assert extract_statements(padding + "。我不吃辣", role="user", at=AT) == []
    assert len(extract_statements("我不吃辣。" + padding, role="user", at=AT)) == 1


def test_subject_forms_are_every_rules_subject_words() -> None:
    """A clause holding none of its allowed subjects' forms skips the rules: the forms must be all the
    words any rule's subject group accepts, each a plain word (no regex syntax left in it)."""
    from agent_memory.formation import _topics as T

    for lang, rules in T.RULES.items():
        for kind, pattern in rules:
            groups = T.SUBJECT_GROUP.findall(pattern.pattern)
            assert len(groups) == 1, (lang, kind)
            for form in groups[0].split("|"):
                assert form in T.SUBJECT_FORMS and re.fullmatch(r"[a-z ]+|[\u4e00-\u9fff]+", form), form


def test_clauses_without_an_allowed_subject_give_nothing_and_others_still_do() -> None:
    at = datetime(2025, 1, 1, tzinfo=UTC)
    # the assistant's reply quotes the user's memories: its own clauses about itself give no statement
    reply = "我记得：用户说：“我下周二要去北京出差”；最近在准备项目汇报。你喜欢科幻电影。"
    found = {(s.topic, s.subject, s.speech) for s in extract_statements(reply, role="assistant", at=at)}
    assert ("interest", "科幻电影", "reported") in found
    assert all(s.role == "assistant" for s in extract_statements(reply, role="assistant", at=at))
    assert extract_statements("最近在准备项目汇报，压力很大。", role="assistant", at=at) == []
    # an English possessive ("my") names the speaker although "i" is not written
    assert any(s.topic == "name" for s in extract_statements("My name is Ada.", role="user", at=at))


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("喜欢科幻电影，不喜欢恐怖片", ("兴趣",)),
        ("我是程序员，在腾讯上班，喜欢打羽毛球", ("职业", "工作单位", "兴趣")),
        ("I'm allergic to peanuts", ("diet",)),
        ("要是我喜欢爬山呢", ()),  # a hypothetical says nothing about the user
        ("我喜欢科幻电影吗？", ()),  # nor does a question
        ("帮我看看这段代码", ()),
    ],
)
def test_the_topics_a_text_states_are_its_statements_topics(text: str, labels: tuple[str, ...]) -> None:
    from agent_memory.formation import statement_topics

    assert statement_topics(text) == labels


def test_statement_topics_refuses_what_is_not_text() -> None:
    from agent_memory.formation import statement_topics

    with pytest.raises(TypeError, match="text must be a str, got int"):
        statement_topics(42)
