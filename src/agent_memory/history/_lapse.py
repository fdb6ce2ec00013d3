"""Events that name their own end: a plan ("下周五要汇报", "I'm flying to Tokyo tomorrow") is current until
the time it names, and a past event after it.

The one rule of lapse that archiving, search and recall share. :func:`lapse_of` reads a statement with
the time it was said (the message's ``created_at``, not the time it was archived): a statement that is
no question, tells of no finished act (了/过/已经, "did", "went", "-ed") unless it says it is a plan,
and names a time to come lapses when the latest such time ends. A time counts as one to come when
the statement says it is a plan (要/打算/准备/将/会/计划, "going to", "will", "is on") and the time
has not ended; or, without such a word, when the time lies wholly ahead and its reading as the past
is not more than twice as near: "明天", "下周五" always, "我6月3日考试" said in May, not said on June 10
(then it was this June 3). A habit (每周五, "every Friday") names no end. The moment is stored as
``metadata.lapses_at``; from then on the memory is still found, as of any time, but marked past
(:func:`past_mark`) and ranked below current memories. Times are read in the time zone of ``said_at``.

Unlike ``expires_at`` (a time a user gave, after which the memory is not returned at all), a lapse
ends nothing: the event happened, or was due, and is history.

>>> from datetime import UTC, datetime
>>> monday = datetime(2026, 3, 9, 10, tzinfo=UTC)
>>> lapse_of("下周五要汇报", said_at=monday).isoformat()
'2026-03-21T00:00:00+00:00'
>>> lapse_of("上周五汇报了", said_at=monday) is None, lapse_of("下周五要汇报吗？", said_at=monday) is None
(True, True)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from data_layer import InvalidInputError, MemoryRecord

from ..domain import QUESTION_MARK_CLASS
from ..text import TimeRange, fold, parse_time_expressions
from ._validity import aware, parse_time

#: A sentence ends here (a gist quotes several; a message may say several things).
_SENTENCE = re.compile(r"(?<=[。！？!?；;\n])|(?<=\.)\s+|[“”\"]")
#: A question asks about a time; it plans nothing.
_QUESTION = re.compile(
    QUESTION_MARK_CLASS + r"\s*$|[吗么][\s。.!！~]*$|是不是|要不要|会不会|有没有|能不能|"
    r"^\s*(?:do|does|did|what|when|where|who|why|how|which|is|are|am|can|could|should|will|would|shall)\b"
)
#: A habit (每周五, "every Friday") names a time that comes again: it never becomes the past.
_HABIT = re.compile(
    r"每(?:天|日|晚|周|星期|礼拜|个?月|年)|\b(?:every|each)\s+(?:day|night|week|month|year|morning|evening|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
)
#: The speaker says it is a plan, an appointment or a time set for something.
_PLAN = re.compile(
    r"(?<![主只重])要(?![是求])|打算|准备|计划|将要|即将|(?<![即必])将(?![来军近])|(?<![机学社开])会(?![议员话谈计])|"
    r"安排|预计|预定|约了|约好|定了|定在|得去|想去|想要|\b(?:going to|gonna|will|shall|plan(?:ning)? to|"
    r"intend(?:ing)? to|about to|scheduled|due|booked|have to|need to|is on|are on|am on|['’]ll|['’]m \w+ing|"
    r"am \w+ing|is \w+ing|are \w+ing)\b"
)
#: A finished act: what was done is no plan (unless the speaker also says it is one: "要汇报了").
_DONE = re.compile(
    r"了(?!解)|(?<![经超通难不])过(?![来去年几两三])|已经|刚刚|曾经|完成|结束了|"
    r"\b(?:was|were|had|did|went|got|took|came|left|flew|ago|already|yesterday)\b|\b\w{3,}ed\b"
)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text[:4000]) if s and s.strip()]


def _ahead_of(found: TimeRange, said_at: datetime, behind: list[TimeRange]) -> bool:
    """Whether a time read ahead lies wholly after ``said_at`` and is not much farther ahead than its
    reading as a time begun (the same words read as the past, if they can be)."""
    if found.start <= said_at:
        return False
    same = [b for b in behind if b.expression == found.expression]
    if not same:  # only a plan says it (明天, "next month")
        return True
    past = same[0]
    if past.start == found.start:  # no other reading (这周末 said on a Wednesday)
        return True
    # told as not done, a time is rather one to come: unless the past one is more than twice as near
    return found.start - said_at <= 2 * (said_at - past.start)


def _sentence_lapse(sentence: str, said_at: datetime) -> datetime | None:
    folded = fold(sentence)
    if _QUESTION.search(folded) or _HABIT.search(folded):
        return None
    plan = bool(_PLAN.search(folded))
    if _DONE.search(folded) and not plan:
        return None
    ahead = [r for r in parse_time_expressions(sentence, now=said_at, future=True) if r.precise]
    if not ahead:
        return None
    behind = parse_time_expressions(sentence, now=said_at)
    ends = [r.end for r in ahead if r.end > said_at and (plan or _ahead_of(r, said_at, behind))]
    return max(ends, default=None)


def lapse_of(text: str, *, said_at: datetime) -> datetime | None:
    """When what ``text`` says, said at ``said_at``, becomes the past: the end of the latest time to come
    a plan in it names (see the module docs); ``None`` when it names none."""
    at = aware(said_at, "said_at")
    if at is None:
        raise InvalidInputError("said_at must be the time the text was said, e.g. 2026-03-01T00:00:00+00:00")
    ends = [end for s in _sentences(text) if (end := _sentence_lapse(s, at)) is not None]
    return max(ends, default=None)


def latest_lapse(texts: Sequence[tuple[str, datetime]]) -> datetime | None:
    """The latest :func:`lapse_of` of several statements, each with the time it was said (a gist's
    quoted sentences); ``None`` when none names a time to come."""
    ends = [end for text, at in texts if (end := lapse_of(text, said_at=at)) is not None]
    return max(ends, default=None)


def lapses_at(record: MemoryRecord) -> datetime | None:
    """When the memory's event becomes the past (``metadata.lapses_at``), if it names such a time."""
    return parse_time(record.metadata.get("lapses_at"))


def with_lapse(metadata: dict[str, Any] | None, at: datetime | None) -> dict[str, Any] | None:
    """``metadata`` with ``lapses_at`` set to ``at`` (checked: timezone-aware); ``metadata`` itself when
    ``at`` is ``None``."""
    end = aware(at, "lapses_at")
    return metadata if end is None else {**(metadata or {}), "lapses_at": end.isoformat()}


def lapsed(record: MemoryRecord, at: datetime) -> bool:
    """Whether the memory's event is the past at ``at``: the time it named has ended."""
    end = lapses_at(record)
    return end is not None and end <= at


#: What a memory whose time has passed says before its text, to the model and to a person.
PAST_MARK = "（已过去：{day}）"


def past_mark(record: MemoryRecord, at: datetime) -> str:
    """The mark a memory shows at ``at`` when its time has passed ("（已过去：2026-03-20）", the last day of
    the time it named), else ``""``."""
    end = lapses_at(record)
    if end is None or end > at:
        return ""
    return PAST_MARK.format(day=(end - timedelta(microseconds=1)).date().isoformat())


def marked(text: str, record: MemoryRecord, at: datetime) -> str:
    """``text`` (a memory's summary or content) with :func:`past_mark` before it."""
    return past_mark(record, at) + text
