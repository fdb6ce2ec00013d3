"""``EvidenceToolbox``: the four evidence tools bound to one :class:`~data_layer.Scope`.

The scope (user, optional AI friend) comes from the runtime; no tool takes a ``user_id`` or
``friend_id``, and one passed anyway is refused. Every result goes through ``Scope.sees``, the one
visibility rule: a friend's scope sees that friend's messages (and, with ``include_shared``, messages
with no friend), never another friend's or another user's. A message outside the scope is reported
exactly like a message that does not exist, so an id reveals nothing.

Tools never raise: bad arguments, a bad cursor or a database failure come back as the output model
with ``success=False`` and a message saying what to do. Everything a tool returned is recorded, in
order and once each, in :attr:`EvidenceToolbox.read` for the recall's ``evidence`` output.

>>> box = EvidenceToolbox(layer, index, scope=Scope.of("u1", "mentor"))  # doctest: +SKIP
>>> out = await box.lexical_search('"不吃辣"', filter={"role": "user"})  # doctest: +SKIP
>>> agent = AssistantAgent("recall", model_client=client, tools=box.tools())  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar

from autogen_core import CancellationToken
from autogen_core.tools import BaseTool
from pydantic import BaseModel, ValidationError

from data_layer import (
    AgentFusionDataLayer,
    DataLayerError,
    InvalidInputError,
    MessageNotFoundError,
    MessageRecord,
    Scope,
)

from .._fixed_schema import FixedSchemaTool
from ..forgetting import forgotten_message_ids
from ..text import neutralize
from ._index import MessageIndex, parse_query
from ._models import (
    EvidenceMessage,
    LexicalSearchInput,
    LexicalSearchOutput,
    MessagesListInput,
    MessagesListOutput,
    NeighborsInput,
    NeighborsOutput,
    SearchFilter,
    SemanticSearchInput,
    SemanticSearchOutput,
)

logger = logging.getLogger(__name__)

_Out = TypeVar("_Out", bound=BaseModel)

ToolName = Literal["messages_list", "lexical_search", "semantic_search", "neighbors"]
_BOUND_IDS = frozenset({"user_id", "friend_id", "uid", "userid", "user"})


@dataclass(frozen=True, slots=True)
class EvidenceToolSpec:
    """One evidence tool: its name, the description the model reads, and its models."""

    name: ToolName
    description: str
    input_model: type[BaseModel]
    output_model: type[BaseModel]


EVIDENCE_TOOLS: dict[str, EvidenceToolSpec] = {
    "messages_list": EvidenceToolSpec(
        "messages_list",
        "按时间范围读取用户的聊天消息（旧的在前，分页）。适合“最近/这周/某月”之类按时间扫读。",
        MessagesListInput,
        MessagesListOutput,
    ),
    "lexical_search": EvidenceToolSpec(
        "lexical_search",
        "关键词检索聊天消息。有明确词语（人名、地点、菜名、固定表达）时用；"
        '用双引号括起的短语必须原样出现，如 "\\"不吃辣\\""。可用 filter 限定 role 与 time_range。',
        LexicalSearchInput,
        LexicalSearchOutput,
    ),
    "semantic_search": EvidenceToolSpec(
        "semantic_search",
        "语义相似检索聊天消息。同义改写多（偏好、背景的自然语言描述）时用。",
        SemanticSearchInput,
        SemanticSearchOutput,
    ),
    "neighbors": EvidenceToolSpec(
        "neighbors",
        "取一条消息前后的上下文（同一会话），用来核对语境，避免断章取义。",
        NeighborsInput,
        NeighborsOutput,
    ),
}


class _BadCursor(Exception):
    """A lexical cursor that is malformed or belongs to another query."""


def describe_validation_error(exc: ValidationError) -> str:
    """A model-readable account of bad arguments: each field, what is wrong, and a hint for ids."""
    problems = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error["loc"]) or "arguments"
        if error["type"] == "extra_forbidden" and str(error["loc"][-1]).lower() in _BOUND_IDS:
            problems.append(f"{loc}: 工具已绑定当前用户与对话，不要传 {error['loc'][-1]}")
        else:
            problems.append(f"{loc}: {error['msg']}")
    return "参数无效，请修正后重试: " + "; ".join(problems)


class EvidenceToolbox:
    """The tools ``messages_list``, ``lexical_search``, ``semantic_search`` and ``neighbors`` for
    ``scope``. ``max_chars`` truncates each returned message (marked ``truncated``); ``max_scan``
    bounds the rows one ``messages_list`` call reads when it must filter out other friends' messages.
    ``as_of`` reads the chat as it stood then: no tool returns a message after it. No tool returns a
    message the user asked to forget (:mod:`agent_memory.forgetting`; read once per toolbox, at its first
    call); it reads as absent, like a message outside the scope.
    """

    def __init__(
        self,
        layer: AgentFusionDataLayer,
        index: MessageIndex,
        *,
        scope: Scope,
        max_chars: int = 2000,
        max_scan: int = 2000,
        as_of: datetime | None = None,
    ) -> None:
        self.layer = layer
        #: only messages up to this time are read (``None``: all)
        self.as_of = as_of
        self.index = index
        self.scope = scope
        self.max_chars = max_chars
        self.max_scan = max_scan
        #: Every message the tools returned, in order, once each (first score kept).
        self.read: list[EvidenceMessage] = []
        #: Every call: the tool, its arguments as given, and its typed output (the recall ranks these).
        self.calls: list[tuple[str, dict[str, Any], BaseModel]] = []
        self._read_ids: set[int] = set()
        self._aside: frozenset[int] | None = None
        self._handlers: dict[str, Callable[[Any], Awaitable[BaseModel]]] = {
            "messages_list": self._messages_list,
            "lexical_search": self._lexical_search,
            "semantic_search": self._semantic_search,
            "neighbors": self._neighbors,
        }

    # -- the tools, for direct calls (the recall) ----------------------------------------------------

    async def messages_list(
        self,
        *,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        role: str | None = None,
        page_size: int = 20,
        cursor: str | None = None,
    ) -> MessagesListOutput:
        """The scope's messages in ``[since, until)``, oldest first, a page at a time."""
        args = {"since": since, "until": until, "role": role, "page_size": page_size, "cursor": cursor}
        return await self._answer("messages_list", args, MessagesListOutput)

    async def lexical_search(
        self,
        query_text: str,
        *,
        filter: SearchFilter | Mapping[str, Any] | None = None,
        page_size: int = 10,
        cursor: str | None = None,
    ) -> LexicalSearchOutput:
        """Keyword search: quoted phrases must occur, words rank by BM25."""
        args = {"query_text": query_text, "filter": filter, "page_size": page_size, "cursor": cursor}
        return await self._answer("lexical_search", args, LexicalSearchOutput)

    async def semantic_search(
        self,
        query_text: str,
        *,
        filter: SearchFilter | Mapping[str, Any] | None = None,
        top_k: int = 10,
        min_score: float = 0.1,
    ) -> SemanticSearchOutput:
        """Embedding similarity search."""
        args = {"query_text": query_text, "filter": filter, "top_k": top_k, "min_score": min_score}
        return await self._answer("semantic_search", args, SemanticSearchOutput)

    async def neighbors(self, message_id: int, *, before: int = 3, after: int = 3) -> NeighborsOutput:
        """A message and its conversation around it."""
        args = {"message_id": message_id, "before": before, "after": after}
        return await self._answer("neighbors", args, NeighborsOutput)

    async def _answer(self, name: str, arguments: Mapping[str, Any], output: type[_Out]) -> _Out:
        """:meth:`call`, typed as the tool's output model (every answer is one, a failure too)."""
        out = await self.call(name, arguments)
        assert isinstance(out, output), f"{name} answered with a {type(out).__name__}"
        return out

    async def call(self, name: str, arguments: Mapping[str, Any] | BaseModel) -> BaseModel:
        """Validate ``arguments`` for tool ``name`` and run it; never raises (see the module docs).
        Every call is recorded in :attr:`calls` as ``(tool, arguments as given, output)``."""
        out = await self._call(name, arguments)
        given = arguments.model_dump(exclude_unset=True) if isinstance(arguments, BaseModel) else dict(arguments)
        self.calls.append((name, given, out))
        return out

    async def _call(self, name: str, arguments: Mapping[str, Any] | BaseModel) -> BaseModel:
        spec = EVIDENCE_TOOLS.get(name)
        if spec is None:
            raise KeyError(f"no evidence tool {name!r}; the tools are {sorted(EVIDENCE_TOOLS)}")
        fail = spec.output_model
        try:
            raw = arguments.model_dump(exclude_unset=True) if isinstance(arguments, BaseModel) else dict(arguments)
            args = spec.input_model.model_validate(raw)
        except ValidationError as exc:
            return fail(success=False, message=describe_validation_error(exc))
        except (TypeError, ValueError) as exc:
            return fail(success=False, message=f"参数无效，请传一个 JSON 对象: {exc}")
        try:
            if self._aside is None:
                self._aside = await forgotten_message_ids(self.layer.memory, user_id=self.scope.user_id)
            return await self._handlers[name](args)
        except _BadCursor:
            message = "cursor 无效或属于另一个查询；原样传回上一页的 next_cursor，或不传以从头开始"
            return fail(success=False, message=message)
        except InvalidInputError as exc:
            return fail(success=False, message=f"参数无效: {exc}")
        except DataLayerError as exc:
            logger.warning("evidence tool %s failed: %s", name, exc)
            return fail(success=False, message=f"数据库错误 ({type(exc).__name__})；请重试一次，仍失败则换用其他工具")
        except Exception as exc:  # a tool must answer the model, not end its run
            logger.exception("evidence tool %s failed", name)
            return fail(success=False, message=f"工具内部错误 ({type(exc).__name__})；请换个参数或换用其他工具")

    def tools(self) -> list[BaseTool[BaseModel, BaseModel]]:
        """The four tools as AutoGen tools with flat schemas (one per input field)."""
        return [EvidenceTool(self, name) for name in EVIDENCE_TOOLS]

    # -- implementations -----------------------------------------------------------------------------

    async def _messages_list(self, a: MessagesListInput) -> MessagesListOutput:
        scope = self.scope
        # SQL can filter one friend exactly; "this friend or shared" is filtered here, page by page
        sql_friend = scope.friend_id if scope.friend_id is not None and not scope.include_shared else None
        found: list[MessageRecord] = []
        cursor, scanned = a.cursor, 0
        while True:
            page = await self.layer.messages.list_range(
                user_id=scope.user_id,
                since=a.since,
                until=self._until(a.until),
                role=a.role,
                friend_id=sql_friend,
                page_size=a.page_size - len(found),  # never read past what fits: the cursor stays exact
                cursor=cursor,
            )
            scanned += len(page.items)
            found += [r for r in page.items if self._sees(r) and r.id not in self._set_aside]
            cursor = page.next_cursor
            if cursor is None or len(found) >= a.page_size or scanned >= self.max_scan:
                break
        if found:
            note = f"{len(found)} 条消息（旧的在前）"
        else:
            note = "这一页没有消息" if cursor else "该范围内没有消息；可扩大时间窗或去掉 role 限定"
        if cursor is not None:
            note += "；还有更多，传 cursor=next_cursor 读下一页"
        return MessagesListOutput(
            success=True, message=note, messages=[self._evidence(r) for r in found], next_cursor=cursor
        )

    async def _lexical_search(self, a: LexicalSearchInput) -> LexicalSearchOutput:
        query = parse_query(a.query_text, self.index.tokenizer)
        if not query.phrases and not query.terms:
            return LexicalSearchOutput(
                success=False, message="查询里没有可检索的词（可能都是停用词）；换更具体的词，或用双引号括起短语"
            )
        f = a.filter or SearchFilter()
        signature = self._signature(a)
        after = self._decode_cursor(a.cursor, signature) if a.cursor else None
        hits = await self.index.lexical(
            self.scope,
            a.query_text,
            role=f.role,
            since=f.time_range.since if f.time_range else None,
            until=self._until(f.time_range.until if f.time_range else None),
            limit=a.page_size + 1 + len(self._set_aside),
            after=after,
        )
        hits = [(r, score) for r, score in hits if r.id not in self._set_aside]
        more, hits = len(hits) > a.page_size, hits[: a.page_size]
        next_cursor = self._encode_cursor(signature, hits[-1]) if more and hits else None
        if hits:
            note = f"{len(hits)} 条命中（得分高的在前）" + ("；还有更多，传 cursor=next_cursor" if more else "")
        elif a.cursor:
            note = "没有更多命中"
        else:
            note = "没有匹配的消息；可去掉引号、扩大 time_range、去掉 role 限定，或改用 semantic_search"
        return LexicalSearchOutput(
            success=True,
            message=note,
            messages=[self._evidence(r, s) for r, s in hits],
            next_cursor=next_cursor,
        )

    async def _semantic_search(self, a: SemanticSearchInput) -> SemanticSearchOutput:
        f = a.filter or SearchFilter()
        hits = await self.index.semantic(
            self.scope,
            a.query_text,
            role=f.role,
            since=f.time_range.since if f.time_range else None,
            until=self._until(f.time_range.until if f.time_range else None),
            limit=a.top_k + len(self._set_aside),
            min_score=a.min_score,
        )
        hits = [(r, score) for r, score in hits if r.id not in self._set_aside][: a.top_k]
        if hits:
            note = f"{len(hits)} 条命中（相似度高的在前）"
        else:
            note = f"没有相似度达到 {a.min_score:g} 的消息；可降低 min_score、放宽 filter，或改用 lexical_search"
        return SemanticSearchOutput(success=True, message=note, messages=[self._evidence(r, s) for r, s in hits])

    async def _neighbors(self, a: NeighborsInput) -> NeighborsOutput:
        not_found = NeighborsOutput(
            success=False,
            message=f"没有找到消息 {a.message_id}；请使用 messages_list / lexical_search / semantic_search "
            "结果中的 message_id",
        )
        try:
            rows = await self.layer.messages.neighbors(
                user_id=self.scope.user_id, message_id=a.message_id, before=a.before, after=a.after
            )
        except MessageNotFoundError:
            return not_found
        anchor = next((r for r in rows if r.id == a.message_id), None)
        if (
            anchor is None
            or not self._sees(anchor)
            or anchor.id in self._set_aside
            or (self.as_of is not None and anchor.created_at > self.as_of)
        ):
            # outside the scope (or after the time read) reads as absent
            return not_found
        shown = [
            r
            for r in rows
            if self._sees(r) and r.id not in self._set_aside and (self.as_of is None or r.created_at <= self.as_of)
        ]
        return NeighborsOutput(
            success=True,
            message=f"消息 {a.message_id} 及其前后共 {len(shown)} 条（按时间顺序）",
            messages=[self._evidence(r) for r in shown],
            anchor_id=a.message_id,
        )

    # -- helpers -------------------------------------------------------------------------------------

    def _until(self, until: datetime | None) -> datetime | None:
        """The end of a read: ``until``, or just after :attr:`as_of` when that is earlier (the
        message of that very moment is read)."""
        if self.as_of is None:
            return until
        cap = self.as_of + timedelta(microseconds=1)
        return cap if until is None or until > cap else until

    @property
    def _set_aside(self) -> frozenset[int]:
        """The messages the user asked to forget (read at the first call)."""
        return self._aside or frozenset()

    def _sees(self, record: MessageRecord) -> bool:
        return self.scope.sees_record(record)  # a message: the scope's rule (the sensitivity rule is of memories)

    def _evidence(self, record: MessageRecord, score: float | None = None) -> EvidenceMessage:
        """The record as evidence (content cut at ``max_chars``), noted in :attr:`read` once."""
        text = neutralize(record.content)  # a model reads it
        cut = len(text) > self.max_chars
        item = EvidenceMessage(
            message_id=record.id,
            role=record.role,
            content=text[: self.max_chars] + "…" if cut else text,
            created_at=record.created_at.isoformat(),
            friend_id=record.friend_id,
            score=score,
            truncated=True if cut else None,
        )
        if record.id not in self._read_ids:
            self._read_ids.add(record.id)
            self.read.append(item)
        return item

    @staticmethod
    def _signature(a: LexicalSearchInput) -> str:
        """Ties a cursor to its query and filter: a cursor of another query is refused."""
        key = json.dumps([a.query_text, a.filter.model_dump(mode="json") if a.filter else None], ensure_ascii=False)
        return hashlib.sha256(key.encode()).hexdigest()[:12]

    @staticmethod
    def _encode_cursor(signature: str, hit: tuple[MessageRecord, float]) -> str:
        raw = json.dumps([signature, hit[1], hit[0].id], separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode()

    @staticmethod
    def _decode_cursor(cursor: str, signature: str) -> tuple[float, int]:
        try:
            sig, score, mid = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
            raise _BadCursor from None
        if sig != signature or not isinstance(score, int | float) or not isinstance(mid, int):
            raise _BadCursor
        return float(score), mid


class EvidenceTool(FixedSchemaTool[BaseModel, BaseModel]):
    """One evidence tool as an AutoGen tool: the input model is the (flat) schema, and bad
    arguments come back as the output model with ``success=False`` instead of an error."""

    def __init__(self, box: EvidenceToolbox, name: str) -> None:
        spec = EVIDENCE_TOOLS[name]
        super().__init__(spec.input_model, spec.output_model, spec.name, spec.description)
        self._box = box

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> BaseModel:
        return await self._box.call(self.name, args)

    async def run_json(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken, call_id: str | None = None
    ) -> BaseModel:
        return await self._box.call(self.name, args)

    def return_value_as_string(self, value: Any) -> str:
        if isinstance(value, BaseModel):
            return value.model_dump_json(exclude_none=True)  # UTF-8, not \\u escapes: fewer tokens
        return str(value)
