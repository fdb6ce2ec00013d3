"""Storage for agent-fusion-memory: SQLAlchemy 2 async on SQLite (embedded) or PostgreSQL.

>>> from data_layer import AgentFusionDataLayer, upgrade
>>> await upgrade("sqlite+aiosqlite:///memory.db")  # doctest: +SKIP
>>> async with AgentFusionDataLayer("sqlite+aiosqlite:///memory.db") as layer:  # doctest: +SKIP
...     await layer.memory.add(user_id="u1", memory_key="pref-movies", content="喜欢科幻电影", memory_type="profile")
"""

from ._archive_repo import ArchiveRepository
from ._archive_state_repo import ArchiveStateRepository
from ._chat_locks import ChatLocks
from ._engine import Backend, Database, normalize_url
from ._erase import GLOBAL_TABLES, UserErasure
from ._errors import (
    AgentMemoryError,
    DataLayerError,
    DuplicateError,
    DuplicateMemoryKeyError,
    InvalidInputError,
    MemoryNotFoundError,
    MessageNotFoundError,
    MissingPackageError,
    NotFoundError,
    StaleMemoryError,
    StorageError,
    StorageFailure,
    UnsupportedDatabaseURLError,
)
from ._facade import AgentFusionDataLayer
from ._fold import FOLD_VERSION, fold_text
from ._friend_repo import FriendDeletion, FriendRecord, FriendRepository
from ._memory_engine import KeywordTermsAnalyzer
from ._memory_reads import MAX_GET_MANY
from ._memory_repo import ChangeListener, MemoryRepository, NewMemory
from ._memory_search import MemoryCollection, PendingVector, SessionTurn
from ._memory_types import (
    DATED_TYPES,
    DEFAULT_MEMORY_TYPE,
    FRIEND_OWNED_TYPES,
    MEMORY_TYPES,
    PROFILE_TYPES,
    MemoryType,
    MemoryTypeSpec,
    memory_type_spec,
)
from ._message_repo import MessageRepository, NewMessage
from ._message_search import MessageAnalyzer, PhraseFilter, TermCandidate, TermStatistics
from ._migrate import MIGRATIONS_DIR, current_revision, downgrade, head_revision, schema_differences, upgrade
from ._questions import QUESTION_MARK_CLASS, QUESTION_MARKS, ends_as_question
from ._records import (
    SESSION_FIELD,
    SPEAKER_FIELD,
    ArchiveRecord,
    ExpectedContent,
    IndexRow,
    IndexState,
    KeywordInput,
    KeywordRecord,
    KeywordSource,
    MemoryAnalysis,
    MemoryAnalyzer,
    MemoryDraft,
    MemoryRecord,
    MessageRecord,
    MessageRole,
    Page,
    SynonymRecord,
    UpsertResult,
)
from ._scope import Scope
from ._settings_repo import SettingsRepository
from ._storable import MAX_METADATA_BYTES, MAX_METADATA_DEPTH, storable_copy, storable_json, storable_text
from ._tables import MEMORY_KEY_LENGTH
from ._types import utcnow
from ._user_settings import RECALL_BOUNDS, Bound, ChatSettings, MemoryRecallSettings, UserSettings
from ._validation import MAX_CONTENT_BYTES, MAX_MESSAGE_BYTES, has_visible_text, scope_id, truncate_utf8
from ._validation import memory_type as check_memory_type

__all__ = [
    "DATED_TYPES",
    "DEFAULT_MEMORY_TYPE",
    "FOLD_VERSION",
    "FRIEND_OWNED_TYPES",
    "GLOBAL_TABLES",
    "MAX_CONTENT_BYTES",
    "MAX_GET_MANY",
    "MAX_MESSAGE_BYTES",
    "MAX_METADATA_BYTES",
    "MAX_METADATA_DEPTH",
    "MEMORY_KEY_LENGTH",
    "MEMORY_TYPES",
    "MIGRATIONS_DIR",
    "PROFILE_TYPES",
    "QUESTION_MARKS",
    "QUESTION_MARK_CLASS",
    "RECALL_BOUNDS",
    "SESSION_FIELD",
    "SPEAKER_FIELD",
    "AgentFusionDataLayer",
    "AgentMemoryError",
    "ArchiveRecord",
    "ArchiveRepository",
    "ArchiveStateRepository",
    "Backend",
    "Bound",
    "ChangeListener",
    "ChatLocks",
    "ChatSettings",
    "DataLayerError",
    "Database",
    "DuplicateError",
    "DuplicateMemoryKeyError",
    "ExpectedContent",
    "FriendDeletion",
    "FriendRecord",
    "FriendRepository",
    "IndexRow",
    "IndexState",
    "InvalidInputError",
    "KeywordInput",
    "KeywordRecord",
    "KeywordSource",
    "KeywordTermsAnalyzer",
    "MemoryAnalysis",
    "MemoryAnalyzer",
    "MemoryCollection",
    "MemoryDraft",
    "MemoryNotFoundError",
    "MemoryRecallSettings",
    "MemoryRecord",
    "MemoryRepository",
    "MemoryType",
    "MemoryTypeSpec",
    "MessageAnalyzer",
    "MessageNotFoundError",
    "MessageRecord",
    "MessageRepository",
    "MessageRole",
    "MissingPackageError",
    "NewMemory",
    "NewMessage",
    "NotFoundError",
    "Page",
    "PendingVector",
    "PhraseFilter",
    "Scope",
    "SessionTurn",
    "SettingsRepository",
    "StaleMemoryError",
    "StorageError",
    "StorageFailure",
    "SynonymRecord",
    "TermCandidate",
    "TermStatistics",
    "UnsupportedDatabaseURLError",
    "UpsertResult",
    "UserErasure",
    "UserSettings",
    "check_memory_type",
    "current_revision",
    "downgrade",
    "ends_as_question",
    "fold_text",
    "has_visible_text",
    "head_revision",
    "memory_type_spec",
    "normalize_url",
    "schema_differences",
    "scope_id",
    "storable_copy",
    "storable_json",
    "storable_text",
    "truncate_utf8",
    "upgrade",
    "utcnow",
]
