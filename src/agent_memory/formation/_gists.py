"""Event gists: dated, extractive summaries of what happened in a session, linked to their messages.

One gist per episode: a session's user sentences are grouped by what they are about - the things,
people and places they name, the profile topics they state something on - and a sentence that goes
on with the one before ("他一直说我太忙了") stays with it. Each episode's most informative sentences, in
order, become one gist: "2026-01-02：用户说：“工作压力大”；“下周要做项目汇报”". A gist never holds a
sentence unrelated to the rest (the work pressure, "我不吃辣" and a breakup said in one session are
three gists, so a question about one recalls none of the others). Only the messages whose sentences
are quoted are its sources, so citing a gist cites exactly what it was drawn from. Greetings and
one-word replies carry nothing and are skipped. A gist that quotes a plan ("下周五要汇报") records when
its time passes, each sentence read at the time it was said (``agent_memory.history.lapse_of``).
Offline and deterministic: the same session always gives the same gists (and the same keys, so
re-archiving writes nothing new).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from data_layer import MessageRecord

from ..domain import QUESTION_MARK_CLASS
from ..history import latest_lapse
from ..text import Tokenizer, content_word, fold, has_cjk, informativeness, parse_time_expressions
from ._statements import statement_topics

#: Sentences quoted per gist, and characters kept of each.
SENTENCES_PER_GIST = 3
SENTENCE_CHARS = 90
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;\n])|(?<=\.)\s")
_GREETING = re.compile(
    r"^(你好|您好|嗨|哈+|嗯+|哦+|好的?|谢谢|多谢|晚安|早安?|早上好|再见|拜拜|在吗|ok|okay|hi|hello|hey|thanks?|"
    r"thank you|bye|good (morning|night)|lol|yes|no|sure)[\s!！。.,，~]*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class GistDraft:
    """A gist before it is stored: its date, text and source message ids."""

    date: datetime
    content: str
    source_ids: tuple[int, ...]
    #: when the plan it quotes becomes the past (``agent_memory.history.lapse_of``), if it names a time to come
    lapses_at: datetime | None = None


def _sentences(text: str) -> list[str]:
    parts = [p.strip() for p in _SENTENCE_END.split(text[:4000]) if p and p.strip()]
    return [p for p in parts if not _GREETING.match(p)]


def informative(text: str, tokenizer: Tokenizer) -> bool:
    """Whether a message says something (not a greeting or a one-word reply)."""
    flat = " ".join(text.split())
    return not _GREETING.match(flat) and len(tokenizer.unique_tokens(flat[:2000])) >= 2


#: Sentences of one session read at most (a pasted document is not a chat).
MAX_SENTENCES = 200
#: A word this common in general use (工作, 公司, 时候) ties no two sentences to one episode.
EPISODE_WORD_WEIGHT = 0.6
#: A sentence that opens with one of these goes on with the user's previous sentence ("他一直说我太忙了"
#: after the breakup, "嗯，明天再看看" after the assistant's advice on it).
_CONTINUES = re.compile(
    r"^(?:他|她|它|这|那|所以|而且|因为|然后|结果|不过|但是|可是|但|还|也|并且|后来|嗯|好的|好吧|对啊|是啊|是的|哈哈|"
    r"(?:he|she|it|they|this|that|so|and|but|because|also|then|yeah|yes|ok|okay|right|haha)\b)",
    re.IGNORECASE,
)
#: ... and these open a new subject, even in answer to a question ("对了，我不吃辣").
_SHIFTS = re.compile(r"^(?:对了|另外|还有件事|换个话题|顺便|(?:by the way|btw|anyway|also,)\b)", re.IGNORECASE)
#: A demonstrative opening: it points back ("这让我很难过"), unless it opens a time counted from now.
_DEMONSTRATIVE = re.compile(r"^(?:这|那|this\b|that\b)", re.IGNORECASE)
#: The assistant asked: the user's next message answers about what was being talked of ("练到哪一步了？").
_ASKS = re.compile(QUESTION_MARK_CLASS + r"\W*$")
#: A question for a content (what, which, how...): whatever the user says next answers it.
_ASKS_WHAT = re.compile(
    r"什么|哪|怎么|怎样|如何|谁|多少|多久|多大|几|为什么|为啥|"
    r"\b(?:what|which|where|when|who|whom|whose|why|how)\b",
    re.IGNORECASE,
)
#: Any other question asks yes or no ("她还好吗？"): Chinese answers it by affirming or denying with
#: 是, 对, 有, 嗯 or 不, 没 (or by echoing the question's words) in the reply's first clause.
_SAYS_YES_OR_NO = re.compile(r"[是对有嗯不没]|\b(?:yes|yeah|yep|yup|no|nope|not|sure|maybe)\b|n't\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[，,；;：:。！？!?]")


def _points_back(sentence: str, *, said_at: datetime) -> bool:
    """Whether a sentence opens by going on with the one before (see :data:`_CONTINUES`). A demonstrative
    that opens a time counted from now ("这周天气好", "这个月的收入", "this week") names when the
    sentence happened, as 今天 or 本周 would: it points back at nothing said before."""
    if not _CONTINUES.match(sentence) or _SHIFTS.match(sentence):
        return False
    if not _DEMONSTRATIVE.match(sentence):
        return True
    opening = fold(sentence[:40])
    return not any(opening.startswith(fold(r.expression)) for r in parse_time_expressions(opening, now=said_at))


def _answers(question: str, reply: str, tokenizer: Tokenizer) -> bool:
    """Whether the user's ``reply`` answers the assistant's ``question`` (and so stays with what the
    question was about). A question for a content is answered by whatever follows ("练到哪一步了？" ->
    "刚学会一个换牌的动作"); a yes-or-no question by a first clause that affirms or denies, or echoes
    the question's words ("他知道你的感受吗？" -> "一直没说"). A reply that does neither has left the
    question for a subject of its own ("她还好吗？" -> "周末在家追剧").
    """
    if _SHIFTS.match(reply):
        return False
    if _ASKS_WHAT.search(question):
        return True
    first = _CLAUSE_END.split(reply, maxsplit=1)[0]
    if _SAYS_YES_OR_NO.search(first):
        return True
    asked = {t for t in tokenizer.unique_tokens(question) if content_word(t)}
    return bool(asked & {t for t in tokenizer.unique_tokens(first) if content_word(t)})


@dataclass(frozen=True, slots=True)
class _Said:
    """One informative sentence of a user message, and what it is about."""

    message: MessageRecord
    text: str
    weight: int
    about: frozenset[str]
    continues: bool  # goes on with the sentence before (see _CONTINUES, _SHIFTS, _ASKS)


def _about(sentence: str, tokenizer: Tokenizer) -> frozenset[str]:
    """What a sentence is about: its uncommon content words (things, people, places, qualities), and
    the profile topics it states something on (饮食 for "我不吃辣" and "我喜欢吃火锅")."""
    words = {
        t for t in tokenizer.unique_tokens(sentence) if content_word(t) and informativeness(t) >= EPISODE_WORD_WEIGHT
    }
    return frozenset(words | {f"topic:{label}" for label in statement_topics(sentence)})


def _episodes(said: Sequence[_Said]) -> list[list[_Said]]:
    """The sentences grouped by what they are about: two share an episode when they name a word or a
    topic in common, or the later one goes on with the sentence just before it (it opens with 他/所以/嗯
    ..., or answers the assistant's question, and does not open a new subject with 对了 / "by the way");
    in order of each episode's first sentence."""
    parent = list(range(len(said)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for j, later in enumerate(said):
        for i in range(j):
            if said[i].about & later.about or (i == j - 1 and later.continues):
                parent[root(j)] = root(i)
    groups: dict[int, list[_Said]] = {}
    for i, item in enumerate(said):
        groups.setdefault(root(i), []).append(item)
    return sorted(groups.values(), key=lambda g: said.index(g[0]))


def make_gists(messages: Sequence[MessageRecord], *, tokenizer: Tokenizer) -> list[GistDraft]:
    """The gists of one session's messages (oldest first): one per episode, none for small talk."""
    said: list[_Said] = []
    question = ""  # the assistant's question the user's next message may answer
    for message in sorted(messages, key=lambda m: (m.created_at, m.id)):
        if message.role != "user":
            text = message.content.strip()
            if _ASKS.search(text):
                question = (_sentences(text) or [text])[-1]
            continue
        for n, sentence in enumerate(_sentences(message.content)):
            weight = len(tokenizer.unique_tokens(sentence))
            if weight >= 2 and len(said) < MAX_SENTENCES:
                answers = bool(question) and n == 0 and _answers(question, sentence, tokenizer)
                continues = _points_back(sentence, said_at=message.created_at) or answers
                said.append(_Said(message, sentence, weight, _about(sentence, tokenizer), continues and bool(said)))
        question = ""
    gists = []
    for episode in _episodes(said):
        best = sorted(episode, key=lambda s: -s.weight)[:SENTENCES_PER_GIST]
        best.sort(key=episode.index)
        day = episode[0].message.created_at
        sources = tuple(dict.fromkeys(s.message.id for s in best))
        lapse = latest_lapse([(s.text, s.message.created_at) for s in best])
        gists.append(GistDraft(day, _quote(day, [_clip(s.text) for s in best]), sources, lapse))
    return gists


def _quote(day: datetime, sentences: Sequence[str]) -> str:
    """The gist's text: its date and the user's own sentences in quotation marks. Quoted, "我" stays the
    user: "用户提到我和女朋友分手了" would read as if the assistant had. The gist is extractive, so its
    words are the user's, as the source messages it cites show."""
    if has_cjk("".join(sentences)):
        return f"{day:%Y-%m-%d}：用户说：" + "；".join(f"“{s}”" for s in sentences)
    return f"{day:%Y-%m-%d}: the user said " + "; ".join(f'"{s}"' for s in sentences)


def _clip(sentence: str) -> str:
    flat = " ".join(sentence.split()).rstrip("。.!！?？;；,，")
    return flat if len(flat) <= SENTENCE_CHARS else flat[: SENTENCE_CHARS - 1] + "…"
