"""The MCP tools of one user: each validates its arguments, then calls the library's own tool.

>>> tools = MemoryMcpTools(system, user_id="alice")  # doctest: +SKIP
>>> await tools.call("recall_memory", {"query": "推荐个电影", "friend_id": 1})  # doctest: +SKIP
{'profiles': [{'topic': '兴趣', ...}], 'events': [], 'evidence_ids': []}

The user comes from the server's configuration and is never an argument; a read may name an AI friend
(``friend_id``) to see only what that friend may see, through ``data_layer.Scope``. Nothing here
searches or filters by itself: ``recall_memory`` runs ``MemorySystem.recall_memory``, the recall
tools run a fresh ``MemoryToolbox`` per call, the evidence tools run the ``EvidenceToolbox``, and the
writes go through the data layer, which validates them. Every failure is a :class:`McpToolError`
whose message says what to do; arguments are checked before anything is read or written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from data_layer import (
    MAX_CONTENT_BYTES,
    AgentMemoryError,
    MemoryRecord,
)

from ..domain import FRIEND_OWNED_TYPES, FailureWords, failure_text, reach
from ..evidence import EVIDENCE_TOOLS
from ..history import base_key, marked, memory_history, revise, with_expiry
from ..recall import RecallMemoryInput, RecallMemoryOutput
from ..search import freeze_loaded
from ..telemetry import MCP_SPAN, span
from ..text import neutralize
from ..tools import MEMRECALL_TOOLS, GetMemoryDetailInput, GetMemoryDetailOutput, SearchMemoriesInput, content_preview
from ..tools import SearchMemoriesOutput as SearchResult
from ._models import (
    MAX_METADATA_CHARS,
    AddMemoryArgs,
    AddMemoryResult,
    DeleteMemoryArgs,
    DeleteMemoryResult,
    ForgetMemoriesArgs,
    ForgettingItem,
    ForgottenItem,
    GetMemoryDetailArgs,
    LexicalSearchArgs,
    ListForgottenArgs,
    ListForgottenResult,
    ListMemoriesArgs,
    ListMemoriesResult,
    MemoryHistoryArgs,
    MemoryHistoryResult,
    MemoryListItem,
    MemoryVersionItem,
    MessagesListArgs,
    NeighborsArgs,
    SearchMemoriesArgs,
    SemanticSearchArgs,
    UnforgetArgs,
    UpdateMemoryArgs,
    UpdateMemoryResult,
)

if TYPE_CHECKING:
    from ..forgetting import Forgetting
    from ..system import MemorySystem

logger = logging.getLogger(__name__)

#: Argument names that would name the user: the server binds the user, a client cannot choose one.
_USER_KEYS = frozenset({"user", "user_id", "userid", "uid"})


class McpToolError(Exception):
    """A tool call that failed; the message (what went wrong, what to do) is the client's result."""


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool: name, description, argument model, result model, whether it only reads, whether it may
    change or remove what is stored (MCP's destructive hint)."""

    name: str
    description: str
    args: type[BaseModel]
    result: type[BaseModel]
    read_only: bool = True
    destructive: bool = False

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments (types, ranges, required fields; no unknown keys).

        Nested models are written in place: clients such as AutoGen's McpWorkbench pass only
        ``properties`` on to the model and would drop ``$defs``.
        """
        schema = inline_refs(self.args.model_json_schema())
        schema.pop("title", None)
        schema["additionalProperties"] = False
        return schema

    def output_schema(self) -> dict[str, Any]:
        """The JSON schema of a successful result."""
        schema = inline_refs(self.result.model_json_schema())
        schema.pop("title", None)
        return schema


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``{"$ref": "#/$defs/X"}`` replaced by ``X`` (the models are not recursive)."""
    defs = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                target = resolve(defs[ref.removeprefix("#/$defs/")])
                return {**target, **{k: resolve(v) for k, v in node.items() if k != "$ref"}}
            return {k: resolve(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    return resolve(schema)


_FRIEND_NOTE = "\n\nfriend_id (optional): only what that AI friend may see; omit for all of the user's data."

MCP_TOOLS: dict[str, McpTool] = {
    "recall_memory": McpTool(
        "recall_memory",
        "根据当前对话内容，语义搜索相关的用户记忆（包含 Profile 和 Event Gists）。\n"
        "Recall the user's memories for the current message as AI friend friend_id: shared profile items "
        "{topic, content, updated_at} and that friend's event gists {date, content}. Call it once "
        "per user message with the message as query.",
        RecallMemoryInput,
        RecallMemoryOutput,
    ),
    "search_memories": McpTool(
        "search_memories",
        MEMRECALL_TOOLS["search_memories"].description.strip() + _FRIEND_NOTE,
        SearchMemoriesArgs,
        SearchResult,
    ),
    "get_memory_detail": McpTool(
        "get_memory_detail",
        MEMRECALL_TOOLS["get_memory_detail"].description.strip() + _FRIEND_NOTE,
        GetMemoryDetailArgs,
        GetMemoryDetailOutput,
    ),
    "add_memory": McpTool(
        "add_memory",
        "Store a memory of the user. A profile item (memory_type=profile, metadata.topic) is shared by every AI "
        "friend; an event (memory_type=event) belongs to one friend and needs friend_id. An existing memory_key "
        "is refused unless replace=true.",
        AddMemoryArgs,
        AddMemoryResult,
        read_only=False,
    ),
    "update_memory": McpTool(
        "update_memory",
        "Change one memory of the user: its content, summary, metadata or keyword tags (what is omitted stays). "
        "A friend's memory (an event) is changed only with that friend's friend_id; a shared profile item in any "
        "friend's scope.",
        UpdateMemoryArgs,
        UpdateMemoryResult,
        read_only=False,
        destructive=True,
    ),
    "delete_memory": McpTool(
        "delete_memory",
        "Delete one memory of the user: it no longer reaches any search or recall. A friend's memory (an event) "
        "is deleted only with that friend's friend_id; a shared profile item in any friend's scope.",
        DeleteMemoryArgs,
        DeleteMemoryResult,
        read_only=False,
        destructive=True,
    ),
    "memory_history": McpTool(
        "memory_history",
        "A profile item's values over time, oldest first: each with valid_from / valid_to, the version that "
        "superseded it and the chat messages it was drawn from (evidence_ids).",
        MemoryHistoryArgs,
        MemoryHistoryResult,
    ),
    "list_memories": McpTool(
        "list_memories",
        "List the user's memories, newest first, a page at a time (summary and a preview; the full content: "
        "get_memory_detail). Filter by memory_types and by friend_id (what that AI friend may see). Sensitive "
        "memories (health, money, ids ...) of an AI friend are listed only for that friend or one it is shared "
        "with, as search_memories and get_memory_detail give them, so a page may hold fewer than limit.",
        ListMemoriesArgs,
        ListMemoriesResult,
    ),
    "forget_memories": McpTool(
        "forget_memories",
        'Forget what the user told about a subject, as when the user asks in the chat ("forget what I told you '
        "about my ex\"): the memories about it in friend_id's scope (its events, the shared profile items) are set "
        "aside and the messages about it no longer serve as evidence. Nothing is deleted: unforget undoes it.",
        ForgetMemoriesArgs,
        ForgettingItem,
        read_only=False,
        destructive=True,
    ),
    "list_forgotten": McpTool(
        "list_forgotten",
        "What the user asked to forget, newest first: each forgetting's subject, the memories and messages it set "
        "aside, and whether it was undone (undone_at). With friend_id: those asked of that friend or of none.",
        ListForgottenArgs,
        ListForgottenResult,
    ),
    "unforget": McpTool(
        "unforget",
        "Undo a forgetting (key from list_forgotten; omitted: the newest one not undone): its memories come back as "
        "they were and its messages serve as evidence again. One asked of an AI friend is undone only with that "
        "friend's friend_id; one asked of none in any scope.",
        UnforgetArgs,
        ForgettingItem,
        read_only=False,
    ),
    **{
        name: McpTool(name, EVIDENCE_TOOLS[name].description + _FRIEND_NOTE, args, EVIDENCE_TOOLS[name].output_model)
        for name, args in (
            ("messages_list", MessagesListArgs),
            ("lexical_search", LexicalSearchArgs),
            ("semantic_search", SemanticSearchArgs),
            ("neighbors", NeighborsArgs),
        )
    },
}


def explain_arguments(exc: ValidationError, *, user_id: str) -> str:
    """Bad arguments in one message: each field, what is wrong; a user id gets its own advice."""
    problems = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error["loc"]) or "arguments"
        if error["type"] == "extra_forbidden" and str(error["loc"][-1]).lower() in _USER_KEYS:
            problems.append(f"{loc}: the server is bound to user {user_id!r} by its configuration; remove {loc}")
        elif error["type"] == "extra_forbidden":
            problems.append(f"{loc}: unknown argument; remove it (see the tool's input schema)")
        else:
            problems.append(f"{loc}: {error['msg']}")
    return "invalid arguments, fix them and call again: " + "; ".join(problems)


def _failure(exc: Exception) -> str:
    """A library error as the client reads it (the data layer's messages already say what to do)."""
    return failure_text(exc, _FAILURE_WORDS)


#: How :func:`_failure` words each kind of failure for an MCP client.
_FAILURE_WORDS = FailureWords(
    invalid="invalid input: {error}",
    duplicate="{error}. With add_memory: pass replace=true to replace it, or choose another memory_key",
    not_found="not found: {error}",
    storage="database error ({reason}): {problem}; {advice}",
    retry="retry once",
    no_retry="retrying will not help; tell the server's operator",
    library="memory system error: {error}",
    internal="internal error ({name}); the server's log (stderr) has the details",
)


class MemoryMcpTools:
    """The tools of :data:`MCP_TOOLS` for ``user_id`` on ``system`` (see the module docs)."""

    def __init__(self, system: MemorySystem, *, user_id: str | int) -> None:
        self.system = system
        self.user_id = system.scope(user_id).user_id  # validated once: a bad id stops the server at start
        self._handlers: dict[str, Callable[[Any], Awaitable[BaseModel]]] = {
            "recall_memory": self._recall_memory,
            "search_memories": self._search_memories,
            "get_memory_detail": self._get_memory_detail,
            "add_memory": self._add_memory,
            "update_memory": self._update_memory,
            "delete_memory": self._delete_memory,
            "list_memories": self._list_memories,
            "memory_history": self._memory_history,
            "forget_memories": self._forget_memories,
            "list_forgotten": self._list_forgotten,
            "unforget": self._unforget,
            **dict.fromkeys(("messages_list", "lexical_search", "semantic_search", "neighbors"), self._evidence),
        }
        self._warming: asyncio.Task[None] | None = None

    def start_warm_up(self, *, own_process: bool = False) -> None:
        """Load the tokenizer and the user's search indexes in the background (call with a running loop).

        A cold first search spends its round's time limit (0.5 s for the first round) on loading, and
        the recall then finds nothing; tool calls wait for the warm-up instead. ``own_process`` (the
        ``agent-memory mcp`` command): then leave what is loaded out of the collector's full passes
        (:func:`~agent_memory.search.freeze_loaded`).
        """
        if self._warming is None:
            self._warming = asyncio.create_task(self._warm_up(own_process), name="agent-memory mcp warm-up")

    async def stop_warm_up(self) -> None:
        """Cancel an unfinished warm-up (the server stops before the database closes)."""
        task, self._warming = self._warming, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _warm_up(self, own_process: bool) -> None:
        try:
            await self.system.search.warm_up()
            await self.system.search.search("预热 warm up", user_id=self.user_id, limit=1)
            box = self.system.evidence_toolbox(self._scope(None))
            await box.lexical_search("预热 warm up", page_size=1)
            await box.semantic_search("预热 warm up", top_k=1)
        except Exception:  # the calls themselves will report a real problem
            logger.warning("warm-up failed", exc_info=True)
        if own_process:
            freeze_loaded()

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Run tool ``name``; returns its result as JSON data, raises :class:`McpToolError`. Each call is
        a span (:mod:`agent_memory.telemetry`) naming the tool (an unknown name as ``unknown``)."""
        with span(MCP_SPAN, {"agent_memory.mcp.tool": name if name in MCP_TOOLS else "unknown"}):
            return await self._call(name, arguments)

    async def _call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        warming = self._warming
        if warming is not None and not warming.done():
            await asyncio.shield(warming)
        tool = MCP_TOOLS.get(name)
        if tool is None:
            raise McpToolError(f"unknown tool {name!r}; the tools are: {', '.join(MCP_TOOLS)}")
        try:
            # strict: JSON's types as sent (``true`` is no friend id, ``"yes"`` no boolean, ``"5"`` no number);
            # a whole number written 5.0 is JSON Schema's integer too
            args = tool.args.model_validate(_whole_numbers(dict(arguments or {})), strict=True)
        except ValidationError as exc:
            raise McpToolError(explain_arguments(exc, user_id=self.user_id)) from None
        try:
            result = await self._handlers[name](args)
        except McpToolError:
            raise
        except AgentMemoryError as exc:
            logger.info("tool %s refused: %s", name, exc)
            raise McpToolError(_failure(exc)) from None
        except Exception as exc:
            logger.exception("tool %s failed", name)
            raise McpToolError(_failure(exc)) from None
        return result.model_dump(mode="json")

    def _scope(self, friend_id: str | int | None) -> Any:
        return self.system.scope(self.user_id, friend_id)

    # -- recall --------------------------------------------------------------------------------------

    async def _recall_memory(self, args: RecallMemoryInput) -> RecallMemoryOutput:
        self._scope(args.friend_id)  # a bad friend id is refused before the recall runs
        return await self.system.recall_memory(user_id=self.user_id, request=args)

    # -- memories ------------------------------------------------------------------------------------

    async def _search_memories(self, args: SearchMemoriesArgs) -> SearchResult:
        box = self.system.toolbox(self._scope(args.friend_id))  # fresh per call: no limit carries over
        data = SearchMemoriesInput.model_validate(args.model_dump(exclude={"friend_id"}, exclude_unset=True))
        out = await box.search_memories(data)
        if not out.success:
            raise McpToolError(out.message or "search_memories failed; change the query and try again")
        return out

    async def _get_memory_detail(self, args: GetMemoryDetailArgs) -> GetMemoryDetailOutput:
        box = self.system.toolbox(self._scope(args.friend_id))
        out = await box.get_memory_detail(GetMemoryDetailInput(memory_key=args.memory_key))
        if not out.success:
            raise McpToolError(out.message or f"no memory {args.memory_key!r}")
        return out

    # -- writes and listings -------------------------------------------------------------------------

    async def _add_memory(self, args: AddMemoryArgs) -> AddMemoryResult:
        _check_size(args.content, args.metadata)
        if args.memory_type in FRIEND_OWNED_TYPES and args.friend_id is None:
            raise McpToolError(f"an {args.memory_type} memory belongs to one AI friend: pass its friend_id")
        fields: dict[str, Any] = {
            "user_id": self.user_id,
            "memory_key": args.memory_key or f"mcp-{uuid.uuid4().hex[:16]}",
            "content": args.content,
            "summary": args.summary,
            "memory_type": args.memory_type,
            "friend_id": args.friend_id,
            "metadata": with_expiry(args.metadata, args.expires_at),
            "keywords": args.keywords,
            "on_oversize": "error",  # a client must learn its text was too long, not find it cut
        }
        memory = self.system.layer.memory
        if args.replace:
            upserted = await memory.upsert(**fields)
            record, created = upserted.record, upserted.created
        else:
            record, created = await memory.add(**fields), True
        return AddMemoryResult(
            memory_key=record.memory_key,
            memory_type=record.memory_type,
            friend_id=record.friend_id,
            summary=record.summary,
            created_at=record.created_at.isoformat(),
            created=created,
        )

    async def _owned(self, memory_key: str, friend_id: str | int | None) -> MemoryRecord:
        """The user's memory ``memory_key`` when the scope of ``friend_id`` may change it: a friend's own
        memory only in that friend's scope, a shared one in any; else a :class:`McpToolError` saying why."""
        scope = self._scope(friend_id)
        record = await self.system.layer.memory.retrieve_memory(
            user_id=self.user_id, memory_key=memory_key, touch=False
        )
        if record is None:  # another user's memory is simply not found: the server is bound to one user
            raise McpToolError(f"not found: the user has no memory {memory_key!r}; list_memories shows the keys")
        if record.friend_id is not None and record.friend_id != scope.friend_id:
            if scope.friend_id is None:
                raise McpToolError(
                    f"memory {memory_key!r} belongs to AI friend {record.friend_id!r}: pass friend_id "
                    f"{record.friend_id!r} to change it in that friend's scope"
                )
            raise McpToolError(
                f"memory {memory_key!r} belongs to another AI friend, not {scope.friend_id!r}: a friend changes only "
                "its own memories and the shared profile items"
            )
        return record

    async def _update_memory(self, args: UpdateMemoryArgs) -> UpdateMemoryResult:
        if args.content is None and args.summary is None and args.metadata is None and args.keywords is None:
            raise McpToolError("nothing to change: pass content, summary, metadata or keywords")
        _check_size(args.content, args.metadata)
        record = await self._owned(args.memory_key, args.friend_id)
        memory = self.system.layer.memory
        tags: Sequence[str | tuple[str, float]] | None = args.keywords
        if tags is None:  # the user's tags stay; the computed keywords follow the new content
            kept = await memory.get_keywords(user_id=self.user_id, memory_key=record.memory_key)
            tags = [(k.keyword, k.weight) for k in kept if k.extraction_source == "user_tag"]
        content = args.content if args.content is not None else record.content
        summary = args.summary if args.summary is not None else (record.summary if args.content is None else None)
        updated = await revise(  # a profile item's earlier value stays as its history
            memory,
            user_id=self.user_id,
            memory_key=record.memory_key,
            content=content,
            summary=summary,
            memory_type=record.memory_type,
            friend_id=record.friend_id,
            metadata=args.metadata if args.metadata is not None else record.metadata,
            keywords=tags,
            on_oversize="error",
            shared=record.friend_id is None,
            must_exist=True,
        )
        out = updated.record
        return UpdateMemoryResult(
            memory_key=out.memory_key,
            memory_type=out.memory_type,
            friend_id=out.friend_id,
            summary=neutralize(out.summary),
            updated_at=out.updated_at.isoformat(),
        )

    async def _delete_memory(self, args: DeleteMemoryArgs) -> DeleteMemoryResult:
        record = await self._owned(args.memory_key, args.friend_id)
        deleted = await self.system.layer.memory.delete(user_id=self.user_id, memory_key=record.memory_key)
        return DeleteMemoryResult(memory_key=record.memory_key, deleted=deleted)

    async def _memory_history(self, args: MemoryHistoryArgs) -> MemoryHistoryResult:
        versions = await memory_history(self.system.layer.memory, user_id=self.user_id, memory_key=args.memory_key)
        items = [
            MemoryVersionItem.model_validate(
                {**v.as_dict(), "content": neutralize(v.content), "value": neutralize(v.value)}  # to a model
            )
            for v in versions
        ]
        return MemoryHistoryResult(memory_key=base_key(args.memory_key), versions=items)

    async def _list_memories(self, args: ListMemoriesArgs) -> ListMemoriesResult:
        scope = self._scope(args.friend_id)
        friend = scope.friend_id
        page = await self.system.layer.memory.list_memories(
            user_id=self.user_id,
            memory_types=args.memory_types,
            friend_id=friend,
            include_shared=args.include_shared,
            limit=args.limit,
            cursor=args.cursor,
        )
        now = datetime.now(UTC)
        items = [
            MemoryListItem(
                memory_key=r.memory_key,
                memory_type=r.memory_type,
                friend_id=r.friend_id,
                summary=neutralize(marked(r.summary, r, now)),  # a past event says so, as in search_memories
                content_preview=content_preview(r.content),
                created_at=r.created_at.isoformat(),
                updated_at=r.updated_at.isoformat(),
            )
            for r in page.items
            # the rule of every path that hands a memory on (search, detail, recall, with or without a
            # friend): a sensitive memory stays out unless it is that friend's own or shared with it (an MCP
            # client is an agent, not the user); a page may then hold fewer
            if reach(scope, r)
        ]
        return ListMemoriesResult(items=items, next_cursor=page.next_cursor)

    # -- forgetting ----------------------------------------------------------------------------------

    async def _forget_memories(self, args: ForgetMemoriesArgs) -> ForgettingItem:
        done = await self.system.forget(self._scope(args.friend_id), args.subject, broad=args.all_matching)
        return _forgetting_item(done)

    async def _seen_forgettings(self, friend_id: str | int | None) -> list[Forgetting]:
        """The user's forgettings a scope sees: all without a friend, else those asked of it or of none."""
        scope = self._scope(friend_id)
        found = await self.system.forgettings(self.user_id)
        return found if scope.friend_id is None else [f for f in found if f.friend_id in (None, scope.friend_id)]

    async def _list_forgotten(self, args: ListForgottenArgs) -> ListForgottenResult:
        return ListForgottenResult(items=[_forgetting_item(f) for f in await self._seen_forgettings(args.friend_id)])

    async def _unforget(self, args: UnforgetArgs) -> ForgettingItem:
        scope = self._scope(args.friend_id)
        found = await self.system.forgettings(self.user_id)
        if args.key is not None:
            target = next((f for f in found if f.key == args.key), None)
            if target is None:
                raise McpToolError(f"not found: the user has no forgetting {args.key!r}; list_forgotten shows the keys")
            if target.undone_at is not None:
                raise McpToolError(f"forgetting {args.key!r} was undone already ({target.undone_at.isoformat()})")
            if target.friend_id is not None and target.friend_id != scope.friend_id:
                where = "a friend undoes only what was asked of it or of none"
                if scope.friend_id is None:
                    where = f"pass friend_id {target.friend_id!r} to undo it in that friend's scope"
                raise McpToolError(f"forgetting {args.key!r} was asked of another AI friend: {where}")
        else:
            seen = [f for f in await self._seen_forgettings(args.friend_id) if f.undone_at is None]
            if scope.friend_id is None:  # no friend named: only what was asked of none
                seen = [f for f in seen if f.friend_id is None]
            if not seen:
                raise McpToolError("not found: nothing forgotten to undo in this scope; list_forgotten shows the keys")
            target = seen[0]
        return _forgetting_item(await self.system.unforget(self.user_id, key=target.key))

    # -- evidence ------------------------------------------------------------------------------------

    async def _evidence(self, args: MessagesListArgs | LexicalSearchArgs | SemanticSearchArgs | NeighborsArgs) -> Any:
        name = next(n for n, t in MCP_TOOLS.items() if t.args is type(args))
        box = self.system.evidence_toolbox(self._scope(args.friend_id))
        out: Any = await box.call(name, args.model_dump(exclude={"friend_id"}, exclude_unset=True))
        if not out.success:
            raise McpToolError(out.message or f"{name} failed; change the arguments and try again")
        return out


def _forgetting_item(done: Forgetting) -> ForgettingItem:
    """A forgetting as the client reads it (memory summaries neutralised: they reach a model)."""
    return ForgettingItem(
        key=done.key,
        friend_id=done.friend_id,
        subject=neutralize(done.subject),
        memories=[
            ForgottenItem(
                memory_key=m.memory_key,
                memory_type=m.memory_type,
                summary=neutralize(m.summary),
                was_active=m.was_active,
            )
            for m in done.memories
        ],
        message_ids=list(done.message_ids),
        at=done.at.isoformat(),
        undone_at=done.undone_at.isoformat() if done.undone_at else None,
    )


def _check_size(content: str | None, metadata: dict[str, Any] | None) -> None:
    """Refuse a content or metadata a memory cannot hold, with what to do (a client's text is never cut)."""
    if metadata is not None and len(json.dumps(metadata, ensure_ascii=False)) > MAX_METADATA_CHARS:
        raise McpToolError(f"metadata is longer than {MAX_METADATA_CHARS} characters as JSON; keep it short")
    size = len(content.encode("utf-8", "surrogatepass")) if content is not None else 0
    if size > MAX_CONTENT_BYTES:  # the layer's limit is in bytes; its advice (on_oversize) is not for clients
        raise McpToolError(
            f"content is {size} bytes as UTF-8; a memory holds at most {MAX_CONTENT_BYTES}. "
            "Shorten it or split it into several memories"
        )


def _whole_numbers(value: Any) -> Any:
    """``value`` with every float that is a whole number (``5.0``) made an int: JSON Schema counts it as
    an integer, and some clients write every number as a float; a strict validation then takes it."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    return value
