"""Chinese time expressions: numerals (``二十三``, ``二〇二三``) and the rules for 昨天, 上周三, 三个月前, 最近 ...

Rules are registered in :data:`RULES` in the order they are written: explicit dates first, then relative
days, weeks, months and years, then the vague expressions (``precise=False``) that only ever serve as a
soft preference. Chinese text needs no word boundaries, so the patterns use look-arounds instead.

:data:`AHEAD` holds the rules of a text about the future (a plan: "下周五要汇报"): expressions that only
name a time to come (明天, 下周五, 下个月, 三天后, 月底) and, read ahead of :data:`RULES`, the dates that
name no year and the bare weekdays as the next such day (today included): "6月3日" said in May is
this June 3, said on June 4 next year's.
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
    _latest_year,
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
#: A weekday after 周/星期/礼拜; 一 is no Monday where it starts a word ("这周一直在加班": all this week,
#: "这周一起吃饭": together this week), except in "周一直到周五" and "周一直接去" (Monday), and 天 is no
#: Sunday in 天气/天空/天然 ("这周天气好": the weather this week).
_MONDAY = r"一(?!直(?![到接])|[起样些点共定般切])"
_SUNDAY = r"天(?![气空然])"
_WD = rf"(?P<wd>{_MONDAY}|{_SUNDAY}|[二三四五六日])"
_NOT_WD = rf"(?!{_MONDAY}|{_SUNDAY}|[二三四五六日末])"
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


RULES: list[_Rule] = []
_rule = rule_registrar(RULES)
_ZH_DIGIT = "0-9零〇一二两三四五六七八九十百"
#: A number starts where a run of numerals starts and is at most 9 numerals long. Both bounds keep every
#: rule linear: with an open ``+`` and no start anchor, a run of 80,000 digits not followed by 天 was
#: re-scanned from each of its positions (quadratic: seconds for a 4,000-character query).
_ZH_NUM = rf"(?<![{_ZH_DIGIT}])[{_ZH_DIGIT}]{{1,9}}"
#: 上 repeated (上上周: the week before last), at most 9 times, from the start of the run.
_UP = "(?<!上)上{1,9}"


# Chinese: explicit dates first (longest patterns win on overlap).
@_rule(
    rf"(?:(?P<y>\d{{4}}|[零〇一二三四五六七八九]{{4}})年|(?<![0-9年]))(?P<m>{_ZH_NUM})月(?P<d>{_ZH_NUM})[日号]"
    rf"的?(?P<dir>前|后)(?P<n>{_ZH_NUM})?个?(?P<unit>天|周|星期|礼拜|月)",
    calendar=True,
)
def _zh_around_date(m: re.Match[str], now: datetime) -> Span | None:
    """ "11月16日前一周", "2023年3月4日的后两天": a span next to a date (a month: 30 days)."""
    month, day_n = zh_number(m["m"]), zh_number(m["d"])
    if not 1 <= month <= 12:
        return None
    year = zh_number(m["y"]) if m["y"] else _latest_year(month, day_n, now)  # no year: as "3月4日" alone
    date = _safe_day(year, month, day_n, now)
    if date is None:
        return None
    count = zh_number(m["n"]) if m["n"] else 1
    return _beside(date, count * {"天": 1, "月": 30}.get(m["unit"], 7), before=m["dir"] == "前")


@_rule(rf"(?P<y>\d{{4}}|[零〇一二三四五六七八九]{{4}})年(?P<m>{_ZH_NUM})月(?P<d>{_ZH_NUM})[日号]", calendar=True)
def _zh_ymd(m: re.Match[str], now: datetime) -> Span | None:
    day = _safe_day(zh_number(m["y"]), zh_number(m["m"]), zh_number(m["d"]), now)
    return (day, day + timedelta(days=1)) if day else None


@_rule(rf"(?P<y>\d{{4}}|[零〇一二三四五六七八九]{{4}})年(?P<m>{_ZH_NUM})月(?:份)?", calendar=True)
def _zh_ym(m: re.Match[str], now: datetime) -> Span | None:
    month = zh_number(m["m"])
    return _month(zh_number(m["y"]), month, now) if 1 <= month <= 12 else None


@_rule(rf"(?<![0-9年])(?P<m>{_ZH_NUM})月(?P<d>{_ZH_NUM})[日号]", calendar=True)
def _zh_md(m: re.Match[str], now: datetime) -> Span | None:
    month, day_n = zh_number(m["m"]), zh_number(m["d"])
    if not 1 <= month <= 12:
        return None
    day = _safe_day(_latest_year(month, day_n, now), month, day_n, now)
    return (day, day + timedelta(days=1)) if day else None


@_rule(r"(?P<y>\d{4}|[零〇一二三四五六七八九]{4})年(?!\d|[零〇一二两三四五六七八九十]{1,9}月)", calendar=True)
def _zh_y(m: re.Match[str], now: datetime) -> Span | None:
    return _year(zh_number(m["y"]), now)


@_rule(rf"(?<![0-9年上下个])(?P<m>{_ZH_NUM})月份?(?![0-9零〇一二两三四五六七八九十]{{0,9}}[日号])", calendar=True)
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


@_rule(rf"{_UP}(?:个)?(?:周|星期|礼拜){_WD}")
def _zh_last_week_day(m: re.Match[str], now: datetime) -> Span:
    back = m.group(0).count("上")
    day = _recent_weekday(now, _ZH_WEEKDAYS[m["wd"]], back)
    return day, day + timedelta(days=1)


@_rule(rf"(?:这|本)(?:个)?(?:周|星期|礼拜){_WD}")
def _zh_this_week_day(m: re.Match[str], now: datetime) -> Span:
    day = _recent_weekday(now, _ZH_WEEKDAYS[m["wd"]], 0)
    return day, day + timedelta(days=1)


@_rule(rf"{_UP}(?:个)?周末")
def _zh_last_weekend(m: re.Match[str], now: datetime) -> Span:
    monday, _ = _week(now, m.group(0).count("上"))
    return monday + timedelta(days=5), monday + timedelta(days=7)


@_rule(r"(?:这|本)(?:个)?周末")
def _zh_this_weekend(m: re.Match[str], now: datetime) -> Span:
    monday, _ = _week(now, 0)
    return monday + timedelta(days=5), monday + timedelta(days=7)


@_rule(rf"(?<![上这本下])(?:周|星期|礼拜){_WD}")
def _zh_weekday(m: re.Match[str], now: datetime) -> Span:
    day = _recent_weekday(now, _ZH_WEEKDAYS[m["wd"]], None)
    return day, day + timedelta(days=1)


@_rule(rf"(?P<up>{_UP})(?:个)?(?:周|星期|礼拜){_NOT_WD}")
def _zh_last_week(m: re.Match[str], now: datetime) -> Span:
    return _week(now, len(m["up"]))


@_rule(rf"(?:这|本)(?:个)?(?:周|星期|礼拜){_NOT_WD}")
def _zh_this_week(m: re.Match[str], now: datetime) -> Span:
    return _week(now, 0)[0], now + timedelta(seconds=1)


@_rule(rf"(?P<up>{_UP})(?:个)?月(?!\d|[零〇一二两三四五六七八九十]{{1,9}}[日号])")
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


@_rule(rf"(?:最近|近|过去|(?<![日号的])前)(?P<n>{_ZH_NUM})(?P<unit>天|日|周|个?星期|个月|年)")
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


# -- the future: a plan names a time to come -----------------------------------------------------------

AHEAD: list[_Rule] = []
_ahead = rule_registrar(AHEAD)
#: 下 repeated (下下周: the week after next), at most 9 times, from the start of the run.
_DOWN = "(?<!下)下{1,9}"


@_ahead(rf"(?<![0-9年])(?P<m>{_ZH_NUM})月(?P<d>{_ZH_NUM})[日号]", calendar=True)
def _zh_coming_md(m: re.Match[str], now: datetime) -> Span | None:
    month, day_n = zh_number(m["m"]), zh_number(m["d"])
    if not 1 <= month <= 12:
        return None
    day = _safe_day(_coming_year(month, day_n, now), month, day_n, now)
    return (day, day + timedelta(days=1)) if day else None


@_ahead(rf"(?<![0-9年上下个])(?P<m>{_ZH_NUM})月份?(?![{_ZH_DIGIT}]{{0,9}}[日号]|[底末初])", calendar=True)
def _zh_coming_m(m: re.Match[str], now: datetime) -> Span | None:
    month = zh_number(m["m"])
    return _coming_month(month, now) if 1 <= month <= 12 else None


@_ahead(rf"(?<![0-9年上下个])(?P<m>{_ZH_NUM})月(?:底|末)", calendar=True)
def _zh_coming_month_end(m: re.Match[str], now: datetime) -> Span | None:
    month = zh_number(m["m"])
    if not 1 <= month <= 12:
        return None
    start, _ = _coming_month(month, now)
    return _month_end(start.year, start.month, now)


@_ahead(r"大后天")
def _zh_in_3days(m: re.Match[str], now: datetime) -> Span:
    return _day(now, 3), _day(now, 4)


@_ahead(r"(?<![先今])后天")
def _zh_in_2days(m: re.Match[str], now: datetime) -> Span:
    return _day(now, 2), _day(now, 3)


@_ahead(r"明天|明日|明早|明晚|明儿")
def _zh_tomorrow(m: re.Match[str], now: datetime) -> Span:
    return _day(now, 1), _day(now, 2)


@_ahead(rf"(?P<down>{_DOWN})(?:个)?(?:周|星期|礼拜){_WD}")
def _zh_next_week_day(m: re.Match[str], now: datetime) -> Span:
    day = _recent_weekday(now, _ZH_WEEKDAYS[m["wd"]], -len(m["down"]))
    return day, day + timedelta(days=1)


@_ahead(rf"(?P<down>{_DOWN})(?:个)?周末")
def _zh_next_weekend(m: re.Match[str], now: datetime) -> Span:
    monday, _ = _week(now, -len(m["down"]))
    return monday + timedelta(days=5), monday + timedelta(days=7)


@_ahead(rf"(?<![上这本下])(?:周|星期|礼拜){_WD}")
def _zh_coming_weekday(m: re.Match[str], now: datetime) -> Span:
    day = _coming_weekday(now, _ZH_WEEKDAYS[m["wd"]])
    return day, day + timedelta(days=1)


@_ahead(rf"(?P<down>{_DOWN})(?:个)?(?:周|星期|礼拜){_NOT_WD}")
def _zh_next_week(m: re.Match[str], now: datetime) -> Span:
    return _week(now, -len(m["down"]))


@_ahead(r"(?:这|本)(?:个)?(?:周|星期|礼拜)(?![一二三四五六日天末])")
def _zh_rest_of_week(m: re.Match[str], now: datetime) -> Span:
    return _week(now, 0)


@_ahead(rf"(?P<down>{_DOWN})(?:个)?月(?P<d>{_ZH_NUM})[日号]")
def _zh_next_month_day(m: re.Match[str], now: datetime) -> Span | None:
    start, _ = _month(now.year, now.month + len(m["down"]), now)
    day = _safe_day(start.year, start.month, zh_number(m["d"]), now)
    return (day, day + timedelta(days=1)) if day else None


@_ahead(rf"(?P<down>{_DOWN})(?:个)?月(?:底|末)")
def _zh_next_month_end(m: re.Match[str], now: datetime) -> Span:
    start, _ = _month(now.year, now.month + len(m["down"]), now)
    return _month_end(start.year, start.month, now)


@_ahead(rf"(?P<down>{_DOWN})(?:个)?月(?!\d|[零〇一二两三四五六七八九十]{{1,9}}[日号]|[底末])")
def _zh_next_month(m: re.Match[str], now: datetime) -> Span:
    return _month(now.year, now.month + len(m["down"]), now)


@_ahead(r"(?:这个?|本)?月(?:底|末)")
def _zh_month_end(m: re.Match[str], now: datetime) -> Span:
    return _month_end(now.year, now.month, now)


@_ahead(r"(?:这|本)(?:个)?月(?![底末初])")
def _zh_rest_of_month(m: re.Match[str], now: datetime) -> Span:
    return _month(now.year, now.month, now)


@_ahead(r"(?P<year>明年|今年)?(?:年底|年末)")
def _zh_year_end(m: re.Match[str], now: datetime) -> Span:
    year = now.year + (m["year"] == "明年")
    return _month(year, 12, now)


@_ahead(r"后年")
def _zh_year_after_next(m: re.Match[str], now: datetime) -> Span:
    return _year(now.year + 2, now)


@_ahead(r"明年")
def _zh_next_year(m: re.Match[str], now: datetime) -> Span:
    return _year(now.year + 1, now)


@_ahead(r"今年")
def _zh_rest_of_year(m: re.Match[str], now: datetime) -> Span:
    return _year(now.year, now)


@_ahead(rf"(?:再过|过)?(?P<n>{_ZH_NUM})(?P<unit>天|日|个?(?:周|星期|礼拜)|个月|年)(?:之|以)?后")
def _zh_in_n(m: re.Match[str], now: datetime) -> Span:
    n, unit = zh_number(m["n"]), m["unit"]
    if unit == "个月":
        return _month(now.year, now.month + n, now)
    if unit == "年":
        return _year(now.year + n, now)
    day = _day(now, n * (1 if unit in ("天", "日") else 7))
    return day, day + timedelta(days=1)
