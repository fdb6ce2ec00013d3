"""Time expressions in Chinese and English turned into time ranges relative to a reference time.

>>> from datetime import datetime, timezone
>>> now = datetime(2024, 4, 10, 15, 0, tzinfo=timezone.utc)   # a Wednesday
>>> [r.start.date().isoformat() for r in parse_time_expressions("上周我们聊了预算", now=now)]
['2024-04-01']
>>> r = parse_time_expressions("what did I do in May 2023?", now=now)[0]
>>> (r.start.date().isoformat(), r.end.date().isoformat(), r.precise)
('2023-05-01', '2023-06-01', True)

Ranges are half-open ``[start, end)`` in the time zone of ``now``. ``precise`` ranges name a calendar
span (昨天, "last week", "in May 2023"); vague ones (最近, 上次, "recently") are a best guess and
should only be used as a soft preference, never as a hard filter.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from ._normalize import fold


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A half-open time span ``[start, end)`` found in text."""

    start: datetime
    end: datetime
    expression: str
    precise: bool

    def contains(self, moment: datetime) -> bool:
        """True when ``moment`` falls inside the range."""
        return self.start <= moment < self.end


# -- numbers ---------------------------------------------------------------------------------------------

_ZH_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3, "couple of": 2,
    "few": 3, "several": 3,
}  # fmt: skip
_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
    "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
    "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
_EN_WEEKDAYS = {
    "monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "tues": 1, "wednesday": 2, "wed": 2, "thursday": 3,
    "thu": 3, "thurs": 3, "friday": 4, "fri": 4, "saturday": 5, "sat": 5, "sunday": 6, "sun": 6,
}  # fmt: skip
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}


def zh_number(text: str) -> int:
    """Arabic or Chinese numerals up to 9999 (``"十二"`` -> 12, ``"二十三"`` -> 23, ``"2024"`` -> 2024)."""
    if text.isdigit():
        return int(text)
    if all(c in _ZH_DIGITS for c in text):  # 二〇二三
        return int("".join(str(_ZH_DIGITS[c]) for c in text))
    total, current = 0, 0
    for char in text:
        if char in _ZH_DIGITS:
            current = _ZH_DIGITS[char]
        elif char == "十":
            total += (current or 1) * 10
            current = 0
        elif char == "百":
            total += (current or 1) * 100
            current = 0
        elif char == "千":
            total += (current or 1) * 1000
            current = 0
        else:
            raise ValueError(f"not a number: {text!r}")
    return total + current


def _en_number(text: str) -> int:
    return int(text) if text.isdigit() else _EN_NUMBERS[text]


# -- calendar helpers --------------------------------------------------------------------------------------


def _day(now: datetime, offset_days: int = 0) -> datetime:
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight + timedelta(days=offset_days)


def _month_start(year: int, month: int, like: datetime) -> datetime:
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    return like.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)


def _month(year: int, month: int, like: datetime) -> tuple[datetime, datetime]:
    return _month_start(year, month, like), _month_start(year, month + 1, like)


def _year(year: int, like: datetime) -> tuple[datetime, datetime]:
    return _month_start(year, 1, like), _month_start(year + 1, 1, like)


def _week(now: datetime, weeks_back: int) -> tuple[datetime, datetime]:
    monday = _day(now, -now.weekday()) - timedelta(weeks=weeks_back)
    return monday, monday + timedelta(days=7)


def _recent_weekday(now: datetime, weekday: int, weeks_back: int | None) -> datetime:
    if weeks_back is None:  # the most recent such day, today included
        return _day(now, -((now.weekday() - weekday) % 7))
    monday, _ = _week(now, weeks_back)
    return monday + timedelta(days=weekday)


def _past_month(month: int, now: datetime) -> tuple[datetime, datetime]:
    """The latest month ``month`` that has begun (this year's, else last year's)."""
    year = now.year if month <= now.month else now.year - 1
    return _month(year, month, now)


def _safe_day(year: int, month: int, day: int, like: datetime) -> datetime | None:
    try:
        return like.replace(year=year, month=month, day=day, hour=0, minute=0, second=0, microsecond=0)
    except ValueError:
        return None


# -- rules -----------------------------------------------------------------------------------------------

Span = tuple[datetime, datetime]
Handler = Callable[[re.Match[str], datetime], Span | None]


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    handler: Handler
    precise: bool


def _rule(pattern: str, precise: bool = True) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        _RULES.append(_Rule(re.compile(pattern), handler, precise))
        return handler

    return register


_RULES: list[_Rule] = []
_ZH_NUM = r"[0-9零〇一二两三四五六七八九十百]+"
_EN_NUM = (
    r"\d+|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
)
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY_NAMES = "|".join(sorted(_EN_WEEKDAYS, key=len, reverse=True))


# Chinese: explicit dates first (longest patterns win on overlap).
@_rule(rf"(?P<y>\d{{4}}|[零〇一二三四五六七八九]{{4}})年(?P<m>{_ZH_NUM})月(?P<d>{_ZH_NUM})[日号]")
def _zh_ymd(m: re.Match[str], now: datetime) -> Span | None:
    day = _safe_day(zh_number(m["y"]), zh_number(m["m"]), zh_number(m["d"]), now)
    return (day, day + timedelta(days=1)) if day else None


@_rule(rf"(?P<y>\d{{4}}|[零〇一二三四五六七八九]{{4}})年(?P<m>{_ZH_NUM})月(?:份)?")
def _zh_ym(m: re.Match[str], now: datetime) -> Span | None:
    month = zh_number(m["m"])
    return _month(zh_number(m["y"]), month, now) if 1 <= month <= 12 else None


@_rule(rf"(?<![0-9年])(?P<m>{_ZH_NUM})月(?P<d>{_ZH_NUM})[日号]")
def _zh_md(m: re.Match[str], now: datetime) -> Span | None:
    month, day_n = zh_number(m["m"]), zh_number(m["d"])
    if not 1 <= month <= 12:
        return None
    year = now.year if (month, day_n) <= (now.month, now.day) else now.year - 1
    day = _safe_day(year, month, day_n, now)
    return (day, day + timedelta(days=1)) if day else None


@_rule(r"(?P<y>\d{4}|[零〇一二三四五六七八九]{4})年(?!\d|[零〇一二两三四五六七八九十]+月)")
def _zh_y(m: re.Match[str], now: datetime) -> Span | None:
    return _year(zh_number(m["y"]), now)


@_rule(rf"(?<![0-9年上下个])(?P<m>{_ZH_NUM})月份?(?![0-9零〇一二两三四五六七八九十]*[日号])")
def _zh_m(m: re.Match[str], now: datetime) -> Span | None:
    try:
        month = zh_number(m["m"])
    except ValueError:
        return None
    return _past_month(month, now) if 1 <= month <= 12 else None


@_rule(r"大前天")
def _zh_3days(m: re.Match[str], now: datetime) -> Span:
    return _day(now, -3), _day(now, -2)


@_rule(r"前天")
def _zh_2days(m: re.Match[str], now: datetime) -> Span:
    return _day(now, -2), _day(now, -1)


@_rule(r"昨天|昨日|昨晚")
def _zh_yesterday(m: re.Match[str], now: datetime) -> Span:
    return _day(now, -1), _day(now)


@_rule(r"今天|今日|今晚|今早")
def _zh_today(m: re.Match[str], now: datetime) -> Span:
    return _day(now), _day(now, 1)


@_rule(r"(?:上+)(?:个)?(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])")
def _zh_last_week_day(m: re.Match[str], now: datetime) -> Span:
    back = m.group(0).count("上")
    day = _recent_weekday(now, _ZH_WEEKDAYS[m["wd"]], back)
    return day, day + timedelta(days=1)


@_rule(r"(?:这|本)(?:个)?(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])")
def _zh_this_week_day(m: re.Match[str], now: datetime) -> Span:
    day = _recent_weekday(now, _ZH_WEEKDAYS[m["wd"]], 0)
    return day, day + timedelta(days=1)


@_rule(r"(?:上+)(?:个)?周末")
def _zh_last_weekend(m: re.Match[str], now: datetime) -> Span:
    monday, _ = _week(now, m.group(0).count("上"))
    return monday + timedelta(days=5), monday + timedelta(days=7)


@_rule(r"(?:这|本)(?:个)?周末")
def _zh_this_weekend(m: re.Match[str], now: datetime) -> Span:
    monday, _ = _week(now, 0)
    return monday + timedelta(days=5), monday + timedelta(days=7)


@_rule(r"(?<![上这本下])(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])")
def _zh_weekday(m: re.Match[str], now: datetime) -> Span:
    day = _recent_weekday(now, _ZH_WEEKDAYS[m["wd"]], None)
    return day, day + timedelta(days=1)


@_rule(r"(?P<up>上+)(?:个)?(?:周|星期|礼拜)(?![一二三四五六日天末])")
def _zh_last_week(m: re.Match[str], now: datetime) -> Span:
    return _week(now, len(m["up"]))


@_rule(r"(?:这|本)(?:个)?(?:周|星期|礼拜)(?![一二三四五六日天末])")
def _zh_this_week(m: re.Match[str], now: datetime) -> Span:
    return _week(now, 0)[0], now + timedelta(seconds=1)


@_rule(r"(?P<up>上+)(?:个)?月(?!\d|[零〇一二两三四五六七八九十]+[日号])")
def _zh_last_month(m: re.Match[str], now: datetime) -> Span:
    return _month(now.year, now.month - len(m["up"]), now)


@_rule(r"(?:这|本)(?:个)?月")
def _zh_this_month(m: re.Match[str], now: datetime) -> Span:
    return _month_start(now.year, now.month, now), now + timedelta(seconds=1)


@_rule(r"大前年")
def _zh_3years(m: re.Match[str], now: datetime) -> Span:
    return _year(now.year - 3, now)


@_rule(r"前年")
def _zh_2years(m: re.Match[str], now: datetime) -> Span:
    return _year(now.year - 2, now)


@_rule(r"去年")
def _zh_last_year(m: re.Match[str], now: datetime) -> Span:
    return _year(now.year - 1, now)


@_rule(r"今年")
def _zh_this_year(m: re.Match[str], now: datetime) -> Span:
    return _year(now.year, now)[0], now + timedelta(seconds=1)


@_rule(rf"(?P<n>{_ZH_NUM})天(?:之)?前")
def _zh_days_ago(m: re.Match[str], now: datetime) -> Span:
    n = zh_number(m["n"])
    return _day(now, -n), _day(now, -n + 1)


@_rule(rf"(?P<n>{_ZH_NUM})(?:个)?(?:周|星期|礼拜)(?:之)?前")
def _zh_weeks_ago(m: re.Match[str], now: datetime) -> Span:
    return _week(now, zh_number(m["n"]))


@_rule(rf"(?P<n>{_ZH_NUM})个月(?:之)?前")
def _zh_months_ago(m: re.Match[str], now: datetime) -> Span:
    return _month(now.year, now.month - zh_number(m["n"]), now)


@_rule(rf"(?P<n>{_ZH_NUM})年(?:之)?前")
def _zh_years_ago(m: re.Match[str], now: datetime) -> Span:
    return _year(now.year - zh_number(m["n"]), now)


@_rule(rf"(?:最近|近|过去|前)(?P<n>{_ZH_NUM})(?P<unit>天|日|周|个?星期|个月|年)")
def _zh_last_n(m: re.Match[str], now: datetime) -> Span:
    n = zh_number(m["n"])
    unit = m["unit"]
    days = {"天": 1, "日": 1, "周": 7, "星期": 7, "个星期": 7, "个月": 30, "年": 365}[unit]
    return now - timedelta(days=n * days), now + timedelta(seconds=1)


@_rule(r"刚才|刚刚|方才", precise=False)
def _zh_just_now(m: re.Match[str], now: datetime) -> Span:
    return now - timedelta(hours=3), now + timedelta(seconds=1)


@_rule(r"这两天|这几天|近几天|前几天|前两天", precise=False)
def _zh_few_days(m: re.Match[str], now: datetime) -> Span:
    return _day(now, -3), now + timedelta(seconds=1)


@_rule(r"最近|近期|近来|这段时间|这阵子", precise=False)
def _zh_recently(m: re.Match[str], now: datetime) -> Span:
    return _day(now, -7), now + timedelta(seconds=1)


@_rule(r"上次|上回|之前|以前|先前|那次", precise=False)
def _zh_last_time(m: re.Match[str], now: datetime) -> Span:
    return _day(now, -30), now + timedelta(seconds=1)


# English (input is folded to lower case).
@_rule(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b")
def _iso_date(m: re.Match[str], now: datetime) -> Span | None:
    day = _safe_day(int(m["y"]), int(m["m"]), int(m["d"]), now)
    return (day, day + timedelta(days=1)) if day else None


@_rule(rf"\b(?P<mon>{_MONTH_NAMES})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})\b")
def _en_mdy(m: re.Match[str], now: datetime) -> Span | None:
    day = _safe_day(int(m["y"]), _MONTHS[m["mon"]], int(m["d"]), now)
    return (day, day + timedelta(days=1)) if day else None


@_rule(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>{_MONTH_NAMES})\.?,?\s+(?P<y>\d{{4}})\b")
def _en_dmy(m: re.Match[str], now: datetime) -> Span | None:
    day = _safe_day(int(m["y"]), _MONTHS[m["mon"]], int(m["d"]), now)
    return (day, day + timedelta(days=1)) if day else None


@_rule(rf"\b(?P<mon>{_MONTH_NAMES})\.?,?\s+(?:of\s+)?(?P<y>\d{{4}})\b")
def _en_my(m: re.Match[str], now: datetime) -> Span:
    return _month(int(m["y"]), _MONTHS[m["mon"]], now)


@_rule(rf"\b(?:in|during|since|of|by)\s+(?P<mon>{_MONTH_NAMES})\b(?!\s+\d)")
def _en_in_month(m: re.Match[str], now: datetime) -> Span:
    return _past_month(_MONTHS[m["mon"]], now)


@_rule(r"\b(?:in|during|since|of)\s+(?P<y>(?:19|20)\d{2})\b")
def _en_in_year(m: re.Match[str], now: datetime) -> Span:
    return _year(int(m["y"]), now)


@_rule(r"\bthe day before yesterday\b")
def _en_2days(m: re.Match[str], now: datetime) -> Span:
    return _day(now, -2), _day(now, -1)


@_rule(r"\byesterday\b|\blast night\b")
def _en_yesterday(m: re.Match[str], now: datetime) -> Span:
    return _day(now, -1), _day(now)


@_rule(r"\btoday\b|\btonight\b|\bthis (?:morning|afternoon|evening)\b")
def _en_today(m: re.Match[str], now: datetime) -> Span:
    return _day(now), _day(now, 1)


@_rule(rf"\blast\s+(?P<wd>{_WEEKDAY_NAMES})\b")
def _en_last_weekday(m: re.Match[str], now: datetime) -> Span:
    weekday = _EN_WEEKDAYS[m["wd"]]
    day = _recent_weekday(now, weekday, None)
    if day >= _day(now):  # "last Monday" said on a Monday means a week ago
        day -= timedelta(days=7)
    return day, day + timedelta(days=1)


@_rule(rf"\b(?:on|this)\s+(?P<wd>{_WEEKDAY_NAMES})\b")
def _en_weekday(m: re.Match[str], now: datetime) -> Span:
    day = _recent_weekday(now, _EN_WEEKDAYS[m["wd"]], None)
    return day, day + timedelta(days=1)


@_rule(r"\blast weekend\b")
def _en_last_weekend(m: re.Match[str], now: datetime) -> Span:
    monday, _ = _week(now, 1)
    return monday + timedelta(days=5), monday + timedelta(days=7)


@_rule(r"\bthis weekend\b")
def _en_this_weekend(m: re.Match[str], now: datetime) -> Span:
    monday, _ = _week(now, 0)
    return monday + timedelta(days=5), monday + timedelta(days=7)


@_rule(r"\blast week\b|\bthe previous week\b|\bthe week before\b")
def _en_last_week(m: re.Match[str], now: datetime) -> Span:
    return _week(now, 1)


@_rule(r"\bthis week\b")
def _en_this_week(m: re.Match[str], now: datetime) -> Span:
    return _week(now, 0)[0], now + timedelta(seconds=1)


@_rule(r"\blast month\b|\bthe previous month\b")
def _en_last_month(m: re.Match[str], now: datetime) -> Span:
    return _month(now.year, now.month - 1, now)


@_rule(r"\bthis month\b")
def _en_this_month(m: re.Match[str], now: datetime) -> Span:
    return _month_start(now.year, now.month, now), now + timedelta(seconds=1)


@_rule(r"\blast year\b|\bthe previous year\b")
def _en_last_year(m: re.Match[str], now: datetime) -> Span:
    return _year(now.year - 1, now)


@_rule(r"\bthis year\b")
def _en_this_year(m: re.Match[str], now: datetime) -> Span:
    return _year(now.year, now)[0], now + timedelta(seconds=1)


@_rule(rf"\b(?P<n>{_EN_NUM})\s+(?P<unit>day|week|month|year)s?\s+ago\b")
def _en_ago(m: re.Match[str], now: datetime) -> Span:
    n = _en_number(m["n"])
    unit = m["unit"]
    if unit == "day":
        return _day(now, -n), _day(now, -n + 1)
    if unit == "week":
        return _week(now, n)
    if unit == "month":
        return _month(now.year, now.month - n, now)
    return _year(now.year - n, now)


@_rule(rf"\b(?:(?:in\s+)?the\s+)?(?:past|last)\s+(?P<n>{_EN_NUM})\s+(?P<unit>day|week|month|year)s?\b")
def _en_last_n(m: re.Match[str], now: datetime) -> Span:
    days = {"day": 1, "week": 7, "month": 30, "year": 365}[m["unit"]]
    return now - timedelta(days=_en_number(m["n"]) * days), now + timedelta(seconds=1)


@_rule(r"\bjust now\b|\ba moment ago\b|\bearlier today\b", precise=False)
def _en_just_now(m: re.Match[str], now: datetime) -> Span:
    return now - timedelta(hours=3), now + timedelta(seconds=1)


@_rule(r"\b(?:the\s+)?(?:past|last)\s+(?:few|couple of)\s+days\b|\bthese days\b", precise=False)
def _en_few_days(m: re.Match[str], now: datetime) -> Span:
    return _day(now, -3), now + timedelta(seconds=1)


@_rule(r"\brecently\b|\blately\b|\brecent\b", precise=False)
def _en_recently(m: re.Match[str], now: datetime) -> Span:
    return _day(now, -7), now + timedelta(seconds=1)


@_rule(r"\blast time\b|\bpreviously\b|\bthe other day\b", precise=False)
def _en_last_time(m: re.Match[str], now: datetime) -> Span:
    return _day(now, -30), now + timedelta(seconds=1)


def parse_time_expressions(text: str, *, now: datetime) -> list[TimeRange]:
    """Every time expression in ``text`` as a :class:`TimeRange`, in reading order.

    Overlapping matches keep the longest (``2024年4月1日`` is one day, not also a month).
    ``now`` must be timezone-aware; ranges use its time zone.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    folded = fold(text)
    found: list[tuple[int, int, TimeRange]] = []
    for rule in _RULES:
        for match in rule.pattern.finditer(folded):
            try:
                span = rule.handler(match, now)
            except (ValueError, KeyError, OverflowError):
                span = None
            if span is None:
                continue
            found.append((match.start(), match.end(), TimeRange(span[0], span[1], match.group(0), rule.precise)))
    found.sort(key=lambda item: (item[0], -(item[1] - item[0])))
    kept: list[tuple[int, int, TimeRange]] = []
    for start, end, rng in found:
        if kept and start < kept[-1][1]:
            continue
        kept.append((start, end, rng))
    return [rng for _, _, rng in kept]


def query_time_range(text: str, *, now: datetime) -> TimeRange | None:
    """The one range a query asks about: the first precise expression, else the first vague one."""
    ranges = parse_time_expressions(text, now=now)
    precise = [r for r in ranges if r.precise]
    return (precise or ranges or [None])[0]
