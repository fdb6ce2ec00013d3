"""The MemRecallAgent tools bound to one scope (user, optional AI friend) the model cannot see or set.

>>> box = MemoryToolbox(search, user_id="u1", friend_id="mentor")  # doctest: +SKIP
>>> out = await box.search_memories(SearchMemoriesInput(query="数据库配置"))  # doctest: +SKIP
>>> out.success, [r.memory_key for r in out.results]  # doctest: +SKIP
(True, ['db-config-001'])
>>> agent_tools = box.tools()  # AutoGen BaseTools for an AssistantAgent  # doctest: +SKIP

Every tool returns its output model; failures come back with ``success=False`` (``approved=False``
for the window) and a message that says what to do, never as an exception.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from autogen_core.models import ChatCompletionClient, UserMessage
from autogen_core.tools import BaseTool

from data_layer import InvalidInputError, MemoryRecord, MemoryType, NotFoundError, Scope

from ..domain import FailureWords, failure_text, reach
from ..history import marked, shown_at
from ..search import MAX_QUERY_CHARS, HybridMemorySearch, SearchQuery, SearchResults
from ..text import KeywordExtractor, neutralize, neutralize_value
from ._ledger import RecallLedger, SearchRound
from ._limits import ToolLimits
from ._models import (
    ASSISTANT_SAID,
    ExpandContextWindowInput,
    ExpandContextWindowOutput,
    ExtractKeywordsInput,
    ExtractKeywordsOutput,
    GetMemoryDetailInput,
    GetMemoryDetailOutput,
    HandoffInput,
    HandoffOutput,
    KeywordExtractionItem,
    MemorySearchResultItem,
    SearchMemoriesInput,
    SearchMemoriesOutput,
    content_preview,
)
from ._registry import MEMRECALL_TOOLS

logger = logging.getLogger(__name__)

#: The largest context window the recall may ask for (messages).
MAX_WINDOW = 50
#: The words of a round's time-out message: a model (or the offline planner) may search again, the
#: next round with its own, longer limit (a cold index refresh can outlast round 1's 0.5 s).
TIMED_OUT = "超过时间上限"

KEYWORDS_PROMPT = """从以下查询中提取搜索关键词。

用户查询: {query}
{context}

请提取最多 {max_keywords} 个关键词，按重要性排序。
关键词类型包括:
- entity: 人名、地名、系统名、文件名等实体
- action: 操作、动作、命令等行为
- concept: 概念、主题、技术术语
- time: 时间相关词汇（如"上周"、"昨天"等）

返回 JSON 格式:
{{
    "keywords": [
        {{"keyword": "词1", "weight": 0.9, "type": "entity"}},
        {{"keyword": "词2", "weight": 0.7, "type": "action"}}
    ],
    "expanded_query": "扩展后的查询描述"
}}"""


def _speaker(record: MemoryRecord) -> str:
    """:data:`ASSISTANT_SAID` for a memory of what the assistant said (metadata ``role``), else ``""``."""
    return ASSISTANT_SAID if record.metadata.get("role") == "assistant" else ""


def _log_failure(tool: str, exc: Exception) -> None:
    """A refusal of bad arguments (the model's mistake, answered in its output) is an info line; any
    other failure a warning with its traceback."""
    if isinstance(exc, InvalidInputError | NotFoundError):
        logger.info("%s refused: %s", tool, exc)
    else:
        logger.warning("%s failed", tool, exc_info=True)


def _failure(exc: Exception) -> str:
    """What the model reads when a tool fails: the kind of failure and what to do next.

    The project's errors say what was wrong in their message; a storage failure is reported by its
    problem only (no driver text), with a retry hint when repeating can help.
    """
    return failure_text(exc, _FAILURE_WORDS)


#: How :func:`_failure` words each kind of failure for the model.
_FAILURE_WORDS = FailureWords(
    invalid="参数无效: {error}",
    not_found="未找到: {error}",
    storage="数据库错误（{reason}）: {problem}。{advice}，仍然失败则在 handoff 中报告",
    retry="请重试一次",
    no_retry="重试无用",
    library="记忆系统错误: {error}",
    internal="工具内部错误: {name}: {error}",
)


def _unknown_types(memory_types: list[str] | None) -> str | None:
    """A message naming the memory types that do not exist (``None``: all are known)."""
    known = [t.value for t in MemoryType]
    unknown = [t for t in memory_types or () if t not in known]
    if not unknown:
        return None
    return f"未知的记忆类型 {unknown}；可用类型: {', '.join(known)}（不确定时省略 memory_types）"


#: Narrows the hits of a search of nothing but a time (``SearchResults.period`` set) to those that bear on
#: the conversation: the recall passes one for a message telling how the user's last days went.
ListingFilter = Callable[[SearchQuery, SearchResults], Awaitable[SearchResults]]


#: How many memories of a time a listing reads before its narrowing (``listing``) and the round's cut.
LISTED_BEFORE_NARROWING = 50


class MemoryToolbox:
    """The five recall tools for one :class:`Scope` (user, optional AI friend), with its limits.

    ``iteration`` / ``max_iterations`` and ``window_size`` describe the current recall iteration;
    ``ledger`` (shared by the iterations of one recall) records every search, detail read, window
    expansion and the handoff as typed values. ``limits`` caps results and consecutive searches and
    gives each search round its time limit. ``as_of`` answers every search with what was current
    then (an earlier value of a changed profile item). ``now`` fixes the reference time of the time decay
    (benchmarks replaying old conversations; default: the current time). Sensitive memories of
    another friend (``agent_memory.domain.reach``) are left out of the
    results and refused by ``get_memory_detail`` unless the runtime passes ``allow_sensitive=True``.
    ``listing`` narrows what a search of nothing but a time lists ("最近": every memory of those days) to
    what bears on the conversation (``agent_memory.recall.told_days_filter``; ``None``: all of it).
    """

    def __init__(
        self,
        search: HybridMemorySearch,
        *,
        scope: Scope,
        ledger: RecallLedger | None = None,
        limits: ToolLimits | None = None,
        model_client: ChatCompletionClient | None = None,
        extractor: KeywordExtractor | None = None,
        iteration: int = 1,
        max_iterations: int = 3,
        window_size: int = 5,
        now: datetime | None = None,
        allow_sensitive: bool = False,
        as_of: datetime | None = None,
        listing: ListingFilter | None = None,
    ) -> None:
        if not isinstance(scope, Scope):
            raise TypeError("scope must be a data_layer.Scope, e.g. Scope.of(user_id, friend_id)")
        self._search = search
        self._now = now
        #: every search answers with what was current at this time (``None``: now)
        self.as_of = as_of
        self.scope = scope
        self.ledger = ledger if ledger is not None else RecallLedger()
        self.limits = limits or ToolLimits()
        self.model_client = model_client
        self.extractor = extractor or KeywordExtractor()
        self.iteration = iteration
        self.max_iterations = max_iterations
        self.window_size = window_size
        self.consecutive_searches = 0
        self.allow_sensitive = allow_sensitive
        self.listing = listing

    @property
    def handoff_input(self) -> HandoffInput | None:
        """The handoff's arguments, once the model handed off with valid ones."""
        return self.ledger.handoff

    @property
    def expansion(self) -> ExpandContextWindowOutput | None:
        """The window expansion approved in this iteration, if any."""
        approved = [e for e in self.ledger.expansions if e.approved and e.iteration == self.iteration + 1]
        return approved[-1] if approved else None

    # -- the tools -----------------------------------------------------------------------------------

    async def search_memories(self, data: SearchMemoriesInput) -> SearchMemoriesOutput:
        """Search the scope's memories (at most 10 results, at most 3 searches in a row).

        ``keywords`` filter: only memories holding at least one of them (folded, exact) are returned
        (the rule is in :class:`~agent_memory.search.SearchQuery`). ``search_query_expanded`` is the
        engine's own list of the terms it searched for, synonyms from ``keyword_synonyms`` included.
        """
        limit = self.limits.max_consecutive_searches
        if self.consecutive_searches >= limit:
            return SearchMemoriesOutput(
                success=False,
                total_found=0,
                message=f"已连续搜索 {limit} 次（上限）。请用 get_memory_detail 查看已有结果，"
                "或调用 handoff 结束并报告当前最佳结果",
            )
        self.consecutive_searches += 1
        number = len(self.ledger.searches) + 1
        started = time.perf_counter()
        timeout = self.limits.round_timeout(number)
        unknown = _unknown_types(data.memory_types)
        if unknown is not None:
            return self._record(
                number, data, SearchMemoriesOutput(success=False, total_found=0, message=unknown), started
            )
        try:
            # build() checks every size first; keywords are extracted only from a validated query
            query = SearchQuery.build(
                data.query,
                scope=self.scope,
                mode=data.search_mode,
                keywords=data.keywords,
                memory_types=data.memory_types,
                time_range_days=data.time_range_days,
                limit=min(data.limit, self.limits.max_results),
                min_relevance_score=self._min_score(data),
                now=self._now,
                as_of=self.as_of,
            )
            # a listing of a time (a query of time words alone) is narrowed before it is cut to the
            # round's size: every memory of that time ties at 1.0, so which ones a cut kept first
            # depended on how often each had been read, and the narrowing then dropped some of those
            listing = self.listing if self.listing is not None and query.time_alone() is not None else None
            if listing is not None:
                query = dataclasses.replace(query, limit=LISTED_BEFORE_NARROWING)
            async with asyncio.timeout(timeout):  # in this task: no task of its own per search
                hits = await self._search.run(query, round_number=number)  # traced by the engine
                if listing is not None:
                    narrowed = await listing(query, hits) if hits.period is not None else hits
                    cut = min(data.limit, self.limits.max_results)
                    hits = SearchResults(narrowed[:cut], expanded=narrowed.expanded, period=narrowed.period)
        except TimeoutError:
            out = SearchMemoriesOutput(
                success=False,
                total_found=0,
                message=f"第 {number} 轮搜索{TIMED_OUT} {timeout:g} 秒。可以再搜一次（下一轮时限更长）或调用 handoff",
            )
            return self._record(number, data, out, started)
        except Exception as exc:  # returned to the model, never raised
            _log_failure("search_memories", exc)
            return self._record(
                number, data, SearchMemoriesOutput(success=False, total_found=0, message=_failure(exc)), started
            )
        at = self.as_of or query.at  # the time the search answered for: a past event says so
        results = [
            MemorySearchResultItem(
                memory_key=h.memory_key,
                summary=neutralize(_speaker(h.record) + marked(h.summary or "", h.record, at)),
                content_preview=content_preview(h.record.content),
                memory_type=h.record.memory_type,
                relevance_score=h.score,
                created_at=h.record.created_at.isoformat(),
                keywords=list(h.keywords),
            )
            for h in hits
            if reach(self.scope, h.record, allow_sensitive=self.allow_sensitive)
        ]
        message = None
        if hits.period is not None and results:  # a time alone: listed by time, not matched by words
            span = hits.period
            last = span.end - timedelta(microseconds=1)  # the span's end is exclusive
            which = "中与当前消息相关或讲用户身心状态" if listing is not None else ""
            message = (
                f"查询只有时间词，按时间列出 {span.expression}（{span.start:%Y-%m-%d} 至 {last:%Y-%m-%d}）"
                f"的记忆{which}；它们与消息不一定有相同的词"
            )
        elif not results and query.keywords is not None:
            message = (
                f"没有找到包含 keywords {list(query.keywords)} 中任一词且足够相关的记忆。"
                "keywords 是精确过滤：可以去掉 keywords、换关键词或降低 min_relevance_score 再试"
            )
        elif not results:
            message = "没有找到足够相关的记忆。可以换关键词、降低 min_relevance_score 或改用 semantic 模式再试"
        out = SearchMemoriesOutput(
            success=True,
            total_found=len(results),
            results=results,
            # what the engine searched for (folded query terms and keyword_synonyms), not a re-analysis
            search_query_expanded=", ".join(hits.expanded) or None,
            message=message,
        )
        return self._record(number, data, out, started)

    def _min_score(self, data: SearchMemoriesInput) -> float:
        given = "min_relevance_score" in data.model_fields_set
        default = self.limits.default_min_score
        return data.min_relevance_score if given or default is None else default

    def _record(
        self, number: int, data: SearchMemoriesInput, out: SearchMemoriesOutput, started: float
    ) -> SearchMemoriesOutput:
        elapsed = round((time.perf_counter() - started) * 1000, 1)
        self.ledger.searches.append(SearchRound(number, data, out, elapsed))
        return out

    async def get_memory_detail(self, data: GetMemoryDetailInput) -> GetMemoryDetailOutput:
        """The full content of one memory of the scope (another friend's event is "not found")."""
        self.consecutive_searches = 0
        uid = self.scope.user_id
        try:
            memory, allow = self._search.memory, self.allow_sensitive
            record = await memory.retrieve_memory(
                memory_key=data.memory_key, user_id=uid, touch=False, include_inactive=self.as_of is not None
            )
            if record is not None and not shown_at(record, self.as_of):
                record = None  # as of a time, an earlier version is read; a deleted memory never
            if record is not None and record.is_active and reach(self.scope, record, allow_sensitive=allow):
                # visible: read again, counting the access (hidden and withheld memories are not touched)
                record = await memory.retrieve_memory(memory_key=data.memory_key, user_id=uid)
        except Exception as exc:
            _log_failure("get_memory_detail", exc)
            return GetMemoryDetailOutput(success=False, message=_failure(exc))
        gate = None if record is None else reach(self.scope, record, allow_sensitive=self.allow_sensitive)
        if record is None or gate is None or not gate.seen:
            return GetMemoryDetailOutput(
                success=False, message=f"未找到记忆: {data.memory_key}。请使用 search_memories 结果中的 memory_key"
            )
        if not gate:
            return GetMemoryDetailOutput(
                success=False,
                message=f"记忆 {data.memory_key} 是敏感记忆，需要用户额外授权才能读取。不要再请求它，在 handoff 中说明",
            )
        self.ledger.details.append(record.memory_key)
        return GetMemoryDetailOutput(
            success=True,
            memory_key=record.memory_key,
            summary=neutralize(marked(record.summary, record, self.as_of or self._now or datetime.now(UTC))),
            content=neutralize(record.content),
            memory_type=record.memory_type,
            created_at=record.created_at.isoformat(),
            metadata=neutralize_value(dict(record.metadata)),
        )

    async def extract_search_keywords(self, data: ExtractKeywordsInput) -> ExtractKeywordsOutput:
        """Typed, weighted keywords of a query: by the model client (JSON) when set, else jieba-based."""
        self.consecutive_searches = 0
        for name, text in (("query", data.query), ("context", data.context or "")):
            if len(text) > MAX_QUERY_CHARS:  # checked before any extraction or model call
                return ExtractKeywordsOutput(
                    success=False,
                    message=f"参数无效: {name} 有 {len(text)} 个字符，最多 {MAX_QUERY_CHARS}。请缩短后重试",
                )
        note = None
        if self.model_client is not None:
            try:
                return await self._llm_keywords(data)
            except Exception as exc:
                logger.warning("LLM keyword extraction failed; using the offline extractor", exc_info=True)
                note = f"模型提取失败（{type(exc).__name__}），已改用离线提取"
        try:
            found = self.extractor.query_keywords(
                data.query[:4000], context=(data.context or "")[:4000] or None, max_keywords=data.max_keywords
            )
        except Exception as exc:
            logger.warning("offline keyword extraction failed", exc_info=True)
            return ExtractKeywordsOutput(success=False, message=_failure(exc))
        return ExtractKeywordsOutput(
            success=True,
            keywords=[KeywordExtractionItem(keyword=k.keyword, weight=k.weight, type=k.type) for k in found],
            expanded_query=" ".join(k.keyword for k in found) or None,
            message=note,
        )

    async def _llm_keywords(self, data: ExtractKeywordsInput) -> ExtractKeywordsOutput:
        assert self.model_client is not None
        prompt = KEYWORDS_PROMPT.format(
            query=data.query,
            context=f"上下文: {data.context}" if data.context else "",
            max_keywords=data.max_keywords,
        )
        result = await self.model_client.create([UserMessage(content=prompt, source="system")], json_output=True)
        if not isinstance(result.content, str):
            raise ValueError("the model answered with a function call")
        parsed = json.loads(result.content)
        items = [KeywordExtractionItem.model_validate(k) for k in parsed.get("keywords", [])][: data.max_keywords]
        if not items:
            raise ValueError("the model returned no keywords")
        return ExtractKeywordsOutput(success=True, keywords=items, expanded_query=parsed.get("expanded_query"))

    async def expand_context_window(self, data: ExpandContextWindowInput) -> ExpandContextWindowOutput:
        """Approve a larger window while iterations remain (the context then restarts the recall)."""
        self.consecutive_searches = 0
        refuse = None
        if self.iteration >= self.max_iterations:
            refuse = f"已达到最大迭代次数 ({self.max_iterations})，无法继续拓展。请调用 handoff 返回当前最佳结果"
        elif data.requested_size <= self.window_size:
            refuse = f"requested_size ({data.requested_size}) 必须大于当前窗口 ({self.window_size} 条消息)"
        elif data.requested_size > MAX_WINDOW:
            refuse = f"requested_size 最大为 {MAX_WINDOW}"
        if refuse is not None:
            out = self.refused_expansion(refuse)
            self.ledger.expansions.append(out)
            return out
        out = ExpandContextWindowOutput(
            approved=True,
            new_size=data.requested_size,
            iteration=self.iteration + 1,
            max_iterations=self.max_iterations,
            message=f"批准拓展到 {data.requested_size} 条消息，进入第 {self.iteration + 1} 轮迭代",
        )
        self.ledger.expansions.append(out)
        return out

    def refused_expansion(self, message: str) -> ExpandContextWindowOutput:
        """A refused expansion: the window stays as it is."""
        return ExpandContextWindowOutput(
            approved=False,
            new_size=self.window_size,
            iteration=self.iteration,
            max_iterations=self.max_iterations,
            message=message,
        )

    async def handoff(self, data: HandoffInput) -> HandoffOutput:
        """End the recall: record the arguments and format the handoff's result message."""
        self.consecutive_searches = 0
        self.ledger.handoff = data
        self.ledger.handoff_problem = None
        parts = [f"## 记忆搜索完成 (信心度: {data.confidence:.0%})", "", "### 搜索总结", data.search_summary]
        parts += ["", "### 结束原因", data.reason]
        if data.relevant_memory_keys:
            parts += ["", "### 相关记忆标识", f"共找到 {len(data.relevant_memory_keys)} 个相关记忆:"]
            parts += [f"- {key}" for key in data.relevant_memory_keys]
        if data.needs_more_info and data.follow_up_question:
            parts += ["", "### 需要进一步澄清", data.follow_up_question]
        return HandoffOutput(success=True, message="\n".join(parts), task_completed=True)

    # -- AutoGen -----------------------------------------------------------------------------------

    def tools(self, names: list[str] | None = None, *, compact: bool = False) -> list[BaseTool[Any, Any]]:
        """The tools as AutoGen ``BaseTool`` objects (default: all but ``handoff``, which an agent gets
        through ``handoffs=``); ``compact`` for short schemas."""
        chosen = names if names is not None else [n for n, spec in MEMRECALL_TOOLS.items() if not spec.is_handoff]
        unknown = [n for n in chosen if n not in MEMRECALL_TOOLS]
        if unknown:
            raise ValueError(f"unknown tool(s) {unknown}; known: {', '.join(MEMRECALL_TOOLS)}")
        from ._adapter import ScopedTool

        return [ScopedTool(self, name, compact=compact) for name in chosen]
