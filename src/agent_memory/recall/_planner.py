"""An offline, deterministic ``ChatCompletionClient`` that plans the recall (seed 002's round manager).

It speaks the same protocol as an LLM client, so the recall runs through the real ``AssistantAgent``,
its tools and events with or without a model. Each ``create`` call re-reads the conversation (the
task and the tool results so far) and returns the next tool call:

1. rounds of ``search_memories``: precise (keyword mode, score >= 0.6, 5 results), expanded (hybrid
   with synonyms, >= 0.4, 8 results), broad (hybrid, any score, 10 results; a semantic round when the
   search has a model embedder); two results >= 0.85 end the refinement (the broad round still runs
   once, so the ranked list is complete); from the third round on,
   two rounds in a row with nothing new stop the search;
2. ``get_memory_detail`` for the best hit when its summary is too thin to judge;
3. ``expand_context_window`` when nothing was found, the message points at earlier conversation
   ("之前", "上次", "as I said" ...) and iterations remain;
4. ``handoff`` with the relevant keys (best first), a confidence, and a follow-up question when
   nothing was found.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    ModelCapabilities,  # type: ignore[attr-defined]
    ModelFamily,
    ModelInfo,
    RequestUsage,
    UserMessage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from ._prompt import RecallTask, parse_task


@dataclass(frozen=True, slots=True)
class RoundConfig:
    """One search round of the round manager."""

    strategy: str
    search_mode: Literal["keyword", "hybrid", "semantic"]
    min_score: float
    max_results: int


#: Seed 002 section 3.4.3, stage four, with thresholds on this library's score scale (a memory that
#: holds half of the query's words scores about 0.45) and a broad last round, so the results the
#: main model may see include everything the engine ranks in its top 10.
DEFAULT_ROUNDS: tuple[RoundConfig, ...] = (
    RoundConfig("precise", "keyword", 0.6, 5),
    RoundConfig("expanded", "hybrid", 0.4, 8),
    RoundConfig("broad", "hybrid", 0.0, 10),
)
EARLY_STOP_SCORE = 0.85
#: Below this best score nothing is reported as relevant (scores are absolute: about the share of the
#: query's weight a memory covers, see the search docs).
MIN_RELEVANT = 0.15
#: A summary shorter than this (characters) is too thin to judge: the planner reads the detail.
THIN_SUMMARY = 12
_REFERS_BACK = re.compile(
    r"之前|以前|上次|上回|刚才|前面|那个|那件|那次|原来"
    r"|\b(earlier|before|previous(ly)?|last time|as i said|that one)\b",
    re.IGNORECASE,
)
_PLANNER_INFO = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=True,
    family=ModelFamily.UNKNOWN,
    structured_output=False,
    multiple_system_messages=True,
)


@dataclass(slots=True)
class _Seen:
    """What the conversation so far tells the planner."""

    task: RecallTask
    searches: list[list[dict[str, Any]]] = field(default_factory=list)
    details: set[str] = field(default_factory=set)
    expansion_refused: bool = False
    search_blocked: bool = False
    broad_done: bool = False


class OfflineRecallPlanner(ChatCompletionClient):
    """Plans recall tool calls without a model (see the module docs for the strategy).

    ``rounds`` is the number of search rounds (1-5; rounds past the third repeat the broad one),
    ``similarity_threshold`` how close to the best hit a memory must score to be reported relevant.
    """

    def __init__(self, *, rounds: int = 3, similarity_threshold: float = 0.5) -> None:
        if not 1 <= rounds <= 5:
            raise ValueError("rounds must be between 1 and 5")
        if not 0.0 <= similarity_threshold <= 1.0:
            raise ValueError("similarity_threshold must be between 0 and 1")
        self.rounds = rounds
        self.similarity_threshold = similarity_threshold
        self._calls = 0
        self._usage = RequestUsage(prompt_tokens=0, completion_tokens=0)

    # -- planning ------------------------------------------------------------------------------------

    def round_config(self, number: int) -> RoundConfig:
        """The configuration of search round ``number`` (1-based; later rounds repeat the last)."""
        return DEFAULT_ROUNDS[min(number, len(DEFAULT_ROUNDS)) - 1]

    def plan(self, messages: Sequence[LLMMessage]) -> tuple[str, dict[str, Any]]:
        """The next ``(tool name, arguments)`` for this conversation."""
        seen = _read(messages)
        task = seen.task
        done = len(seen.searches)
        found = _ranked(seen.searches)
        high = [r for r in found if r["relevance_score"] >= EARLY_STOP_SCORE]
        stalled = (
            done >= 3
            and not _new(seen.searches[-1], seen.searches[:-1])
            and not _new(seen.searches[-2], seen.searches[:-2])
        )
        searching = done < self.rounds and not stalled and not seen.search_blocked
        if searching and len(high) >= 2:
            # enough strong results: skip the remaining refinement rounds, but finish with the broad
            # one once, so the ranked list the main model gets is complete
            searching = not seen.broad_done
            number = len(DEFAULT_ROUNDS)
        else:
            number = done + 1
        if searching:
            config = self.round_config(number)
            query = task.current if task.iteration == 1 else _with_window(task)
            return "search_memories", {
                "query": query,
                "search_mode": config.search_mode,
                "limit": config.max_results,
                "min_relevance_score": config.min_score,
            }
        if found and len(found[0]["summary"]) < THIN_SUMMARY and found[0]["memory_key"] not in seen.details:
            return "get_memory_detail", {"memory_key": found[0]["memory_key"]}
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

    def relevant(self, found: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """The results reported as relevant: within ``similarity_threshold`` of the best score (0.5: at
        least half as good as the best hit), when the best reaches ``MIN_RELEVANT``."""
        if not found or float(found[0]["relevance_score"]) < MIN_RELEVANT:
            return []
        floor = self.similarity_threshold * float(found[0]["relevance_score"])
        return [r for r in found if float(r["relevance_score"]) >= floor]

    # -- ChatCompletionClient ----------------------------------------------------------------------

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        """The next tool call as a ``CreateResult`` (text "TERMINATE" if the tool is not offered)."""
        name, arguments = self.plan(messages)
        offered = {_tool_name(t) for t in tools}
        self._calls += 1
        if tools and name not in offered:
            return CreateResult(finish_reason="stop", content="TERMINATE", usage=self._usage, cached=False)
        call = FunctionCall(id=f"plan-{self._calls}", name=name, arguments=json.dumps(arguments, ensure_ascii=False))
        return CreateResult(finish_reason="function_calls", content=[call], usage=self._usage, cached=False)

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        """Streams the single planned result."""
        yield await self.create(messages, tools=tools, tool_choice=tool_choice)

    async def close(self) -> None:
        """Nothing to release."""

    def actual_usage(self) -> RequestUsage:
        return self._usage

    def total_usage(self) -> RequestUsage:
        return self._usage

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        return sum(len(str(m.content)) for m in messages) // 2

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        return 1_000_000

    @property
    def capabilities(self) -> ModelCapabilities:  # type: ignore[override]
        return {"vision": False, "function_calling": True, "json_output": True}  # type: ignore[return-value]

    @property
    def model_info(self) -> ModelInfo:
        return _PLANNER_INFO


def _tool_name(tool: Tool | ToolSchema) -> str:
    return tool["name"] if isinstance(tool, dict) else tool.name


def _read(messages: Sequence[LLMMessage]) -> _Seen:
    task_text = next((m.content for m in messages if isinstance(m, UserMessage) and isinstance(m.content, str)), "")
    seen = _Seen(parse_task(task_text))
    names: dict[str, str] = {}
    for message in messages:
        if isinstance(message, AssistantMessage) and isinstance(message.content, list):
            for call in message.content:
                names[call.id] = call.name
                args = _json(call.arguments)
                if call.name == "get_memory_detail":
                    seen.details.add(str(args.get("memory_key", "")))
                elif call.name == "search_memories" and _is_round(args, DEFAULT_ROUNDS[-1]):
                    seen.broad_done = True
        elif isinstance(message, FunctionExecutionResultMessage):
            for result in message.content:
                name = names.get(result.call_id, result.name)
                data = _json(result.content)
                if name == "search_memories":
                    if data.get("success"):
                        seen.searches.append(list(data.get("results") or []))
                    else:
                        seen.search_blocked = True
                elif name == "expand_context_window" and not data.get("approved", False):
                    seen.expansion_refused = True
    return seen


def _is_round(args: Mapping[str, Any], config: RoundConfig) -> bool:
    """Whether a search call's arguments are those of ``config``'s round."""
    return (
        args.get("search_mode") == config.search_mode
        and args.get("limit") == config.max_results
        and args.get("min_relevance_score") == config.min_score
    )


def _json(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except (ValueError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}


def _ranked(searches: Sequence[Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Every result seen, once: the latest search's results best first, then those only earlier
    searches returned (later rounds are broader; scores of different modes are not on one scale)."""
    best: dict[str, dict[str, Any]] = {}
    order: dict[str, int] = {}
    last: dict[str, int] = {}
    for number, batch in enumerate(searches):
        for item in batch:
            key = str(item.get("memory_key"))
            order.setdefault(key, len(order))
            last[key] = number
            best[key] = dict(item)
    return sorted(
        best.values(),
        key=lambda r: (-last[str(r["memory_key"])], -float(r.get("relevance_score", 0)), order[str(r["memory_key"])]),
    )


def _new(batch: Sequence[Mapping[str, Any]], earlier: Sequence[Sequence[Mapping[str, Any]]]) -> bool:
    known = {r.get("memory_key") for b in earlier for r in b}
    return any(r.get("memory_key") not in known for r in batch)


def _with_window(task: RecallTask) -> str:
    """The current message plus the earlier user messages of the (expanded) window."""
    earlier = [text for role, text in task.window if role == "user"][-4:]
    return " ".join([task.current, *earlier])[:3000]


def _handoff_args(task: RecallTask, found: Sequence[Mapping[str, Any]], rounds: int) -> dict[str, Any]:
    keys = [str(r["memory_key"]) for r in found][:10]
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
    top = [float(r["relevance_score"]) for r in found[:3]]
    lines = "；".join(f"{r['memory_key']}: {r['summary']}" for r in found[:5])
    return {
        "reason": f"{rounds} 轮搜索完成，找到 {len(keys)} 条相关记忆",
        "search_summary": f"找到 {len(keys)} 条相关记忆。{lines}",
        "relevant_memory_keys": keys,
        "confidence": round(sum(top) / len(top), 3),
        "needs_more_info": False,
        "iteration_used": task.iteration,
        "context_window_used": task.window_size,
    }
