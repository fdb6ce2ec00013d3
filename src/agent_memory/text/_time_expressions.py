"""Time expressions in Chinese and English turned into time ranges relative to a reference time.

>>> from datetime import datetime, timezone
>>> now = datetime(2024, 4, 10, 15, 0, tzinfo=timezone.utc)   # a Wednesday
>>> [r.start.date().isoformat() for r in parse_time_expressions("上周我们聊了预算", now=now)]
['2024-04-01']
>>> r = parse_time_expressions("what did I do in May 2023?", now=now)[0]
>>> (r.start.date().isoformat(), r.end.date().isoformat(), r.precise)
('2023-05-01', '2023-06-01', True)

A plan reads its times ahead (``future=True``): "6月3日" said in May is this June 3, not last year's,
and 下周五, 明天, "in two weeks" are found (a question about the past never names them):

>>> r = parse_time_expressions("我6月3日考试，下周五要汇报", now=now, future=True)
>>> [(x.expression, x.start.date().isoformat()) for x in r]
[('6月3日', '2024-06-03'), ('下周五', '2024-04-19')]

Ranges are half-open ``[start, end)`` in the time zone of ``now``. ``precise`` ranges name a calendar
span (昨天, "last week", "in May 2023"); vague ones (最近, 上次, "recently") are a best guess and
should only be used as a soft preference, never as a hard filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from . import _time_en, _time_zh
from ._normalize import fold
from ._time_zh import zh_number as zh_number


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A half-open time span ``[start, end)`` found in text."""

    start: datetime
    end: datetime
    expression: str
    precise: bool
    #: the expression names a date on the calendar ("7 July, 2023", "May", "3月4日", "2023年"), not a
    #: span counted back from now ("上周", "yesterday"): a question that writes out a date is about then
    calendar: bool = False

    def contains(self, moment: datetime) -> bool:
        """True when ``moment`` falls inside the range."""
        return self.start <= moment < self.end


#: Chinese rules before English ones: on equal start and length the earlier rule wins.
_RULES = [*_time_zh.RULES, *_time_en.RULES]
#: A text about the future: each language's rules of times to come first, so a date without a year
#: ("6月3日", "on June 3") or a bare weekday is read as the next such day.
_AHEAD_RULES = [*_time_zh.AHEAD, *_time_zh.RULES, *_time_en.AHEAD, *_time_en.RULES]


def parse_time_expressions(text: str, *, now: datetime, future: bool = False) -> list[TimeRange]:
    """Every time expression in ``text`` as a :class:`TimeRange`, in reading order.

    Overlapping matches keep the longest (``2024年4月1日`` is one day, not also a month).
    ``now`` must be timezone-aware; ranges use its time zone. ``future``: the text is about a time to
    come (a plan, said at ``now``): dates without a year, months and weekdays are the next such ones
    (today included), and the expressions only a plan uses (明天, 下周五, 下个月, 月底, "tomorrow",
    "next Friday", "in two weeks") are read too; expressions of the past (上周, "yesterday") still
    name the past. Without it (a question, a recall), every time is read as one that has begun.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    folded = fold(text)
    found: list[tuple[int, int, TimeRange]] = []
    for rule in _AHEAD_RULES if future else _RULES:
        for match in rule.pattern.finditer(folded):
            try:
                span = rule.handler(match, now)
            except (ValueError, KeyError, OverflowError):
                span = None
            if span is None:
                continue
            found_range = TimeRange(span[0], span[1], match.group(0), rule.precise, rule.calendar)
            found.append((match.start(), match.end(), found_range))
    found.sort(key=lambda item: (item[0], -(item[1] - item[0])))
    kept: list[tuple[int, int, TimeRange]] = []
    for start, end, rng in found:
        if kept and start < kept[-1][1]:
            continue
        kept.append((start, end, rng))
    return [rng for _, _, rng in kept]


def asked_range(ranges: Sequence[TimeRange]) -> TimeRange | None:
    """The one range of a query's expressions it asks about: the first precise one, else the first."""
    precise = [r for r in ranges if r.precise]
    found = precise or list(ranges)
    return found[0] if found else None


def named_range(ranges: Sequence[TimeRange]) -> TimeRange | None:
    """:func:`asked_range` when it is precise, else ``None`` (see :func:`named_time_range`)."""
    found = asked_range(ranges)
    return found if found is not None and found.precise else None


def query_time_range(text: str, *, now: datetime) -> TimeRange | None:
    """The one range a query asks about: the first precise expression, else the first vague one."""
    return asked_range(parse_time_expressions(text, now=now))


def named_time_range(text: str, *, now: datetime) -> TimeRange | None:
    """The time a query names precisely ("上周", "in May", "on 7 July, 2023"), or ``None``: a vague
    word ("最近", "recently") names no span to measure a distance to or to read messages from.

    The one rule for "the time a question is about", used by the search's time decay and by the
    evidence recall's message window.
    """
    return named_range(parse_time_expressions(text, now=now))
