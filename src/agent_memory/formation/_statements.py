"""Chat messages -> typed self-statements (offline rules, Chinese and English).

A statement is what a message says about the user: a topic (diet, employer, ...), the subject it is
about ("辣", "sci-fi movies"), a display value ("不吃辣", "works at Google"), a polarity and - the part
that matters for conflict adjudication - *how* it was said:

- ``direct``: the user's own explicit statement (the only kind that may change a profile);
- ``quoted``: words inside quotation marks (“...”, "...", 「...」) that hold a first-person clause;
- ``hypothetical``: from a conditional or plan marker (如果/要是/打算, "if"/"would"/"planning to") to the
  end of the sentence, or until a contrast word (但是, "but") starts a new clause;
- ``reported``: after someone else's reporting verb (我朋友说/他觉得, "my friend says"), where he/she are
  accepted as the grammatical subject, and every statement by the assistant about "你"/"you" (a
  paraphrase of the user: "你说过你不吃辣", "you mentioned you like X", "你喜欢X对吧");
- ``question``: clauses with 吗/A-不-A or ending in "?" (a tag question by the assistant stays reported).

How it works: NFKC-normalise and cap the text (:data:`MAX_CHARS`), expand English contractions, take out
first-person quotations, split into sentences and clauses, give each clause a speech kind and the subjects
it may use (我/I for the user, 你/you for the assistant), then run the rules below over it.
Every regex is linear-time: no nested unbounded quantifiers, every free span is bounded ({1,24}).
A clause that says ``以前``/"used to" yields ``past=True`` statements; ``现在``/``开始``/"now"/"anymore"
set ``change_marker``. Both help adjudication order statements made in the same message.

The work is split by concern into private sibling modules; this module keeps the public result type
(:class:`Statement`, :data:`Polarity`, :data:`Speech`) and :func:`extract_statements`, which ties them together:

- :mod:`._clauses`: normalisation and the sentence/clause/speech analysis (:class:`Clause`);
- :mod:`._rules`: the rule handlers that turn a regex match in a clause into :class:`Draft` values;
- :mod:`._phrases`: the object-phrase helpers the handlers share (cleaning, splitting, negation).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from ._clauses import Clause as Clause
from ._clauses import _sentences
from ._clauses import prepare as prepare
from ._rules import Draft as Draft
from ._rules import run_rules as run_rules
from ._rules import speaks_first
from ._topics import is_single_valued, subject_key, topic_label

Polarity = Literal["positive", "negative", "neutral"]
Speech = Literal["direct", "quoted", "hypothetical", "reported", "question"]

#: Only the first MAX_CHARS characters of a message are read (bounds the work on pasted documents).
MAX_CHARS = 4000


@dataclass(frozen=True, slots=True)
class Statement:
    """One self-statement found in a message (see the module docstring for ``speech``)."""

    topic: str
    topic_label: str
    subject: str
    value: str
    polarity: Polarity
    speech: Speech
    role: str
    message_id: int | None
    at: datetime
    text: str
    single_valued: bool
    change_marker: bool = False  # 现在/开始/不再/"now"/"anymore": the speaker says something changed
    past: bool = False  # 以前/曾经/"used to"/"I worked": about an earlier state, not the current one


#: Any instant: the topics of a text do not depend on when it was said.
_TOPICS_AT = datetime(2000, 1, 1, tzinfo=UTC)


def statement_topics(text: str) -> tuple[str, ...]:
    """The labels of the profile topics ``text`` states something about (兴趣, 饮食, "interest" ...), in
    reading order, each once: what the archiver files a profile item under, read from any text.

    A profile written by an application ("喜欢科幻电影，不喜欢恐怖片") carries no topic, while the recall asks
    for the topic of a request for suggestions ("周末想放松一下，有什么推荐？" searches 兴趣 too): the write
    path stores these labels as the memory's keywords, as the archiver does for the items it writes. A
    question or a hypothetical ("要是我喜欢爬山呢") states nothing about the user.

    >>> statement_topics("喜欢科幻电影，不喜欢恐怖片"), statement_topics("I'm allergic to peanuts")
    (('兴趣',), ('diet',))
    >>> statement_topics("帮我看看这段代码")
    ()
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    found = extract_statements(text, role="user", at=_TOPICS_AT)
    return tuple(dict.fromkeys(s.topic_label for s in found if s.speech not in ("question", "hypothetical")))


def extract_statements(text: str, *, role: str, at: datetime, message_id: int | None = None) -> list[Statement]:
    """The self-statements in one message, in reading order, at most one per (topic, subject) and speech.

    ``role`` is who said it (``user`` or ``assistant``); ``at`` the message time (timezone-aware).
    Assistant messages only yield statements about the user ("你..."/"you..."), as paraphrases.
    """
    out: list[Statement] = []
    seen: set[tuple[str, str, str, str]] = set()
    previous: Draft | None = None
    for sentence, clauses in _sentences(prepare(text[:MAX_CHARS]), role):
        previous = None  # pronoun objects ("I can't handle it", 它) refer back within a sentence only
        carried = False  # "我搬家了，搬到了广州": a clause without a subject continues the speaker's previous one
        for clause in clauses:
            drafts = run_rules(clause, previous, carried=carried)
            carried = speaks_first(clause)
            for draft in drafts:
                previous = draft
                key = (draft.topic, subject_key(draft.subject), draft.polarity, clause.speech)
                if key in seen:
                    continue
                seen.add(key)
                single = is_single_valued(draft.topic)
                out.append(
                    Statement(
                        topic=draft.topic,
                        topic_label=topic_label(draft.topic, clause.lang),
                        subject="" if single else draft.subject,
                        value=draft.value,
                        polarity=draft.polarity,
                        speech=clause.speech,
                        role=role,
                        message_id=message_id,
                        at=at,
                        text=sentence.strip()[:500],
                        single_valued=single,
                        change_marker=draft.change or clause.change,
                        past=(draft.past or clause.past) and not clause.change,
                    )
                )
    return out
