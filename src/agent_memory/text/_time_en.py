"""English time expressions: yesterday, last Monday, in May 2023, three weeks ago, recently ...

Input is folded to lower case before matching, so the patterns and the month, weekday and number
tables are lower case only. Rules are registered in :data:`RULES` in the order they are written:
explicit dates, then relative spans, then the vague expressions (``precise=False``).

:data:`AHEAD` holds the rules of a text about the future (a plan: "my exam is on June 3"): expressions
that only name a time to come (tomorrow, next Friday, next month, in two weeks) and, read ahead of
:data:`RULES`, dates that name no year, months and weekdays as the next such time (today included).
"next Friday" is the Friday of next week, as 下周五.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from ._time_rules import (
    Span,
    _beside,
    _coming_month,
    _coming_weekday,
    _coming_year,
    _day,
    _month,
    _month_end,
    _month_start,
    _past_month,
    _recent_weekday,
    _Rule,
    _safe_day,
    _week,
    _year,
    rule_registrar,
)

# the word table keeps several entries to a line (fmt: skip); one to a line it would fill a screen
_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3, "couple of": 2,
    "few": 3, "several": 3,
}  # fmt: skip
# the word table keeps several entries to a line (fmt: skip); one to a line it would fill a screen
_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
    "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
    "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
# the word table keeps several entries to a line (fmt: skip); one to a line it would fill a screen
_EN_WEEKDAYS = {
    "monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "tues": 1, "wednesday": 2, "wed": 2, "thursday": 3,
    "thu": 3, "thurs": 3, "friday": 4, "fri": 4, "saturday": 5, "sat": 5, "sunday": 6, "sun": 6,
}  # fmt: skip


def _en_number(text: str) -> int:
    return int(text) if text.isdigit() else _EN_NUMBERS[text]


RULES: list[_Rule] = []
_rule = rule_registrar(RULES)
_EN_NUM = (
    r"\d+|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
)
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY_NAMES = "|".join(sorted(_EN_WEEKDAYS, key=len, reverse=True))


# English (input is folded to lower case).
@_rule(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b", calendar=True)
def _iso_date(m: re.Match[str], now: datetime) -> Span | None:
    day = _safe_day(int(m["y"]), int(m["m"]), int(m["d"]), now)
    return (day, day + timedelta(days=1)) if day else None


@_rule(rf"\b(?P<mon>{_MONTH_NAMES})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})\b", calendar=True)
def _en_mdy(m: re.Match[str], now: datetime) -> Span | None:
    day = _safe_day(int(m["y"]), _MONTHS[m["mon"]], int(m["d"]), now)
    return (day, day + timedelta(days=1)) if day else None


@_rule(
    rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>{_MONTH_NAMES})\.?,?\s+(?P<y>\d{{4}})\b", calendar=True
)
def _en_dmy(m: re.Match[str], now: datetime) -> Span | None:
    day = _safe_day(int(m["y"]), _MONTHS[m["mon"]], int(m["d"]), now)
    return (day, day + timedelta(days=1)) if day else None


#: A written-out date: "16 November 2023", "November 16th, 2023" (groups d/mon/y or d2/mon2/y2).
_DATE = (
    rf"(?:(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>{_MONTH_NAMES})\.?,?\s+(?P<y>\d{{4}})"
    rf"|(?P<mon2>{_MONTH_NAMES})\.?\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y2>\d{{4}}))\b"
)


@_rule(
    rf"\b(?:(?:the|last)\s+)?(?P<unit>day|week|weekend|month|{_WEEKDAY_NAMES})\s+(?P<dir>before|after)\s+{_DATE}",
    calendar=True,
)
def _en_around_date(m: re.Match[str], now: datetime) -> Span | None:
    """ "the week before 16 November 2023", "the Sunday before October 25, 2022": a span next to a date."""
    if m["y"]:
        date = _safe_day(int(m["y"]), _MONTHS[m["mon"]], int(m["d"]), now)
    else:
        date = _safe_day(int(m["y2"]), _MONTHS[m["mon2"]], int(m["d2"]), now)
    if date is None:
        return None
    unit, before = m["unit"], m["dir"] == "before"
    if unit in _EN_WEEKDAYS:  # the nearest such day before (or after) the date, the date excluded
        step = (date.weekday() - _EN_WEEKDAYS[unit]) % 7 or 7
        if not before:
            step = -((_EN_WEEKDAYS[unit] - date.weekday()) % 7 or 7)
        day = date - timedelta(days=step)
        return day, day + timedelta(days=1)
    if unit == "weekend":  # the Saturday and Sunday before (or after) the weekend the date is in
        if before:
            saturday = date - timedelta(days=(date.weekday() - 5) % 7 or 7)
            saturday -= timedelta(days=7 if date.weekday() == 6 else 0)
        else:
            saturday = date + timedelta(days=(5 - date.weekday()) % 7 or 7)
        return saturday, saturday + timedelta(days=2)
    return _beside(date, {"day": 1, "week": 7, "month": 30}[unit], before=before)


@_rule(rf"\b(?P<mon>{_MONTH_NAMES})\.?,?\s+(?:of\s+)?(?P<y>\d{{4}})\b", calendar=True)
def _en_my(m: re.Match[str], now: datetime) -> Span:
    return _month(int(m["y"]), _MONTHS[m["mon"]], now)


#: "in June" and "during 2023" name a time. "since May" runs from then to now. "by June", "of May" and "a
#: group of 2000" as often name a person, a deadline or a number: a vague guess (a filter with
#: ``use_time_expressions``), never a time the question is about.
@_rule(rf"\b(?:in|during)\s+(?P<mon>{_MONTH_NAMES})\b(?!\s+\d)", calendar=True)
@_rule(rf"\b(?:of|by)\s+(?P<mon>{_MONTH_NAMES})\b(?!\s+\d)", precise=False)
def _en_in_month(m: re.Match[str], now: datetime) -> Span:
    return _past_month(_MONTHS[m["mon"]], now)


@_rule(rf"\bsince\s+(?P<mon>{_MONTH_NAMES})\b(?!\s+\d)")
def _en_since_month(m: re.Match[str], now: datetime) -> Span:
    return _past_month(_MONTHS[m["mon"]], now)[0], now + timedelta(seconds=1)


@_rule(r"\b(?:in|during)\s+(?P<y>(?:19|20)\d{2})\b", calendar=True)
@_rule(r"\bof\s+(?P<y>(?:19|20)\d{2})\b", precise=False)
def _en_in_year(m: re.Match[str], now: datetime) -> Span:
    return _year(int(m["y"]), now)


@_rule(r"\bsince\s+(?P<y>(?:19|20)\d{2})\b")
def _en_since_year(m: re.Match[str], now: datetime) -> Span | None:
    start = _year(int(m["y"]), now)[0]
    return (start, now + timedelta(seconds=1)) if start <= now else None


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


@_rule(rf"\blast week\b|\bthe previous week\b|\bthe week before\b(?!\s+(?:the\s+)?(?:\d|(?:{_MONTH_NAMES})\b))")
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


# -- the future: a plan names a time to come -----------------------------------------------------------

AHEAD: list[_Rule] = []
_ahead = rule_registrar(AHEAD)
_FULL_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"


@_ahead(rf"\b(?P<mon>{_MONTH_NAMES})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?!,?\s+\d{{4}}|:)", calendar=True)
@_ahead(
    rf"\b(?:the\s+)?(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>{_MONTH_NAMES})\b(?!\.?,?\s+\d{{4}})",
    calendar=True,
)
def _en_coming_md(m: re.Match[str], now: datetime) -> Span | None:
    month, day_n = _MONTHS[m["mon"]], int(m["d"])
    day = _safe_day(_coming_year(month, day_n, now), month, day_n, now)
    return (day, day + timedelta(days=1)) if day else None


@_ahead(rf"\b(?:in|during|by|until|till)\s+(?P<mon>{_MONTH_NAMES})\b(?!\s+\d)", calendar=True)
def _en_coming_month(m: re.Match[str], now: datetime) -> Span:
    return _coming_month(_MONTHS[m["mon"]], now)


@_ahead(r"\bthe day after tomorrow\b")
def _en_in_2days(m: re.Match[str], now: datetime) -> Span:
    return _day(now, 2), _day(now, 3)


@_ahead(r"\btomorrow\b|\btmr\b")
def _en_tomorrow(m: re.Match[str], now: datetime) -> Span:
    return _day(now, 1), _day(now, 2)


@_ahead(rf"\bnext\s+(?P<wd>{_WEEKDAY_NAMES})\b")
def _en_next_weekday(m: re.Match[str], now: datetime) -> Span:
    day = _recent_weekday(now, _EN_WEEKDAYS[m["wd"]], -1)
    return day, day + timedelta(days=1)


@_ahead(rf"\b(?:on|this)\s+(?P<wd>{_WEEKDAY_NAMES})\b|\b(?P<full>{_FULL_WEEKDAYS})\b")
def _en_coming_weekday(m: re.Match[str], now: datetime) -> Span:
    day = _coming_weekday(now, _EN_WEEKDAYS[m["wd"] or m["full"]])
    return day, day + timedelta(days=1)


@_ahead(r"\bnext weekend\b")
def _en_next_weekend(m: re.Match[str], now: datetime) -> Span:
    monday, _ = _week(now, -1)
    return monday + timedelta(days=5), monday + timedelta(days=7)


@_ahead(r"\bnext week\b|\bthe following week\b")
def _en_next_week(m: re.Match[str], now: datetime) -> Span:
    return _week(now, -1)


@_ahead(r"\bthis week\b")
def _en_rest_of_week(m: re.Match[str], now: datetime) -> Span:
    return _week(now, 0)


@_ahead(r"\b(?:at\s+)?the end of (?P<which>this|the|next) month\b|\b(?P<eom>end of (?:the )?month)\b")
def _en_month_end(m: re.Match[str], now: datetime) -> Span:
    start, _ = _month(now.year, now.month + (m["which"] == "next"), now)
    return _month_end(start.year, start.month, now)


@_ahead(r"\bnext month\b|\bthe following month\b")
def _en_next_month(m: re.Match[str], now: datetime) -> Span:
    return _month(now.year, now.month + 1, now)


@_ahead(r"\bthis month\b")
def _en_rest_of_month(m: re.Match[str], now: datetime) -> Span:
    return _month(now.year, now.month, now)


@_ahead(r"\bnext year\b|\bthe following year\b")
def _en_next_year(m: re.Match[str], now: datetime) -> Span:
    return _year(now.year + 1, now)


@_ahead(r"\bthis year\b")
def _en_rest_of_year(m: re.Match[str], now: datetime) -> Span:
    return _year(now.year, now)


@_ahead(
    rf"\bin\s+(?P<n>{_EN_NUM})\s+(?P<unit>day|week|month|year)s?(?:'s|s')?(?:\s+time)?\b"
    rf"|\b(?P<n2>{_EN_NUM})\s+(?P<unit2>day|week|month|year)s?\s+from\s+(?:now|today)\b"
)
def _en_in_n(m: re.Match[str], now: datetime) -> Span:
    n, unit = _en_number(m["n"] or m["n2"]), m["unit"] or m["unit2"]
    if unit == "month":
        return _month(now.year, now.month + n, now)
    if unit == "year":
        return _year(now.year + n, now)
    day = _day(now, n * (1 if unit == "day" else 7))
    return day, day + timedelta(days=1)
