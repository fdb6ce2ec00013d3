"""``ToolResultManager``: huge tool results live in ``tool_result_archive``; the context
keeps a placeholder, and ``load_tool_history`` brings the full text back for one round.

>>> manager = ToolResultManager(layer, user_id="u1", conversation_id="c1")  # doctest: +SKIP
>>> text = await manager.process_tool_result("search_docs", {"q": "权限"}, "x" * 50_000)  # doctest: +SKIP
>>> text.startswith("📎 [工具结果存档:")  # doctest: +SKIP
True
"""

from __future__ import annotations

import asyncio
import re
import reprlib
from collections.abc import Mapping, Sequence
from typing import Any

from autogen_core import CancellationToken
from autogen_core.models import FunctionExecutionResultMessage, LLMMessage
from autogen_core.tools import BaseTool
from pydantic import BaseModel, Field

from data_layer import (
    AgentFusionDataLayer,
    AgentMemoryError,
    ArchiveRecord,
    InvalidInputError,
    scope_id,
    storable_copy,
    storable_json,
)

from .._fixed_schema import FixedSchemaTool
from ..text import KeywordExtractor

#: Tool results longer than this many characters are archived.
ARCHIVE_THRESHOLD = 10_000
LOAD_TOOL = "load_tool_history"
LOADED_HEADER = "📎 [工具结果已加载: {uuid}] 以下是完整内容（仅本轮可见，下一轮恢复为占位符）:\n"
_LOADED = re.compile(r"^📎 \[工具结果已加载: (?P<uuid>[0-9a-fA-F-]{32,36})\]")
_ARCHIVED = re.compile(r"^📎 \[工具结果存档: (?P<uuid>[0-9a-fA-F-]{32,36})\]")
_RULE = "━" * 37
_URL = re.compile(r"https?://[^\s)\]>\"'，。]+")
_SOURCE_LINE = re.compile(r"(?:来源|出处|source|file)\s*[:：]\s*([^\s，。；;]+)", re.IGNORECASE)
_SENTENCE = re.compile(r"[^。！？!?\n.]+[。！？!?.]?")

LOAD_TOOL_DESCRIPTION = """加载之前工具调用的完整结果。

使用场景：
- 用户询问之前讨论过的细节
- 需要回顾历史检索内容
- 用户说"之前"、"刚才"、"上次说的"等

注意：只在确实需要历史详情时调用，避免不必要的加载。"""

ARCHIVE_PROMPT = """## 历史工具结果管理

对话中可能包含已存档的工具结果（显示为占位符格式）。
当用户询问之前讨论过的细节时，你可以调用 `load_tool_history` 加载完整内容。

判断依据：
- 用户明确提到"之前"、"刚才说的"、"上次"
- 用户追问之前回答中的具体细节
- 占位符中的摘要不足以回答用户问题"""


#: Results longer than this are summarised in a worker thread.
THREAD_CHARS = 50_000
#: Characters of a result searched for sources (a 20 MB result names its sources near the top).
SOURCE_SCAN_CHARS = 200_000
#: A bounded repr of argument values (a 10 MB list costs no more than a short one).
_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = _SHORT_REPR.maxlong = 200
_SHORT_REPR.maxlevel = 3


def extract_sources(text: str, *, limit: int = 3) -> list[str]:
    """Up to ``limit`` sources named in a result: what follows ``来源:`` / ``source:``, then URLs.

    Only the first 200,000 characters are searched; every pattern here is linear in its input.
    """
    head = text[:SOURCE_SCAN_CHARS]
    found = [m.strip()[:200] for m in _SOURCE_LINE.findall(head)] + [u[:2000] for u in _URL.findall(head)]
    return list(dict.fromkeys(found))[:limit]


def _query_summary(tool_input: Mapping[str, Any]) -> str:
    """``k=v`` pairs of the tool's arguments, at most 500 characters (each value cut before joining)."""
    parts = []
    for index, (key, value) in enumerate(tool_input.items()):
        if index >= 20:
            break
        shown = value[:200] if isinstance(value, str) else _SHORT_REPR.repr(value)
        parts.append(f"{str(key)[:50]}={shown}")
    return storable_copy(" ".join(parts)[:500])


def _describe(text: str) -> tuple[str, list[str]]:
    """The summary and sources stored with an archived result (both storable)."""
    return storable_copy(summarize(text)), [storable_copy(s) for s in extract_sources(text)]


def _stored_input(tool_input: Mapping[str, Any]) -> dict[str, Any] | None:
    """The arguments as stored with the archive, or ``None`` when they cannot be stored (too large,
    too deep, not JSON): the archive of the result matters more than a copy of its arguments."""
    try:
        return storable_json(tool_input, name="tool_input")
    except InvalidInputError:
        return None


def summarize(text: str, *, limit: int = 200, extractor: KeywordExtractor | None = None) -> str:
    """An extractive summary: the sentences richest in the text's key terms, in their original order,
    within ``limit`` characters."""
    head = text[:20_000]
    sentences = [s.strip() for s in _SENTENCE.findall(head) if len(s.strip()) >= 6]
    if not sentences:
        return " ".join(head.split())[:limit]
    weights = dict((extractor or KeywordExtractor()).weighted_terms(head)[:30])
    scored = sorted(
        range(len(sentences)),
        key=lambda i: (-sum(w for term, w in weights.items() if term in sentences[i].lower()), i),
    )
    chosen: list[int] = []
    used = 0
    for i in scored:
        if used + len(sentences[i]) > limit:
            continue
        chosen.append(i)
        used += len(sentences[i])
    if not chosen:
        return sentences[scored[0]][:limit]
    return "".join(sentences[i] for i in sorted(chosen))


def placeholder(record: ArchiveRecord) -> str:
    """The placeholder the context keeps for an archived result."""
    sources = "\n".join(f"- {s}" for s in (record.sources or [])) or "- (无)"
    return (
        f"📎 [工具结果存档: {record.uuid}]\n{_RULE}\n"
        f"工具: {record.tool_name}\n"
        f"查询: {record.query_summary}\n"
        f"时间: {record.created_at.strftime('%Y-%m-%d %H:%M:%S')}\n"
        f"原始长度: {record.result_length}字\n{_RULE}\n"
        f"内容摘要:\n{record.result_summary}\n\n"
        f"主要来源:\n{sources}\n{_RULE}\n"
        f'如需查看完整内容，请调用 load_tool_history(uuid="{record.uuid}")'
    )


class LoadToolHistoryInput(BaseModel):
    """load_tool_history 的参数"""

    uuid: str = Field(..., description="要加载的工具结果 UUID（从占位符中获取）")


class ToolResultManager:
    """Archives a user's big tool results of one conversation and loads them back on request."""

    def __init__(
        self,
        layer: AgentFusionDataLayer,
        *,
        user_id: str | int,
        conversation_id: str | int | None = None,
        thread_id: str | int | None = None,
        threshold: int = ARCHIVE_THRESHOLD,
    ) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int) or not 100 <= threshold <= 10_000_000:
            raise InvalidInputError("threshold must be a whole number of characters from 100 to 10,000,000")
        self.layer = layer
        self.user_id = str(scope_id(user_id, name="user_id"))
        self.conversation_id = scope_id(conversation_id, name="conversation_id", optional=True)
        self.thread_id = scope_id(thread_id, name="thread_id", optional=True)
        self.threshold = threshold
        self._placeholders: dict[str, str] = {}

    async def process_tool_result(self, tool_name: str, tool_input: Mapping[str, Any] | None, result: str) -> str:
        """The result itself when short; else archive it and return its placeholder.

        A result that is this manager's own placeholder, or a result it loaded back, passes unchanged;
        one that only starts like them (a tool's output forging the header) is archived like any other.
        Wrong argument types raise :class:`InvalidInputError`.
        """
        if not isinstance(tool_name, str):
            raise InvalidInputError(f"tool_name must be a str, got {type(tool_name).__name__}")
        if tool_input is not None and not isinstance(tool_input, Mapping):
            raise InvalidInputError(
                f"tool_input must be the tool's arguments as a mapping (dict) or None, got {type(tool_input).__name__}"
            )
        if not isinstance(result, str):
            raise InvalidInputError(f"result must be a str, got {type(result).__name__}")
        if len(result) <= self.threshold or await self._is_own(result):
            return result
        arguments = tool_input or {}
        text = storable_copy(result)
        if len(text) > THREAD_CHARS:  # summarising reads 20,000 characters: keep the event loop free
            summary, sources = await asyncio.to_thread(_describe, text)
        else:
            summary, sources = _describe(text)
        record = await self.layer.archive.save(
            user_id=self.user_id,
            conversation_id=self.conversation_id,
            thread_id=self.thread_id,
            tool_name=storable_copy(tool_name.strip()[:100]) or "tool",
            tool_input=_stored_input(arguments),
            query_summary=_query_summary(arguments),
            result_summary=summary,
            result_full=text,
            sources=sources,
        )
        text = placeholder(record)
        self._placeholders[record.uuid] = text
        return text

    async def _is_own(self, result: str) -> bool:
        """Whether ``result`` is exactly a placeholder this manager made, or a result it loaded back."""
        match = _ARCHIVED.match(result) or _LOADED.match(result)
        if match is None:
            return False
        try:
            record = await self._record(match["uuid"])
        except LookupError:
            return False
        if _LOADED.match(result):
            return result == LOADED_HEADER.format(uuid=record.uuid) + record.result_full
        return result == self._placeholders.get(record.uuid, placeholder(record))

    async def _record(self, uuid: str) -> ArchiveRecord:
        try:
            record = await self.layer.archive.get(user_id=self.user_id, archive_uuid=uuid)
        except InvalidInputError:
            record = None
        if record is None or (self.conversation_id is not None and record.conversation_id != self.conversation_id):
            raise LookupError(
                f"no archived tool result {uuid!r} in this conversation; copy the uuid from a placeholder"
            )
        return record

    async def load_tool_result(self, uuid: str) -> str:
        """The full archived text, headed so that :meth:`restore_placeholders` can fold it back."""
        record = await self._record(uuid)
        self._placeholders.setdefault(record.uuid, placeholder(record))
        return LOADED_HEADER.format(uuid=record.uuid) + record.result_full

    async def placeholder_for(self, uuid: str) -> str:
        """The placeholder of an archived result."""
        if uuid not in self._placeholders:
            self._placeholders[uuid] = placeholder(await self._record(uuid))
        return self._placeholders[uuid]

    async def prepare_context(self, messages: Sequence[LLMMessage], load_uuids: Sequence[str] = ()) -> list[LLMMessage]:
        """The messages with the placeholders of ``load_uuids`` replaced by their full text."""
        wanted = set(load_uuids)
        out: list[LLMMessage] = []
        for message in messages:
            if isinstance(message, FunctionExecutionResultMessage) and wanted:
                results = []
                for r in message.content:
                    m = _ARCHIVED.match(r.content)
                    results.append(
                        r.model_copy(update={"content": await self.load_tool_result(m["uuid"])})
                        if m and m["uuid"] in wanted
                        else r
                    )
                message = FunctionExecutionResultMessage(content=results)
            out.append(message)
        return out

    async def restore_placeholders(self, messages: Sequence[LLMMessage]) -> list[LLMMessage]:
        """The messages with every loaded full text folded back to its placeholder (the next round)."""
        out: list[LLMMessage] = []
        for message in messages:
            if isinstance(message, FunctionExecutionResultMessage):
                results = []
                for r in message.content:
                    m = _LOADED.match(r.content)
                    if m is None:
                        results.append(r)
                        continue
                    try:
                        text = await self.placeholder_for(m["uuid"])
                    except Exception:  # purged or unreachable: a short note, never the full text again
                        text = f"📎 [工具结果存档: {m['uuid']}] (存档已不可用，原始长度 {len(r.content)} 字)"
                    results.append(r.model_copy(update={"content": text}))
                message = FunctionExecutionResultMessage(content=results)
            out.append(message)
        return out

    def load_tool(self) -> BaseTool[LoadToolHistoryInput, BaseModel]:
        """``load_tool_history(uuid)`` for the main agent (a wrong uuid comes back as a message)."""
        return _LoadTool(self)


class _LoadResult(BaseModel):
    success: bool
    content: str


class _LoadTool(FixedSchemaTool[LoadToolHistoryInput, BaseModel]):
    def __init__(self, manager: ToolResultManager) -> None:
        super().__init__(LoadToolHistoryInput, _LoadResult, LOAD_TOOL, LOAD_TOOL_DESCRIPTION)
        self._manager = manager

    async def run(self, args: LoadToolHistoryInput, cancellation_token: CancellationToken) -> BaseModel:
        try:
            return _LoadResult(success=True, content=await self._manager.load_tool_result(args.uuid))
        except LookupError as exc:
            return _LoadResult(success=False, content=str(exc.args[0]))
        except AgentMemoryError as exc:  # the database failed: say so, never raise into the agent
            return _LoadResult(success=False, content=f"无法加载存档: {exc}")

    def return_value_as_string(self, value: Any) -> str:
        return value.content if isinstance(value, _LoadResult) else str(value)
