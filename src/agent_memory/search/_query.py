"""``SearchQuery``: one search, validated once. Every layer passes this value, and it is the cache key.

>>> q = SearchQuery.build("数据库配置", scope=Scope.of("u1", "mentor"), limit=5)
>>> q.scope.friend_id, q.mode, q.limit
('mentor', 'hybrid', 5)

What a query means is decided here: the text searched is the query plus any ``keywords``, which also
filter (see :attr:`SearchQuery.keywords`); ``time_range_days`` counts back from ``now``; a time named
in the text ("上周", "in May 2023") is :attr:`SearchQuery.named`: the time decay measures the distance
to it instead of the age, and it narrows the range only when ``use_time_expressions`` is set.

>>> SearchQuery.build("配置", scope=Scope.of("u1"), keywords=["東京", " MySQL ", "mysql"]).keywords
('mysql', '东京')
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, get_args

from typing_extensions import TypeIs

from data_layer import InvalidInputError, Scope, check_memory_type

from ..domain import listed_in_full
from ..history import aware as _aware  # the one rule for a time given to the library
from ..text import TimeRange, asked_range, fold, named_range, parse_time_expressions

SearchMode = Literal["keyword", "semantic", "hybrid"]
SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)


def is_search_mode(value: object) -> TypeIs[SearchMode]:
    """Whether ``value`` names a search mode (one of :data:`SEARCH_MODES`)."""
    return value in SEARCH_MODES


#: Longest query accepted (characters); longer text should be summarised or split first.
MAX_QUERY_CHARS = 4_000
#: The most results one search returns.
MAX_LIMIT = 100
#: The longest ``time_range_days`` (about 100 years).
MAX_RANGE_DAYS = 36_500
#: The most filter keywords one search takes.
MAX_KEYWORDS = 20
#: What may stand beside a time in a query of nothing but a time: punctuation and joining words.
_JOINERS = re.compile(r"[\W_]+|\b(?:in|on|at|during|the|over|from|within)\b|[的了呢吧啊呀里内中]", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A validated search: what to look for, whose memories, and the filters. Build it with :meth:`build`.

    ``keywords`` is the search tool's ``keywords`` parameter ("可选的精确关键词列表，用于精确过滤", an optional list
    of exact keywords that filters), folded (:func:`~agent_memory.text.fold`), deduplicated and sorted;
    ``None`` when none were given. The rule, applied by the ``candidates`` stage:

    - a memory is returned only when it holds **at least one** of the keywords. The tool's own example
      passes alternatives (``keywords=["数据库", "配置", "database"]`` for a Chinese question, expecting the
      Chinese memories), so the list is read as "any of these words", not "all of them";
    - a memory holds a keyword when **every** search term of the keyword (folded and tokenised exactly
      like memories are: ``"Databases"`` -> ``databas``, ``"機器 學習"`` -> ``机器``, ``学习``) is one of
      the memory's own terms or a term of one of its stored keywords (user tags included);
    - matching is exact: no prefix, synonym or neighbour match counts for the filter (they still score);
    - a keyword with no search term (only stop words or punctuation, ``"的"``, ``"%"``) is held by no
      memory, and a keyword no memory holds returns no results (not an error);
    - the keywords are also searched for, as words added to the query text.
    """

    text: str
    scope: Scope
    mode: SearchMode = "hybrid"
    keywords: tuple[str, ...] | None = None
    memory_types: tuple[str, ...] | None = None
    start: datetime | None = None
    end: datetime | None = None
    limit: int = 10
    min_score: float = 0.0
    now: datetime | None = None
    #: the time the text names ("on 7 July, 2023", "上周"), if any: the time decay then measures the
    #: distance to it instead of to now, and a date written out weighs the relevance too (a filter only
    #: with ``use_time_expressions``)
    named: TimeRange | None = None
    #: every time expression of the text, in reading order (read once by :meth:`build`)
    spans: tuple[TimeRange, ...] = field(default=(), compare=False, repr=False)
    #: the message alone, without the ``keywords`` added to :attr:`text` (split into sentences by the
    #: search; the keywords go with every sentence); empty: the text
    message: str = field(default="", compare=False, repr=False)
    #: answer as of this time: each memory as it stood then (an earlier version of a changed profile
    #: item, nothing said later); ``None``: what is current now
    as_of: datetime | None = None

    @classmethod
    def build(
        cls,
        query: str,
        *,
        scope: Scope,
        mode: str | None = None,
        default_mode: SearchMode = "hybrid",
        keywords: Sequence[str] | None = None,
        memory_types: Sequence[str] | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        time_range_days: int | None = None,
        use_time_expressions: bool = False,
        limit: int = 10,
        min_relevance_score: float = 0.0,
        now: datetime | None = None,
        as_of: datetime | None = None,
    ) -> SearchQuery:
        """Validate the arguments of a search; raises :class:`InvalidInputError` naming the bad one."""
        if not isinstance(scope, Scope):
            raise InvalidInputError("scope must be a data_layer.Scope (Scope.of(user_id, friend_id))")
        text = _query_text(query, keywords)
        filter_words = _keywords(keywords)
        chosen = mode or default_mode
        if not is_search_mode(chosen):
            raise InvalidInputError(f"mode must be one of {', '.join(SEARCH_MODES)}, not {chosen!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidInputError(f"limit must be an integer from 1 to {MAX_LIMIT}, not {limit!r}")
        score = min_relevance_score
        if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score) or not 0 <= score <= 1:
            raise InvalidInputError(f"min_relevance_score must be a number from 0 to 1, not {score!r}")
        when = _aware(now, "now") or datetime.now(UTC)
        lo, hi = _aware(start, "start"), _aware(end, "end")
        if time_range_days is not None:
            if (
                isinstance(time_range_days, bool)
                or not isinstance(time_range_days, int)
                or not 1 <= time_range_days <= MAX_RANGE_DAYS
            ):
                raise InvalidInputError(f"time_range_days must be a whole number of days from 1 to {MAX_RANGE_DAYS}")
            try:
                since = when - timedelta(days=time_range_days)
            except OverflowError:  # a ``now`` in the first days of year 1: the range starts at the earliest time
                since = datetime.min.replace(tzinfo=UTC)
            lo = max(lo, since) if lo else since
        spans = tuple(parse_time_expressions(text, now=when))  # read once: named, the filter, time_alone
        named = named_range(spans)
        if use_time_expressions:  # the filter takes a vague word too ("最近": the last days)
            asked = asked_range(spans)
            if asked is not None:
                lo = max(lo, asked.start) if lo else asked.start
                hi = min(hi, asked.end) if hi else asked.end
        return cls(
            text=text,
            message=query.strip(),
            scope=scope,
            mode=chosen,
            keywords=filter_words,
            memory_types=_types(memory_types),
            start=lo,
            end=hi,
            limit=limit,
            min_score=float(score),
            now=when,
            named=named,
            spans=spans,
            as_of=_aware(as_of, "as_of"),
        )

    def time_alone(self) -> TimeRange | None:
        """The time a query of nothing but a time names ("最近", "上周", "in May 2023"), else ``None``.

        Such a query asks for the memories of that time ("上周聊了什么" has a word to match, "上周"
        has none): every memory said inside it matches it fully, and the time decay orders them. A
        recall uses it to read the days a message speaks of when the words of those days differ from
        the message's ("最近睡眠不好" and "这几天一直在熬夜"). The query is a time alone when, without
        its time expressions, only punctuation and joining words are left ("上周的", "in May 2023"):
        "五月天" (a band) and "最近好吗" leave words. A vague word counts ("最近": the last days), as for
        the ``use_time_expressions`` filter; a span wider than ``agent_memory.domain.MAX_LISTED_DAYS`` days is
        too wide to call everything in it a match ("2026年", "since 1900").

        >>> q = SearchQuery.build("最近", scope=Scope.of("u1"), now=datetime(2026, 1, 6, tzinfo=UTC))
        >>> q.time_alone().start.date().isoformat()
        '2025-12-30'
        >>> [SearchQuery.build(t, scope=Scope.of("u1")).time_alone() for t in ("最近的项目", "五月天", "2026年")]
        [None, None, None]
        """
        if not self.spans:
            return None
        rest = fold(self.text)
        for said in self.spans:
            rest = rest.replace(said.expression, " ")
        span = asked_range(self.spans)
        if _JOINERS.sub("", rest) or span is None or not listed_in_full(span.end - span.start):
            return None
        return span

    @property
    def at(self) -> datetime:
        """The reference time of the time decay."""
        return self.now or datetime.now(UTC)

    def cache_key(self) -> tuple[object, ...]:
        """The query as a cache key (the reference time to the minute, so repeats within it hit; the named
        time too: "上周" in UTC and in +08:00 are different spans)."""
        minute = self.at.replace(second=0, microsecond=0)
        return (
            self.text,
            self.scope,
            self.mode,
            self.keywords,
            self.memory_types,
            self.start,
            self.end,
            self.limit,
            self.min_score,
            minute,
            self.named,
            self.as_of,
        )


def _types(memory_types: Sequence[str] | None) -> tuple[str, ...] | None:
    if memory_types is None:
        return None
    if isinstance(memory_types, str) or not isinstance(memory_types, Sequence):
        raise InvalidInputError('memory_types must be a list of type names, e.g. ["profile", "event"]')
    if not all(isinstance(t, str) for t in memory_types):
        raise InvalidInputError("memory_types must be strings")
    # a misspelt type would find nothing, as if the user had no such memories
    return tuple(sorted({check_memory_type(t) for t in memory_types})) or None


def _keywords(keywords: Sequence[str] | None) -> tuple[str, ...] | None:
    """The filter keywords folded, stripped, deduplicated and sorted; blank ones are left out (they say
    nothing), and an empty list means no filter. Called after :func:`_query_text` checked the types."""
    if not keywords:
        return None
    words = sorted({w for w in (fold(k).strip() for k in keywords) if w})
    if len(words) > MAX_KEYWORDS:
        raise InvalidInputError(f"at most {MAX_KEYWORDS} keywords filter one search; give the most telling ones")
    return tuple(words) or None


def _query_text(query: str, keywords: Sequence[str] | None) -> str:
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, not {type(query).__name__}")
    if keywords is not None and (isinstance(keywords, str) or not isinstance(keywords, Sequence)):
        raise InvalidInputError('keywords must be a list of words, e.g. ["数据库", "配置"]')
    extra = []
    for word in keywords or ():
        if not isinstance(word, str):
            raise InvalidInputError("keywords must be strings")
        if len(word) > 100:
            raise InvalidInputError("a keyword is at most 100 characters")
        extra.append(word)
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInputError(f"query is {len(query)} characters; at most {MAX_QUERY_CHARS} are searched, shorten it")
    text = " ".join([query.strip(), *extra]).strip()
    if not text:
        raise InvalidInputError("query is empty: give some words to search for")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInputError(f"query is {len(text)} characters; at most {MAX_QUERY_CHARS} are searched, shorten it")
    return text
