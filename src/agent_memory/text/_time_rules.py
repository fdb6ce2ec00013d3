"""Shared machinery of the time-expression rules: calendar arithmetic and the rule registry.

Each language module (``_time_zh``, ``_time_en``) registers ``(pattern, handler, precise)`` rules into its
own list with :func:`rule_registrar`; ``_time_expressions`` runs the lists in a fixed order (Chinese, then
English) so overlap resolution does not depend on import order. The calendar helpers return half-open
spans in the time zone of the reference time and are the only date arithmetic the handlers use.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

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


def _beside(date: datetime, days: int, *, before: bool) -> tuple[datetime, datetime]:
    """The ``days`` before a date (up to it), or after it (from the next day): "the week before 16
    November", "11月16日后两天"; a month counts as 30 days."""
    if before:
        return date - timedelta(days=days), date
    return date + timedelta(days=1), date + timedelta(days=1 + days)


def _latest_year(month: int, day: int, now: datetime) -> int:
    """The year of the latest (month, day) that has begun: this year's, else last year's."""
    return now.year if (month, day) <= (now.month, now.day) else now.year - 1


def _coming_year(month: int, day: int, now: datetime) -> int:
    """The year of the next (month, day) that has not ended: this year's (today included), else next year's."""
    return now.year if (month, day) >= (now.month, now.day) else now.year + 1


def _coming_month(month: int, now: datetime) -> tuple[datetime, datetime]:
    """The next month ``month`` that has not ended (this year's, this month included, else next year's)."""
    year = now.year if month >= now.month else now.year + 1
    return _month(year, month, now)


def _coming_weekday(now: datetime, weekday: int) -> datetime:
    """The next such day that has not ended, today included."""
    return _day(now, (weekday - now.weekday()) % 7)


def _month_end(year: int, month: int, like: datetime) -> tuple[datetime, datetime]:
    """The last seven days of a month (月底, "the end of the month")."""
    end = _month_start(year, month + 1, like)
    return end - timedelta(days=7), end


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
    calendar: bool


def rule_registrar(rules: list[_Rule]) -> Callable[..., Callable[[Handler], Handler]]:
    """A ``@rule(pattern, precise=True, calendar=False)`` decorator that appends each handler to ``rules``
    (``calendar``: the pattern names a date on the calendar, not a span counted back from now)."""

    def rule(pattern: str, precise: bool = True, calendar: bool = False) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            rules.append(_Rule(re.compile(pattern), handler, precise, calendar))
            return handler

        return register

    return rule
