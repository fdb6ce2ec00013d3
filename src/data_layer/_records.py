"""Typed records the repositories return. They are plain frozen dataclasses, detached from any session."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, Protocol, TypeVar

T = TypeVar("T")


MessageRole = Literal["user", "assistant", "system", "tool"]
MESSAGE_ROLES: tuple[MessageRole, ...] = ("user", "assistant", "system", "tool")

KeywordSource = Literal["llm", "user_tag", "system"]
KEYWORD_SOURCES: tuple[KeywordSource, ...] = ("llm", "user_tag", "system")


#: The metadata field naming the conversation session a memory was said in. Memories of one session
#: (of one AI friend) are neighbours to the search: a turn can be found through the turns around it.
#: A memory without it stands alone. The session archiver sets it on the turns and gists it writes.
SESSION_FIELD = "session_id"
#: The metadata field naming who said a memory, in a conversation of named people (an imported chat,
#: a group, a dialogue between two people). A question that names one of a user's speakers ("what
#: does Joanna do while she writes?") weighs what the others said less: it asks about that person.
SPEAKER_FIELD = "speaker"


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One stored memory, as read from ``agent_memories``."""

    id: uuid.UUID
    memory_key: str
    user_id: str
    friend_id: str | None
    memory_type: str
    summary: str
    content: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None
    access_count: int
    is_active: bool
    needs_keyword_extraction: bool

    @property
    def truncated(self) -> bool:
        """True when the content was cut to the size limit on write (see ``metadata['truncation']``)."""
        return "truncation" in self.metadata


@dataclass(frozen=True, slots=True)
class KeywordInput:
    """A keyword to attach to a memory. ``weight`` is in 0-1."""

    keyword: str
    weight: float = 1.0
    source: KeywordSource = "system"


@dataclass(frozen=True, slots=True)
class KeywordRecord:
    """A keyword attached to a memory (``agent_memory_keywords``)."""

    memory_id: uuid.UUID
    keyword: str
    weight: float
    extraction_source: str
    created_at: datetime | None


@dataclass(frozen=True, slots=True)
class SynonymRecord:
    """A row of ``keyword_synonyms``: ``synonym`` can stand for ``keyword`` with ``similarity_score``."""

    keyword: str
    synonym: str
    similarity_score: float


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    """A validated memory ready to be written (what keyword providers see)."""

    memory_key: str
    user_id: str
    friend_id: str | None
    memory_type: str
    summary: str
    content: str
    metadata: dict[str, Any]
    created_at: datetime
    keywords: tuple[KeywordInput, ...] = ()


@dataclass(frozen=True, slots=True)
class ExpectedContent:
    """What an edit read before it decided (``upsert(expect=...)``): the content of the user's active memory
    of the key, or ``None`` when there was none. The edit writes only while that still holds."""

    content: str | None


@dataclass(frozen=True, slots=True)
class UpsertResult:
    """What ``upsert`` did: the stored record and whether it was created (``False``: replaced)."""

    record: MemoryRecord
    created: bool


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """One row of ``chat_messages``. Ids grow with insertion; listings order by ``(created_at, id)``."""

    id: int
    user_id: str
    friend_id: str | None
    thread_id: str | None
    role: str
    content: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ArchiveRecord:
    """An archived tool result (``tool_result_archive``)."""

    uuid: str
    user_id: str
    conversation_id: str | None
    thread_id: str | None
    tool_name: str
    tool_input: dict[str, Any] | None
    query_summary: str
    result_summary: str
    result_full: str
    result_length: int
    sources: list[str] | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """A page of a listing. Pass ``next_cursor`` back to get the next page; ``None`` means the end."""

    items: Sequence[T]
    next_cursor: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryAnalysis:
    """What a :class:`MemoryAnalyzer` computed for one memory; stored with the memory, in its transaction.

    ``tokens`` are the analysed search terms joined by spaces; ``embedding`` is a float32 vector as
    bytes, tagged with the ``embedder`` that made it; ``vector_terms`` the bucket terms of that vector,
    space-joined (``None``: none), which the store's engine indexes beside the tokens.
    """

    analyzer: str
    tokens: str
    keywords: tuple[KeywordInput, ...] = ()
    embedder: str | None = None
    embedding: bytes | None = None
    vector_terms: str | None = None


class MemoryAnalyzer(Protocol):
    """Computes keywords, search tokens and optionally an embedding for memories about to be written."""

    @property
    def name(self) -> str:
        """Identifies the analysis; stored rows analysed under another name are re-analysed."""
        ...

    async def analyze(self, drafts: Sequence[MemoryDraft]) -> list[MemoryAnalysis]:
        """One analysis per draft, in order (runs before the write transaction opens)."""
        ...


@dataclass(frozen=True, slots=True)
class IndexState:
    """Change counters: a search index built at ``revision`` is current while the counters are unchanged."""

    revision: int
    hard_delete_revision: int
    vocabulary_revision: int


@dataclass(frozen=True, slots=True)
class IndexRow:
    """What a search index keeps of a memory (no content: that is fetched for the results only)."""

    id: uuid.UUID
    memory_key: str
    friend_id: str | None
    memory_type: str
    created_at: datetime
    is_active: bool
    revision: int
    analyzer: str | None
    tokens: str | None
    embedder: str | None
    embedding: bytes | None
    keywords: tuple[tuple[str, float], ...]
    #: the conversation session the memory belongs to (metadata ``session_id``), if any
    session: str | None = None
    #: who said it (metadata ``speaker``), if given
    speaker: str | None = None
    #: whether the content asks something (a "?" ending a sentence, or "？"): in a conversation, the next
    #: turn answers it
    asks: bool = False
    #: the search terms of its stored keywords, space-joined (``None``: not analysed yet)
    keyword_terms: str | None = None
