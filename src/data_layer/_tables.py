"""SQLAlchemy 2 table models. Schema changes go through the Alembic migrations in ``migrations/``.

A keyword row carries its memory's ``user_id`` and is keyed by ``(user_id, memory_id, keyword)``
(no serial id), so every read and write of it stays within one user;
``tool_result_archive`` rows are scoped by ``user_id`` as well.

Every table but the shared synonym vocabulary (:data:`GLOBAL_TABLES`) holds one user's rows: it has
a ``user_id`` column, its primary key, unique keys and indexes lead with it, and its foreign keys carry
it. So PostgreSQL can be distributed by user (Citus ``create_distributed_table(table, 'user_id')``, the
synonyms a reference table) without a schema change, and every statement of a user's rows names one
``user_id``.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
    false,
    func,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from ._memory_types import MEMORY_TYPE_NAMES, memory_type_check
from ._types import JSONType, UTCDateTime, utcnow

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: Identifier columns (user, friend, thread, conversation) hold at most this many characters.
SCOPE_ID_LENGTH = 128
#: Memory keys hold at most this many characters.
MEMORY_KEY_LENGTH = 255
#: External message ids (``chat_messages.external_id``) hold at most this many characters.
EXTERNAL_ID_LENGTH = 255

# SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
BigIntId = BigInteger().with_variant(Integer(), "sqlite")

#: Tables shared by every user: nothing in them belongs to one user (the synonym vocabulary). They have
#: no ``user_id``; distributed, they are reference tables (a whole copy on every node).
GLOBAL_TABLES: frozenset[str] = frozenset({"keyword_synonyms"})


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    #: every mapped class here is declared on one table (no mapping of joins or selects), so its
    #: ``__table__`` is a ``Table`` with ``insert()`` and ``update()``, not any ``FromClause``
    __table__: ClassVar[Table]


class AgentMemoryTable(Base):
    __tablename__ = "agent_memories"
    __table_args__ = (
        UniqueConstraint("user_id", "memory_key"),
        Index("ix_agent_memories_user_active_created", "user_id", "is_active", "created_at"),
        Index("ix_agent_memories_user_friend", "user_id", "friend_id"),
        Index("ix_agent_memories_user_revision", "user_id", "revision"),
        # the memory-type table's names (migration 0011 makes it; a new type needs a revision)
        CheckConstraint(memory_type_check(MEMORY_TYPE_NAMES), name="memory_type"),
    )

    # the key is (user_id, id); the id alone is unique as well (a random UUID)
    user_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(Uuid(), primary_key=True, default=uuid.uuid4)
    memory_key: Mapped[str] = mapped_column(String(MEMORY_KEY_LENGTH), nullable=False)
    friend_id: Mapped[str | None] = mapped_column(String(SCOPE_ID_LENGTH), nullable=True)
    memory_type: Mapped[str] = mapped_column(String(50), nullable=False)
    summary: Mapped[str] = mapped_column(Text, nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    content_metadata: Mapped[dict[str, Any]] = mapped_column(JSONType, nullable=False, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    last_accessed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    access_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    is_active: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    needs_keyword_extraction: Mapped[bool] = mapped_column(
        Boolean, nullable=False, default=True, server_default=false()
    )
    #: The user's index revision of the last change to this row (see ``memory_index_state``).
    revision: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0, server_default=text("0"))


class AgentMemoryKeywordsTable(Base):
    __tablename__ = "agent_memory_keywords"
    __table_args__ = (
        ForeignKeyConstraint(
            ["user_id", "memory_id"],
            ["agent_memories.user_id", "agent_memories.id"],
            name="fk_agent_memory_keywords_user_id_agent_memories",
            ondelete="CASCADE",
        ),
        Index("idx_memory_keywords_user_keyword", "user_id", "keyword"),
    )

    #: The memory's user (the same as ``agent_memories.user_id`` of ``memory_id``).
    user_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    memory_id: Mapped[uuid.UUID] = mapped_column(Uuid(), primary_key=True)
    keyword: Mapped[str] = mapped_column(String(100), primary_key=True)
    # Nullable with defaults (rows written before the defaults existed); readers treat NULL as the default.
    weight: Mapped[float | None] = mapped_column(Float, default=1.0, server_default=text("1.0"))
    extraction_source: Mapped[str | None] = mapped_column(String(20), default="llm", server_default="llm")
    created_at: Mapped[datetime | None] = mapped_column(
        UTCDateTime(), default=utcnow, server_default=func.current_timestamp()
    )


class KeywordSynonymsTable(Base):
    __tablename__ = "keyword_synonyms"
    __table_args__ = (
        UniqueConstraint("keyword", "synonym", name="unique_keyword_synonym"),
        Index("idx_keyword_synonyms_keyword", "keyword"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    keyword: Mapped[str] = mapped_column(String(100), nullable=False)
    synonym: Mapped[str] = mapped_column(String(100), nullable=False)
    similarity_score: Mapped[float | None] = mapped_column(Float, default=0.8, server_default=text("0.8"))


class ChatMessageTable(Base):
    __tablename__ = "chat_messages"
    __table_args__ = (
        Index("ix_chat_messages_user_created", "user_id", "created_at", "id"),
        Index("ix_chat_messages_user_friend_thread", "user_id", "friend_id", "thread_id", "created_at"),
        Index("ix_chat_messages_user_content_hash", "user_id", "content_hash"),
        Index("ux_chat_messages_user_external_id", "user_id", "external_id", unique=True),
        # the messages the session archiver has not archived yet, in the order it reads them
        Index(
            "ix_chat_messages_user_friend_pending",
            "user_id",
            "friend_id",
            "created_at",
            "id",
            sqlite_where=text("archived_at IS NULL"),
            postgresql_where=text("archived_at IS NULL"),
        ),
        # the messages whose search terms are still to be computed (written by a layer without an analyzer)
        Index(
            "ix_chat_messages_user_unanalysed",
            "user_id",
            "id",
            sqlite_where=text("search_terms IS NULL"),
            postgresql_where=text("search_terms IS NULL"),
        ),
    )

    # The key is (user_id, id) on PostgreSQL, with ``id`` from the table's sequence (unique alone). A
    # SQLite file keeps ``id INTEGER PRIMARY KEY``: SQLite numbers rows only in such a column.
    user_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    friend_id: Mapped[str | None] = mapped_column(String(SCOPE_ID_LENGTH), nullable=True)
    thread_id: Mapped[str | None] = mapped_column(String(SCOPE_ID_LENGTH), nullable=True)
    role: Mapped[str] = mapped_column(String(20), nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    #: The first 32 hex digits of the content's SHA-256: finds a message already stored (re-imports).
    content_hash: Mapped[str | None] = mapped_column(String(32), nullable=True)
    #: An id the message has outside this store (an import's ``id``); unique per user when given.
    external_id: Mapped[str | None] = mapped_column(String(EXTERNAL_ID_LENGTH), nullable=True)
    #: When the session archiver turned the message into memories (``None``: not yet; see ``layer.archive_state``).
    archived_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    #: The message's search terms, the analyzer's tokens joined by single spaces (``None``: not analysed
    #: yet). The store's full-text engine indexes them (see :func:`is_engine_object`).
    search_terms: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: How many terms ``search_terms`` holds (BM25's document length).
    search_length: Mapped[int | None] = mapped_column(Integer, nullable=True)


#: ``chat_search_statistics.friend_key`` of a user's shared messages (``friend_id`` null; no friend id is
#: empty): a key column cannot hold NULL.
SHARED_FRIEND_KEY = ""


class ChatSearchStatisticsTable(Base):
    """BM25's collection statistics of each chat: how many of its messages are analysed and their total
    length. Kept by triggers on ``chat_messages`` (migration ``0009_message_search_engine``) in the
    transaction of every insert, analysis and delete, so a search sums a few rows instead of scanning
    the scope's messages. A deleted chat's row stays, at zero."""

    __tablename__ = "chat_search_statistics"

    user_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    #: The chat's ``friend_id``, or :data:`SHARED_FRIEND_KEY` for the user's shared messages.
    friend_key: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    #: The chat's analysed messages (``search_length`` not null).
    messages: Mapped[int] = mapped_column(BigInteger, nullable=False)
    #: The sum of their ``search_length``.
    total_length: Mapped[int] = mapped_column(BigInteger, nullable=False)


#: The full-text engine over ``chat_messages.search_terms``, made by the migrations and not by the models
#: (neither backend's engine has a portable model): on SQLite the FTS5 table ``chat_messages_fts`` (and
#: the shadow tables FTS5 keeps, named after it) fed by triggers on ``chat_messages``; on PostgreSQL the
#: generated ``tsvector`` column ``search_vector`` and its GIN index on ``(user_id, search_vector)``.
MESSAGE_FTS_TABLE = "chat_messages_fts"
MESSAGE_VECTOR_COLUMN = "search_vector"
MESSAGE_VECTOR_INDEX = "ix_chat_messages_user_search_vector"


#: The full-text engine over memories (migration ``0010_memory_search_engine``): on SQLite the FTS5 table
#: ``agent_memories_fts(owner, terms, keywords, buckets)``, rowid = ``agent_memory_search_index.row_id``,
#: fed by triggers; on PostgreSQL the generated ``tsvector`` columns of ``agent_memory_search_index``
#: (tokens, keyword terms, bucket terms) and their GIN index. Both: the index of ``agent_memories`` by
#: ``(user_id, metadata session_id)`` (an expression index, which the models cannot compare).
MEMORY_FTS_TABLE = "agent_memories_fts"
MEMORY_VECTOR_COLUMNS = ("search_vector", "keyword_vector", "bucket_vector")
MEMORY_VECTOR_INDEX = "ix_agent_memory_search_index_user_vectors"
MEMORY_SESSION_INDEX = "ix_agent_memories_user_session"
_ENGINE_TABLES = (MESSAGE_FTS_TABLE, MEMORY_FTS_TABLE)


def is_engine_object(name: str | None, kind: str) -> bool:
    """Whether a reflected object is part of a search engine (the model comparison leaves it out)."""
    if name is None:
        return False
    if kind == "table":
        return any(name == t or name.startswith(t + "_") for t in _ENGINE_TABLES)
    if kind == "column":
        return name == MESSAGE_VECTOR_COLUMN or name in MEMORY_VECTOR_COLUMNS
    if kind == "index":
        return name in (MESSAGE_VECTOR_INDEX, MEMORY_VECTOR_INDEX, MEMORY_SESSION_INDEX)
    return False


class ToolResultArchiveTable(Base):
    __tablename__ = "tool_result_archive"
    __table_args__ = (
        Index("ix_tool_result_archive_user_created", "user_id", "created_at"),
        Index("ix_tool_result_archive_user_conversation", "user_id", "conversation_id"),
        Index("ix_tool_result_archive_user_thread", "user_id", "thread_id"),
    )

    user_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    conversation_id: Mapped[str | None] = mapped_column(String(SCOPE_ID_LENGTH))
    thread_id: Mapped[str | None] = mapped_column(String(SCOPE_ID_LENGTH))
    tool_name: Mapped[str] = mapped_column(String(100), nullable=False)
    tool_input: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    query_summary: Mapped[str] = mapped_column(String(500), nullable=False, default="")
    result_summary: Mapped[str] = mapped_column(Text, nullable=False, default="")
    result_full: Mapped[str] = mapped_column(Text, nullable=False)
    result_length: Mapped[int] = mapped_column(Integer, nullable=False)
    sources: Mapped[list[str] | None] = mapped_column(JSONType, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class SystemSettingsTable(Base):
    __tablename__ = "system_settings"

    user_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSONType, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class MemoryIndexStateTable(Base):
    """One row per user: a counter bumped in every transaction that changes the user's memories.

    Search indexes compare it with the revision they were built at, so a write made by any process is
    seen by the next search. The row with ``user_id = ''`` counts changes to the shared synonyms.
    """

    __tablename__ = "memory_index_state"

    user_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    revision: Mapped[int] = mapped_column(BigInteger, nullable=False)
    hard_delete_revision: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class AgentMemorySearchIndexTable(Base):
    """What the search layer computed for a memory (analysed tokens, an embedding), stored for reuse."""

    __tablename__ = "agent_memory_search_index"
    __table_args__ = (
        ForeignKeyConstraint(
            ["user_id", "memory_id"],
            ["agent_memories.user_id", "agent_memories.id"],
            name="fk_agent_memory_search_index_user_id_agent_memories",
            ondelete="CASCADE",
        ),
        Index("ux_agent_memory_search_index_user_row", "user_id", "row_id", unique=True),
        # the rows whose keyword terms are still to be computed (stored before the engine, or by a layer
        # whose analyzer gives none)
        Index(
            "ix_agent_memory_search_index_user_unanalysed",
            "user_id",
            "memory_id",
            sqlite_where=text("keyword_terms IS NULL"),
            postgresql_where=text("keyword_terms IS NULL"),
        ),
    )

    #: The memory's user (the same as ``agent_memories.user_id`` of ``memory_id``).
    user_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    memory_id: Mapped[uuid.UUID] = mapped_column(Uuid(), primary_key=True)
    analyzer: Mapped[str] = mapped_column(String(64), nullable=False)
    tokens: Mapped[str] = mapped_column(Text, nullable=False)
    embedder: Mapped[str | None] = mapped_column(String(128), nullable=True)
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    #: The search terms of the memory's stored keywords, space-joined (``None``: not analysed yet).
    keyword_terms: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: The bucket terms of its embedding, space-joined (``None`` or ``""``: none).
    vector_terms: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: The row's stable number in the engine (FTS5's rowid on SQLite; a sequence on PostgreSQL).
    row_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


#: A term column: compared and sorted by code point on both backends (PostgreSQL's "C" collation), so a
#: prefix is a key range.
TermText = Text().with_variant(Text(collation="C"), "postgresql")


class MemorySearchStatisticsTable(Base):
    """BM25's collection statistics of a user's memories: how many active memories are analysed and their
    total length (terms). Kept by triggers (migration ``0010_memory_search_engine``) in the writing
    transaction; a user without one has none."""

    __tablename__ = "memory_search_statistics"

    user_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    memories: Mapped[int] = mapped_column(BigInteger, nullable=False)
    total_length: Mapped[int] = mapped_column(BigInteger, nullable=False)


class MemoryTermStatisticsTable(Base):
    """Each token's document frequency over a user's active analysed memories (keyword terms are not
    counted), kept by the same triggers; a term no memory holds has no row."""

    __tablename__ = "memory_term_statistics"

    user_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    term: Mapped[str] = mapped_column(TermText, primary_key=True)
    memories: Mapped[int] = mapped_column(BigInteger, nullable=False)


class SessionArchiveStateTable(Base):
    """The session archiver's latest work in each (user, AI friend) chat: the largest message id it
    archived and when. Progress itself is each message's ``archived_at`` (sessions are cut by time, so
    what was archived is no prefix of the ids); this row is written in the same transaction.

    ``friend_key`` is the friend id, or "" for messages without a friend (a primary key column cannot
    be null). Memories are written with deterministic keys, so a run that stops before its messages are
    marked is simply repeated: nothing is duplicated, and the next run reads what is still unmarked.
    """

    __tablename__ = "session_archive_state"

    user_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    friend_key: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    last_message_id: Mapped[int] = mapped_column(BigInteger, nullable=False)
    last_message_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class AIFriendTable(Base):
    """A user's AI friends (the web chat): a name and the system prompt the friend talks with.

    ``friend_id`` is the id that scopes the friend's chat messages and event memories (``friend_id``
    columns elsewhere); deleting a friend removes those in the same transaction (``layer.friends``).
    """

    __tablename__ = "ai_friends"
    __table_args__ = (Index("ix_ai_friends_user_created", "user_id", "created_at"),)

    user_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    friend_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    system_prompt: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
