"""An offline ``ChatCompletionClient`` that drives the evidence recall by the evidence-recall skill.

It reads the conversation as a model would (the task, then each tool result) and returns the next
tool call, with the parameters the skill's metadata gives (time windows, role words, anchors):

1. Observe: a time window from the question's time words ("最近" = the last 7 days), else the time it
   names ("上周", "on 7 July, 2023"); ``role=user`` for a question about the user themself; greetings
   and small talk hand off at once;
2. ``search_memories`` (profile and this friend's gists; for a message telling how the user's last days
   went, "最近睡眠不好", or asking only what happened in a time, "我们上周聊了什么", first the events of
   those days by the time words alone, and for the question ``messages_list`` of those days: their
   words need not be the question's), ``lexical_search`` and ``semantic_search`` with that filter;
3. Reflect: fewer hits than the skill's ``widen_when_fewer_than`` with a filter on -> the same two
   searches once more without it;
4. ``neighbors`` of the best anchors; then ``handoff``. Synthesis happens in code afterwards.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResultMessage,
    LLMMessage,
    UserMessage,
)

from ..domain import DATED_TYPES
from ..recall import PlannerClient, days_asked_about, days_to_read, needs_memory
from ..text import named_time_range
from ._skill import Skill, load_skill

NOW_PREFIX = "当前时间:"
QUESTION_PREFIX = "问题:"


def evidence_task(question: str, *, now: datetime) -> str:
    """The task message of an evidence recall."""
    return f"{NOW_PREFIX} {now.isoformat()}\n{QUESTION_PREFIX} {task_question(question)}"


def task_question(question: str) -> str:
    """The question as the recall reads it: one line, at most 2,000 characters (the planner and the
    reported limits then look at the same text)."""
    return " ".join(question.split())[:2000]


def observe(question: str, *, now: datetime, skill: Skill) -> tuple[datetime | None, datetime | None, str | None]:
    """The time window ``[since, until)`` (``until`` ``None``: up to now) and the role filter the skill
    gives for a question: a time word's window back from now ("最近" = 7 days), else the time the
    question names ("上周", "on 7 July, 2023"), else none."""
    lowered = f" {question.lower()} "
    since: datetime | None
    until: datetime | None
    for window in skill.metadata.get("time_windows", []):
        if any(str(w).lower() in lowered for w in window.get("words", [])):
            since, until = now - timedelta(days=int(window["days"])), None
            break
    else:
        since, until = _named_window(question, now)
    role = "user" if any(str(w) in lowered for w in skill.metadata.get("user_role_words", [])) else None
    return since, until, role


@functools.lru_cache(maxsize=256)
def _named_window(question: str, now: datetime) -> tuple[datetime | None, datetime | None]:
    """The span the question names, up to now (the planner asks at every step of one recall)."""
    named = named_time_range(question, now=now)
    if named is None or named.start >= min(named.end, now):
        return None, None  # none, or a time still to come: nothing was said then
    return named.start, min(named.end, now)


class EvidenceRecallPlanner(PlannerClient):
    """Plans the evidence recall's tool calls without a model (see the module docs)."""

    call_prefix = "ev"

    def __init__(self, *, skill: Skill | None = None) -> None:
        self.skill = skill or load_skill("evidence-recall")
        super().__init__()

    def plan(self, messages: Sequence[LLMMessage]) -> tuple[str, dict[str, Any]]:
        """The next ``(tool, arguments)``."""
        task = next((m.content for m in messages if isinstance(m, UserMessage) and isinstance(m.content, str)), "")
        now, question = _parse(task)
        calls, results = _history(messages)
        meta = self.skill.metadata
        if not calls and not needs_memory(question):
            return "handoff", _handoff("问候或闲聊，不需要召回", 1.0)
        since, until, role = observe(question, now=now, skill=self.skill)
        window = {k: v.isoformat() for k, v in (("since", since), ("until", until)) if v is not None}
        filters = {"role": role, "time_range": window or None}
        filtered = {k: v for k, v in filters.items() if v is not None}
        size = int(meta.get("page_size", 10))
        searched = [str(a.get("query")) for c, a in calls if c == "search_memories"]
        days = days_to_read(question)
        memory_search = {
            "search_mode": "hybrid",
            "limit": 10,
            "min_relevance_score": float(meta.get("memory_min_score", 0.0)),
        }
        if days is not None and not searched:  # the events of the days to read, ranked after the rest
            return "search_memories", {"query": days, "memory_types": list(DATED_TYPES), **memory_search}
        if question[:1000] not in searched:
            return "search_memories", {"query": question[:1000], **memory_search}
        listed = _messages(results, ("messages_list",))
        asked = days_asked_about(question) is not None
        if asked and since is not None and not any(c == "messages_list" for c, _ in calls):
            # a question about what happened in a time reads that time's messages: the searches below
            # match its words ("聊了什么"), which the messages of that week need not share (a message telling
            # how the last days went, "最近睡眠不好", is searched by its words: a window's first messages
            # would crowd out the one it is about)
            page = int(meta.get("window_page_size", 20))
            return "messages_list", {**window, **({"role": role} if role else {}), "page_size": page}
        searches = [(c, a) for c, a in calls if c in ("lexical_search", "semantic_search")]
        plan = [
            ("lexical_search", {"query_text": question[:1000], "page_size": size}),
            (
                "semantic_search",
                {"query_text": question[:1000], "top_k": size, "min_score": float(meta.get("min_semantic_score", 0.2))},
            ),
        ]
        for name, args in plan:
            if not any(c == name for c, _ in searches):
                return name, {**args, **({"filter": filtered} if filtered else {})}
        found = _messages(results, ("lexical_search", "semantic_search"))
        widened = any("filter" not in a for _, a in searches)
        if filtered and not widened and len(found) + len(listed) < int(meta.get("widen_when_fewer_than", 2)):
            for name, args in plan:
                if not any(c == name and "filter" not in a for c, a in searches):
                    return name, args
        anchors = sorted(found.values(), key=lambda m: -(m.get("score") or 0.0))[: int(meta.get("anchors", 2))]
        read = {a.get("message_id") for c, a in calls if c == "neighbors"}
        span = int(meta.get("neighbours", 2))
        for anchor in anchors:
            if anchor["message_id"] not in read:
                return "neighbors", {"message_id": anchor["message_id"], "before": span, "after": span}
        evidence = len(found.keys() | listed.keys())
        return "handoff", _handoff(f"找到 {evidence} 条证据消息", 0.8 if evidence else 0.0)


def _parse(task: str) -> tuple[datetime, str]:
    now, question = None, task
    for line in task.splitlines():
        if line.startswith(NOW_PREFIX):
            now = datetime.fromisoformat(line[len(NOW_PREFIX) :].strip())
        elif line.startswith(QUESTION_PREFIX):
            question = line[len(QUESTION_PREFIX) :].strip()
    if now is None:
        raise ValueError("the evidence task has no current time line")
    return now, question


def _history(messages: Sequence[LLMMessage]) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, tuple[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    names: dict[str, str] = {}
    results: dict[str, tuple[str, Any]] = {}
    for message in messages:
        if isinstance(message, AssistantMessage) and isinstance(message.content, list):
            for call in message.content:
                names[call.id] = call.name
                calls.append((call.name, _json(call.arguments)))
        elif isinstance(message, FunctionExecutionResultMessage):
            for result in message.content:
                results[result.call_id] = (names.get(result.call_id, result.name), _json(result.content))
    return calls, results


def _messages(results: Mapping[str, tuple[str, Any]], tools: Sequence[str]) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for name, data in results.values():
        if name in tools and isinstance(data, dict) and data.get("success"):
            for m in data.get("messages") or []:
                if isinstance(m, dict) and isinstance(m.get("message_id"), int):
                    best = found.get(m["message_id"])
                    if best is None or (m.get("score") or 0) > (best.get("score") or 0):
                        found[m["message_id"]] = m
    return found


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return {}


def _handoff(reason: str, confidence: float) -> dict[str, Any]:
    return {"reason": reason, "search_summary": reason, "relevant_memory_keys": [], "confidence": confidence}
