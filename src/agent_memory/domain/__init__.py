"""The project's rules, each stated once: the memory types, who may see a memory, what a question is,
how wide a span is read in full, the recall settings' ranges and how a failure is told.

Every layer reads these. The memory-type table and the per-user recall ranges live in the data layer
(the schema and the stored settings need them, and the data layer imports nothing above it); they are
re-exported here, beside the rules of the layers above.

>>> from agent_memory.domain import MEMORY_TYPES, reach
>>> sorted(t.name for t in MEMORY_TYPES if t.describes_user)
['profile', 'user_preference']
"""

from data_layer import (
    DATED_TYPES,
    DEFAULT_MEMORY_TYPE,
    FRIEND_OWNED_TYPES,
    MEMORY_TYPES,
    PROFILE_TYPES,
    QUESTION_MARK_CLASS,
    QUESTION_MARKS,
    RECALL_BOUNDS,
    Bound,
    MemoryType,
    MemoryTypeSpec,
    ends_as_question,
    memory_type_spec,
)

from ._failures import FailureKind, FailureWords, failure_kind, failure_text
from ._recall import RECALL_RUN_BOUNDS
from ._spans import MAX_LISTED_DAYS, listed_in_full
from ._visibility import (
    RULES,
    SENSITIVE_FIELD,
    SHARE_FIELD,
    Reach,
    reach,
    record_sensitivity,
    sensitivity,
    shared_with,
)

__all__ = [
    "DATED_TYPES",
    "DEFAULT_MEMORY_TYPE",
    "FRIEND_OWNED_TYPES",
    "MAX_LISTED_DAYS",
    "MEMORY_TYPES",
    "PROFILE_TYPES",
    "QUESTION_MARKS",
    "QUESTION_MARK_CLASS",
    "RECALL_BOUNDS",
    "RECALL_RUN_BOUNDS",
    "RULES",
    "SENSITIVE_FIELD",
    "SHARE_FIELD",
    "Bound",
    "FailureKind",
    "FailureWords",
    "MemoryType",
    "MemoryTypeSpec",
    "Reach",
    "ends_as_question",
    "failure_kind",
    "failure_text",
    "listed_in_full",
    "memory_type_spec",
    "reach",
    "record_sensitivity",
    "sensitivity",
    "shared_with",
]
