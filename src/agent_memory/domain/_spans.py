"""How wide a span of time is read in full, newest first.

A question about what happened ("我们上周聊了什么？") and a search of nothing but a time ("最近") both
list the memories or messages of the span they name, without matching words: up to this many days.
A wider span (a year, "去年") is searched by its words instead.
"""

from __future__ import annotations

from datetime import timedelta

#: The widest span, in days, read in full by a time alone.
MAX_LISTED_DAYS = 31


def listed_in_full(width: timedelta) -> bool:
    """Whether a span of this ``width`` is narrow enough to be listed in full.

    >>> listed_in_full(timedelta(days=7)), listed_in_full(timedelta(days=365))
    (True, False)
    """
    return width <= timedelta(days=MAX_LISTED_DAYS)
