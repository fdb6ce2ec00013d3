"""Argument and result models of the MCP tools: precise JSON schemas, unknown keys refused.

The in-process tools' models are reused where such a tool exists (``recall_memory``,
``search_memories`` / ``get_memory_detail``, the evidence tools); the MCP versions forbid
unknown keys (a ``user_id`` a client sends must be refused, not ignored: the server's configuration
binds the user) and add an optional ``friend_id`` that narrows a read to what one AI friend may see.
``add_memory``, ``update_memory``, ``delete_memory`` and ``list_memories`` have their own models,
shaped like the data layer's arguments; so have ``forget_memories``, ``list_forgotten`` and ``unforget``,
shaped like :class:`agent_memory.forgetting.Forgetting`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from data_layer import MAX_CONTENT_BYTES, MemoryType

from ..domain import DEFAULT_MEMORY_TYPE, FRIEND_OWNED_TYPES, MEMORY_TYPES, PROFILE_TYPES
from ..evidence import LexicalSearchInput, MessagesListInput, NeighborsInput, SemanticSearchInput
from ..forgetting import MAX_SUBJECT_CHARS
from ..history import AwareTime
from ..search import MAX_QUERY_CHARS
from ..tools import GetMemoryDetailInput, SearchMemoriesInput

#: A memory holds at most 100 KB (UTF-8, ``MAX_CONTENT_BYTES``); a longer content is refused (not cut) here.
MAX_CONTENT_CHARS = MAX_CONTENT_BYTES
MAX_SUMMARY_CHARS = 2000
MAX_KEY_CHARS = 255
MAX_ID_CHARS = 128
MAX_PAGE = 100
MAX_TAGS = 20
#: The metadata of one memory, as JSON, at most this many characters.
MAX_METADATA_CHARS = 16 * 1024

if TYPE_CHECKING:  # a type checker takes no Literal built at run time: to it a memory type's name is a str
    MemoryTypeName = str
else:  # a Literal of the memory-type table's names: a client reads them as the schema's enum
    MemoryTypeName = Literal[tuple(t.value for t in MemoryType)]
#: The memory types as a client reads them in ``add_memory``'s schema (from the memory-type table).
_TYPES_TOLD = "; ".join(
    [
        f"{', '.join(sorted(PROFILE_TYPES))}: about the user, shared by every AI friend",
        f"{', '.join(FRIEND_OWNED_TYPES)}: something that happened in one friend's conversation (needs friend_id)",
        f"{', '.join(t.name for t in MEMORY_TYPES if t.owner == 'any')}: either",
    ]
)
IdText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
#: An AI friend's id: a string or an integer (stored as text: ``7`` and ``"7"`` are one friend).
FriendId = IdText | int
KeyText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_KEY_CHARS)]
Tag = Annotated[str, StringConstraints(min_length=1, max_length=100)]

_FRIEND_VIEW = (
    "Optional AI friend id: read only what this friend may see (its own memories or messages plus the "
    "shared ones, e.g. profiles). Omit it to read all of the user's data."
)


class _Forbid(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchMemoriesArgs(SearchMemoriesInput):
    """search_memories 输入 (the recall tool's input) with an optional friend view."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        ...,
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="搜索查询，可以是自然语言描述或关键词。例如：'用户之前配置的数据库参数'",
    )
    keywords: list[Tag] | None = Field(
        default=None,
        max_length=MAX_TAGS,
        description="可选的精确关键词列表，用于精确过滤。例如：['database', 'config']",
    )
    memory_types: list[MemoryTypeName] | None = Field(
        default=None, min_length=1, description="按记忆类型过滤，如 ['user_preference', 'command_output', 'general']"
    )
    friend_id: FriendId | None = Field(None, description=_FRIEND_VIEW)


class GetMemoryDetailArgs(GetMemoryDetailInput):
    """get_memory_detail 输入 (the recall tool's input) with an optional friend view."""

    model_config = ConfigDict(extra="forbid")

    memory_key: KeyText = Field(..., description="记忆的唯一标识符（从 search_memories 结果中获取）")
    friend_id: FriendId | None = Field(None, description=_FRIEND_VIEW)


class AddMemoryArgs(_Forbid):
    """add_memory: store one memory of the user."""

    content: str = Field(
        ..., min_length=1, max_length=MAX_CONTENT_CHARS, description="The memory's text (at most 100 KB as UTF-8)"
    )
    memory_type: MemoryTypeName = Field(DEFAULT_MEMORY_TYPE, description=_TYPES_TOLD)
    friend_id: FriendId | None = Field(
        None, description="The AI friend the memory belongs to (required for an event); omit: shared by all friends"
    )
    memory_key: KeyText | None = Field(
        None, description="Unique key of letters, digits, '_' and '-'; omitted: the server makes one"
    )
    summary: str | None = Field(
        None, min_length=1, max_length=MAX_SUMMARY_CHARS, description="One-line summary (default: the first sentence)"
    )
    expires_at: AwareTime | None = Field(
        None, description="ISO-8601 time with a zone after which the memory is no longer current; omit: never"
    )
    metadata: dict[str, Any] | None = Field(
        None,
        description='JSON object kept with the memory, e.g. {"topic": "职业"} for a profile item, or '
        '{"session_id": "chat-7", "speaker": "Joanna"} for a turn of a conversation (turns of one session are '
        "searched with their neighbours; a question naming one speaker weighs the others' words less)",
    )
    keywords: list[Tag] | None = Field(None, max_length=MAX_TAGS, description="Keyword tags searches match exactly")
    replace: bool = Field(False, description="Replace the user's memory of this memory_key if it exists")


class MemoryHistoryArgs(_Forbid):
    """memory_history: a profile item's values over time."""

    memory_key: KeyText = Field(..., description="The item's key (profile-residence), or a key of one of its versions")


class MemoryVersionItem(BaseModel):
    """One version of an item."""

    memory_key: str
    content: str
    value: str
    valid_from: str
    valid_to: str | None = Field(None, description="null: still holds")
    superseded_by: str | None = Field(None, description="The key of the version that replaced it")
    evidence_ids: list[int] = Field(default_factory=list, description="The chat messages it was drawn from")
    current: bool


class MemoryHistoryResult(BaseModel):
    """An item's versions, oldest first; the last is current unless the item was deleted."""

    memory_key: str
    versions: list[MemoryVersionItem]


class AddMemoryResult(BaseModel):
    """What add_memory stored."""

    memory_key: str
    memory_type: str
    friend_id: str | None = Field(None, description="null: shared by every AI friend")
    summary: str
    created_at: str
    created: bool = Field(..., description="true: a new memory; false: an existing one was replaced")


_OWNER_SCOPE = (
    "The AI friend whose scope the change is made in: a friend's memory (an event) is changed only in that "
    "friend's scope; a shared memory (a profile) in any scope or none"
)


class UpdateMemoryArgs(_Forbid):
    """update_memory: change the content, summary, metadata or keyword tags of one memory of the user."""

    memory_key: KeyText = Field(..., description="The memory to change (from search_memories or list_memories)")
    friend_id: FriendId | None = Field(None, description=_OWNER_SCOPE)
    content: str | None = Field(
        None, min_length=1, max_length=MAX_CONTENT_CHARS, description="The new text (omit: unchanged)"
    )
    summary: str | None = Field(
        None, min_length=1, max_length=MAX_SUMMARY_CHARS, description="The new one-line summary (omit: unchanged)"
    )
    metadata: dict[str, Any] | None = Field(None, description="The new metadata object (omit: unchanged)")
    keywords: list[Tag] | None = Field(None, max_length=MAX_TAGS, description="The new keyword tags (omit: unchanged)")


class UpdateMemoryResult(BaseModel):
    """What update_memory stored."""

    memory_key: str
    memory_type: str
    friend_id: str | None = Field(None, description="null: shared by every AI friend")
    summary: str
    updated_at: str


class DeleteMemoryArgs(_Forbid):
    """delete_memory: forget one memory of the user."""

    memory_key: KeyText = Field(..., description="The memory to delete (from search_memories or list_memories)")
    friend_id: FriendId | None = Field(None, description=_OWNER_SCOPE)


class DeleteMemoryResult(BaseModel):
    """What delete_memory did."""

    memory_key: str
    deleted: bool = Field(..., description="true: the memory no longer reaches any search or recall")


class ListMemoriesArgs(_Forbid):
    """list_memories: the user's memories, newest first, a page at a time."""

    memory_types: list[MemoryTypeName] | None = Field(None, min_length=1, description="Only these memory types")
    friend_id: FriendId | None = Field(None, description=_FRIEND_VIEW)
    include_shared: bool = Field(
        True, description="With friend_id: also the shared memories (profiles); false: only that friend's own"
    )
    limit: int = Field(20, ge=1, le=MAX_PAGE, description=f"Memories per page, 1-{MAX_PAGE}")
    cursor: str | None = Field(
        None, min_length=1, max_length=1000, description="next_cursor of the previous page; omit for the first page"
    )


class MemoryListItem(BaseModel):
    """One memory in a list (the full content: get_memory_detail)."""

    memory_key: str
    memory_type: str
    friend_id: str | None = Field(None, description="null: shared by every AI friend")
    summary: str
    content_preview: str = Field(..., description="The content, or its first 200 characters and ... when longer")
    created_at: str
    updated_at: str


class ListMemoriesResult(BaseModel):
    """One page of list_memories."""

    items: list[MemoryListItem] = Field(default_factory=list)
    next_cursor: str | None = Field(None, description="Pass as cursor for the next page; null: no more")


class MessagesListArgs(MessagesListInput):
    """messages_list 输入 (the evidence tool's input) with an optional friend view."""

    friend_id: FriendId | None = Field(None, description=_FRIEND_VIEW)


class LexicalSearchArgs(LexicalSearchInput):
    """lexical_search 输入 (the evidence tool's input) with an optional friend view."""

    friend_id: FriendId | None = Field(None, description=_FRIEND_VIEW)


class SemanticSearchArgs(SemanticSearchInput):
    """semantic_search 输入 (the evidence tool's input) with an optional friend view."""

    friend_id: FriendId | None = Field(None, description=_FRIEND_VIEW)


class NeighborsArgs(NeighborsInput):
    """neighbors 输入 (the evidence tool's input) with an optional friend view."""

    friend_id: FriendId | None = Field(None, description=_FRIEND_VIEW)


class ForgetMemoriesArgs(_Forbid):
    """forget_memories: forget what the user told about a subject, as if the user asked in the chat."""

    subject: str = Field(
        ...,
        min_length=1,
        max_length=MAX_SUBJECT_CHARS,
        description="What to forget, in the user's words, e.g. '前任' or 'my ex'",
    )
    friend_id: FriendId | None = Field(
        None,
        description="The AI friend the user asked (its events and the shared profile items are forgotten); omit: "
        "what any of the user's memories hold about it, every friend's events too",
    )
    all_matching: bool = Field(
        False,
        description="Forget even when the subject matches most of the memories in the scope (refused otherwise: "
        "name the subject more precisely first)",
    )


class ListForgottenArgs(_Forbid):
    """list_forgotten: what the user asked to forget, newest first."""

    friend_id: FriendId | None = Field(
        None, description="Only what was forgotten in this AI friend's scope or in none; omit: all"
    )


class UnforgetArgs(_Forbid):
    """unforget: undo one forgetting."""

    key: KeyText | None = Field(
        None,
        description="The forgetting to undo (from list_forgotten); omit: the newest "
        "one not undone that this scope may undo",
    )
    friend_id: FriendId | None = Field(
        None,
        description="The AI friend whose scope the undo is made in: a forgetting asked of a friend is undone only in "
        "that friend's scope; one asked of none in any",
    )


class ForgottenItem(BaseModel):
    """A memory a forgetting set aside."""

    memory_key: str
    memory_type: str
    summary: str
    was_active: bool = Field(..., description="false: it was an earlier version (history) already")


class ForgettingItem(BaseModel):
    """One forgetting: what it was about, what it set aside, when, whether it was undone."""

    key: str = Field(..., description="Pass to unforget to undo it")
    friend_id: str | None = Field(None, description="The AI friend it was asked of; null: none")
    subject: str
    memories: list[ForgottenItem]
    message_ids: list[int] = Field(..., description="Chat messages kept out of evidence recall")
    at: str
    undone_at: str | None = Field(None, description="null: still forgotten")


class ListForgottenResult(BaseModel):
    """The user's forgettings, newest first."""

    items: list[ForgettingItem] = Field(default_factory=list)
