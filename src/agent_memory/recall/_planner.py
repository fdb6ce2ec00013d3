"""An offline, deterministic ``ChatCompletionClient`` that plans the recall's search rounds.

It speaks the same protocol as an LLM client, so the recall runs through the real ``AssistantAgent``,
its tools and events with or without a model. Each ``create`` call re-reads the conversation (the
task and the tool results so far, as a model would) and returns the next tool call:

0. greetings and small talk need no memory: the planner hands off at once (the intent
   analysis of :mod:`._intent`);
1. the search rounds of :class:`ToolLimits` (precise keyword >= 0.7, expanded hybrid
   >= 0.6, semantic >= 0.5; rounds four and five add the earlier user messages to the query; from the
   second round on, a preference question such as "周末想放松一下，有什么推荐？" also names the profile
   topics it is about, "兴趣", so the user's interests are found although the question names none; the
   second round also follows a strong first hit of what the user said, adding the keywords it names,
   "金色家园" for "我住的小区"); two results >= 0.85 end the refinement (the last planned round still runs once, so
   the ranked list is complete); from the third round on, two rounds in a row with nothing new stop
   the search. A message telling how the user's last days went ("最近睡眠不好，有点焦虑") or asking
   only what happened in a time ("我们上周聊了什么") spends the first round on those days instead
   (:func:`~._intent.days_to_read`): its time words alone ("最近") list the events of that time,
   whatever their words ("这几天一直在熬夜"), less the standing facts told then that bear neither on
   the message nor on how the user is ("我不吃辣", :mod:`._days`); they rank after what the later rounds
   match by words, and are neither followed nor counted as strong results;
2. ``get_memory_detail`` for the best hit when its summary is too thin to judge and its content was
   cut in the result's preview (a whole preview already shows what the detail would: reading it again
   was a round of the agent for nothing, about a third of a turn's recall);
3. ``expand_context_window`` when nothing was found, the message points at earlier conversation
   ("之前", "上次", "as I said" ...) and iterations remain;
4. ``handoff`` with the memories at or above the similarity threshold (an absolute score, the same
   one applied to any model's handoff), best first, and a follow-up question when nothing was found.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResultMessage,
    LLMMessage,
    UserMessage,
)
from pydantic import ValidationError

from ..domain import DATED_TYPES
from ..text import TYPE_KEYWORDS, Tokenizer, fold
from ..tools import (
    EARLY_STOP_SCORE,
    TIMED_OUT,
    MemorySearchResultItem,
    RoundConfig,
    ToolLimits,
    rank_found,
    said_by_assistant,
)
from ._intent import classify_intent, days_to_read, needs_memory, topic_terms
from ._planner_client import PlannerClient
from ._prompt import RecallTask, parse_task

#: A summary shorter than this (characters) is too thin to judge: the planner reads the detail.
THIN_SUMMARY = 12
#: A memory found with at least this score (about a third of the question) is followed: its keywords
#: join the next rounds' query; at most this many of them.
FOLLOW_SCORE = 0.7
FOLLOW_WORDS = 4
_REFERS_BACK = re.compile(
    r"之前|以前|上次|上回|刚才|前面|那个|那件|那次|原来"
    r"|\b(earlier|before|previous(ly)?|last time|as i said|that one)\b",
    re.IGNORECASE,
)


@dataclass(slots=True)
class _Seen:
    """What the conversation so far tells the planner."""

    task: RecallTask
    searches: list[list[MemorySearchResultItem]] = field(default_factory=list)
    #: the arguments of each successful search, in the order of ``searches``
    searched: list[dict[str, Any]] = field(default_factory=list)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    details: set[str] = field(default_factory=set)
    expansion_refused: bool = False
    search_blocked: bool = False


class OfflineRecallPlanner(PlannerClient):
    """Plans recall tool calls without a model (see the module docs for the strategy).

    ``limits`` gives the search rounds; ``similarity_threshold`` is the lowest score reported as
    relevant; ``semantic`` says whether the search has a model embedder (without one the semantic
    round scores in hybrid mode: hashed n-grams alone are weaker than the lexical scores).
    """

    def __init__(
        self, *, limits: ToolLimits | None = None, similarity_threshold: float = 0.5, semantic: bool = False
    ) -> None:
        if not 0.0 <= similarity_threshold <= 1.0:
            raise ValueError("similarity_threshold must be between 0 and 1")
        self.limits = limits or ToolLimits()
        self.similarity_threshold = similarity_threshold
        self.semantic = semantic
        super().__init__()

    # -- planning ------------------------------------------------------------------------------------

    def plan(self, messages: Sequence[LLMMessage]) -> tuple[str, dict[str, Any]]:
        """The next ``(tool name, arguments)`` for this conversation."""
        seen = _read(messages)
        task = seen.task
        done = len(seen.searches)
        if done == 0 and task.iteration == 1 and not seen.rounds and not needs_memory(task.current):
            return "handoff", _no_memory_needed(task, classify_intent(task.current))
        rounds = len(self.limits.plan)
        found = rank_found(seen.searches)
        days = days_to_read(task.current)
        matched = [b for b, args in zip(seen.searches, seen.searched, strict=True) if not _lists_days(args, days)]
        high = [r for r in rank_found(matched) if r.relevance_score >= EARLY_STOP_SCORE]
        stalled = (
            done >= 3
            and not _new(seen.searches[-1], seen.searches[:-1])
            and not _new(seen.searches[-2], seen.searches[:-2])
        )
        searching = done < rounds and not stalled and not seen.search_blocked
        number = done + 1
        if searching and len(high) >= 2:
            # enough strong results: skip the refinement, but run the last planned round once so the
            # ranked list the main model gets is complete
            last = self.limits.round(rounds)
            query = _query(task, last, rounds, matched)
            searching = not any(_is_round(args, last, self.semantic, query) for args in seen.rounds)
            number = rounds
        if searching:
            config = self.limits.round(number)
            if number == 1 and days is not None:
                return "search_memories", _days_round(days, config, self.semantic)
            query = _query(task, config, number, matched)
            return "search_memories", {
                "query": query,
                "search_mode": _mode(config, self.semantic),
                "limit": config.max_results,
                "min_relevance_score": config.min_score,
            }
        if (
            found
            and len(found[0].summary) < THIN_SUMMARY
            and not found[0].preview_is_whole
            and found[0].memory_key not in seen.details
        ):
            return "get_memory_detail", {"memory_key": found[0].memory_key}
        if (
            not found
            and not seen.expansion_refused
            and task.iteration < task.max_iterations
            and _REFERS_BACK.search(task.current)
        ):
            return "expand_context_window", {
                "reason": "没有找到相关记忆，当前消息引用了更早的对话，需要查看更早的消息",
                "current_size": task.window_size,
                "requested_size": min(50, task.window_size * 2),
            }
        return "handoff", _handoff_args(task, self.relevant(found), done)

    def relevant(self, found: Sequence[MemorySearchResultItem]) -> list[MemorySearchResultItem]:
        """The results reported as relevant: score >= ``similarity_threshold``, in the recall's order."""
        return [r for r in found if r.relevance_score >= self.similarity_threshold]


def _mode(config: RoundConfig, semantic: bool) -> str:
    return "hybrid" if config.search_mode == "semantic" and not semantic else config.search_mode


def _read(messages: Sequence[LLMMessage]) -> _Seen:
    task_text = next((m.content for m in messages if isinstance(m, UserMessage) and isinstance(m.content, str)), "")
    seen = _Seen(parse_task(task_text))
    names: dict[str, str] = {}
    calls: dict[str, dict[str, Any]] = {}
    for message in messages:
        if isinstance(message, AssistantMessage) and isinstance(message.content, list):
            for call in message.content:
                names[call.id] = call.name
                args = calls[call.id] = _json(call.arguments)
                if call.name == "get_memory_detail":
                    seen.details.add(str(args.get("memory_key", "")))
                elif call.name == "search_memories":
                    seen.rounds.append(args)
        elif isinstance(message, FunctionExecutionResultMessage):
            for result in message.content:
                name = names.get(result.call_id, result.name)
                data = _json(result.content)
                if name == "search_memories":
                    if data.get("success"):
                        seen.searches.append(list(_items(result.content)))
                        seen.searched.append(calls.get(result.call_id, {}))
                    elif TIMED_OUT not in str(data.get("message") or ""):
                        seen.search_blocked = True  # a timed-out round is searched again, in the next one's time
                elif name == "expand_context_window" and not data.get("approved", False):
                    seen.expansion_refused = True
    return seen


@functools.lru_cache(maxsize=256)
def _items(text: str) -> tuple[MemorySearchResultItem, ...]:
    """The results of a successful search's output. Kept for the next calls of the same recall, which
    read the whole conversation again (every round's results, once per round); the planner never
    changes what it read."""
    results = _json(text).get("results")
    items = []
    for raw in results if isinstance(results, list) else []:
        try:
            items.append(MemorySearchResultItem.model_validate(raw))
        except ValidationError:
            continue
    return tuple(items)


def _is_round(args: Mapping[str, Any], config: RoundConfig, semantic: bool, query: str) -> bool:
    """Whether a search call's arguments are those of ``config``'s round (with its query)."""
    return (
        args.get("query") == query
        and args.get("search_mode") == _mode(config, semantic)
        and args.get("limit") == config.max_results
        and args.get("min_relevance_score") == config.min_score
    )


def _days_round(days: str, config: RoundConfig, semantic: bool) -> dict[str, Any]:
    """The first round of a message whose days are to be read (:func:`~._intent.days_to_read`): the events
    of those days, listed by their time words alone (a query of nothing but a time, see
    ``SearchQuery.time_alone``)."""
    return {
        "query": days,
        "search_mode": _mode(config, semantic),
        "memory_types": list(DATED_TYPES),
        "limit": config.max_results,
        "min_relevance_score": config.min_score,
    }


def _lists_days(args: Mapping[str, Any], days: str | None) -> bool:
    """Whether a search's arguments are those of :func:`_days_round` (its hits match by time, not words)."""
    return days is not None and args.get("query") == days and args.get("memory_types") == list(DATED_TYPES)


def _json(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except (ValueError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}


def _new(batch: Sequence[MemorySearchResultItem], earlier: Sequence[Sequence[MemorySearchResultItem]]) -> bool:
    known = {r.memory_key for b in earlier for r in b}
    return any(r.memory_key not in known for r in batch)


def _query(
    task: RecallTask, config: RoundConfig, number: int, earlier: Sequence[Sequence[MemorySearchResultItem]]
) -> str:
    """The round's query: the message (with the window's earlier user messages when the round says so);
    from the second round on, the profile topics a request for suggestions is about; in the second
    (expanded) round also what the first round's best memory names (see :func:`_followed`). Later rounds
    search the message itself again: the latest round leads the ranking, and a followed word must add
    memories, not reorder the ones the message itself matches."""
    query = _with_window(task) if config.with_context or task.iteration > 1 else task.current
    if number > 1:
        followed = _followed(query, earlier[:1]) if number == 2 else ""
        query = " ".join(part for part in (query, topic_terms(task.current), followed) if part)
    return query[:3000]


def _followed(query: str, earlier: Sequence[Sequence[MemorySearchResultItem]]) -> str:
    """The keywords of the best memory found earlier (score >= :data:`FOLLOW_SCORE`) that the query lacks,
    as a model that read the hit would search next: "我住的小区叫金色家园" leads to 金色家园, and the
    second fact about 金色家园 is found although it shares few words with the question. Words a memory
    carries for its type (画像, profile ...) are not followed, nor what the assistant said: its reply
    speaks of what the user told it in its own words (放松 in "换气是最难的一关，放松下来就好了"), and
    following them searches for the assistant's subject, not the user's (换气 finds the swimming lessons
    for "周末想放松一下"). The user's words are what the user said: a profile item, a gist, a message."""
    found = [
        item
        for batch in earlier
        for item in batch
        if item.relevance_score >= FOLLOW_SCORE and not said_by_assistant(item)
    ]
    if not found:
        return ""
    anchor = max(found, key=lambda item: item.relevance_score)
    folded = fold(query)
    words = [k for k in anchor.keywords if k and fold(k) not in folded and fold(k) not in _type_words()]
    return " ".join(words[:FOLLOW_WORDS])


@functools.cache
def _type_words() -> frozenset[str]:
    """The words every memory of a type carries (its type keywords), folded as stored. Built on
    first use: the tokenizer loads jieba's dictionary, which importing the planner must not wait for."""
    return frozenset(
        term
        for words in TYPE_KEYWORDS.values()
        for word, _ in words
        for term in (fold(word), *Tokenizer().unique_tokens(word))
    )


def _with_window(task: RecallTask) -> str:
    """The current message plus the earlier user messages of the (expanded) window."""
    earlier = [text for role, text in task.window if role == "user"][-4:]
    return " ".join([task.current, *earlier])[:3000]


def _handoff_args(task: RecallTask, found: Sequence[MemorySearchResultItem], rounds: int) -> dict[str, Any]:
    keys = [r.memory_key for r in found][:10]
    if not keys:
        return {
            "reason": f"{rounds} 轮搜索没有找到相关记忆",
            "search_summary": "没有找到与当前对话相关的记忆。",
            "relevant_memory_keys": [],
            "confidence": 0.0,
            "needs_more_info": True,
            "follow_up_question": "能再具体说说你指的是哪件事吗？比如大概的时间、地点或关键词。",
            "iteration_used": task.iteration,
            "context_window_used": task.window_size,
        }
    top = [r.relevance_score for r in found[:3]]
    return {
        "reason": f"{rounds} 轮搜索完成，找到 {len(keys)} 条相关记忆",
        "search_summary": f"找到 {len(keys)} 条相关记忆。",
        "relevant_memory_keys": keys,
        "confidence": round(sum(top) / len(top), 3),
        "needs_more_info": False,
        "iteration_used": task.iteration,
        "context_window_used": task.window_size,
    }


def _no_memory_needed(task: RecallTask, intent: str) -> dict[str, Any]:
    return {
        "reason": f"消息是{'问候' if intent == 'greeting' else '闲聊'}，不需要召回记忆",
        "search_summary": "无需记忆。",
        "relevant_memory_keys": [],
        "confidence": 1.0,
        "needs_more_info": False,
        "iteration_used": task.iteration,
        "context_window_used": task.window_size,
    }
