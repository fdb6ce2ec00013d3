"""What a read of the days a message tells of passes on: what happened then, not every fact told then.

A message telling how the user's last days went ("最近睡眠不好", "这几天好累", see
:func:`~._intent.recent_days_told`) is explained by what they said in those days, in whatever words
("周二搬家，搬了一整天"), so the recall lists the memories of that time (a query of its time words
alone, ``SearchQuery.time_alone``). Everything said then matches such a listing, also the standing facts
a user tells in passing: "我不吃辣", a cat's name, where they live say nothing of how the last days went,
and their place is the profile, found when a message is about them. Of the memories listed, a recall
passes on every account of the days (what happened, how the user felt) and drops a **standing fact**
(a memory in which the archiver reads a profile statement, :func:`~agent_memory.formation.statement_topics`:
饮食 for "我不吃辣", 居住地 for "我住在杭州") unless it

- tells how the user is: a statement or cue on a topic of :data:`STATE_TOPICS` (health, sleep:
  "我最近总是失眠", "我对花粉过敏");
- is on a topic the message is about (the cues of ``TOPIC_CUES``: "最近胃口不好" is about the diet); or
- relates to the message by its words: the message's own search, over the same time, matches the memory
  by a word or a synonym of one (its keyword score is above zero). A likeness in meaning alone does
  not count, as it does not put a memory in the recall block either.

A question about what happened in a time ("我们上周聊了什么", :func:`~._intent.days_asked_about`) asks
for all of it: no narrowing is made for it.
"""

from __future__ import annotations

from ..formation import TOPICS, statement_topics
from ..search import MAX_QUERY_CHARS, HybridMemorySearch, SearchHit, SearchQuery, SearchResults
from ..tools import ListingFilter
from ._intent import cue_topics, recent_days_told

#: The profile topics of how the user is: health and sleep.
STATE_TOPICS: frozenset[str] = frozenset({"health", "schedule"})
#: The most memories of the days whose relation to the message's words is read (the search's own limit).
RELATED_DEPTH = 100
#: A topic's label in either language -> its key (statement_topics gives labels).
_TOPIC_OF_LABEL = {label: key for key, labels in TOPICS.items() for label in labels}


def stated_topics(text: str) -> frozenset[str]:
    """The profile topics (keys) a memory's text states something on, read as the archiver reads a chat.

    >>> sorted(stated_topics("2026-01-02：用户说：“对了，我不吃辣”")), sorted(stated_topics("周二搬家，搬了一整天"))
    (['diet'], [])
    """
    return frozenset(_TOPIC_OF_LABEL.get(label, label) for label in statement_topics(text))


def describes_state(text: str) -> bool:
    """Whether a memory's text tells how the user is (a :data:`STATE_TOPICS` statement or cue).

    >>> describes_state("用户说：“我最近总是失眠”"), describes_state("用户说：“对了，我不吃辣”")
    (True, False)
    """
    return bool(STATE_TOPICS & (stated_topics(text) | set(cue_topics(text))))


def told_days_filter(search: HybridMemorySearch, message: str) -> ListingFilter | None:
    """The narrowing of a time-alone listing for ``message`` (see the module docs), or ``None`` when the
    message does not tell how the user's last days went (its listing is passed on whole)."""
    if recent_days_told(message) is None:
        return None
    text = message.strip()[:MAX_QUERY_CHARS]
    about = frozenset(cue_topics(text))

    async def narrow(query: SearchQuery, hits: SearchResults) -> SearchResults:
        period = hits.period
        facts = {hit.memory_key: topics for hit in hits if (topics := stated_topics(_text(hit)))}
        if period is None or not facts:
            return hits
        words = SearchQuery.build(
            text,
            scope=query.scope,
            mode="keyword",  # the words and their synonyms: what a relation to the message is read from
            memory_types=query.memory_types,
            start=period.start,
            end=period.end,
            limit=RELATED_DEPTH,
            now=query.now,
            as_of=query.as_of,
        )
        related = {hit.memory_key for hit in await search.run(words) if hit.keyword > 0}
        kept = [
            hit
            for hit in hits
            if hit.memory_key not in facts
            or hit.memory_key in related
            or facts[hit.memory_key] & about
            or describes_state(_text(hit))
        ]
        return SearchResults(kept, expanded=hits.expanded, period=period)

    return narrow


def _text(hit: SearchHit) -> str:
    return hit.record.content[:4000]
