"""The memory types: one table every layer reads (storage, search, keywords, recall, web, MCP, prompts).

Each row says what a type is for and how each layer treats it:

- ``owner``: ``"user"`` for what describes the user and is shared by every AI friend (refused with a
  ``friend_id``); ``"friend"`` for what happened in one friend's conversation (needs the friend, unless
  written ``shared=True`` on purpose); ``"any"`` for either;
- ``describes_user``: the user's profile, which every friend sees in a recall and whose stated topics the
  write path files it under; the other types are what happened or what a tool said;
- ``priority``: the ranker's weight of the type (0-1; user preferences and command outputs over the rest);
- ``cue_words``: words (with their weight) every memory of the type gets as keywords, so a search for
  "偏好" or "command" finds them;
- ``dated``: a record of what happened on a day: the recall lists these, by their time alone, for a
  message telling how the user's last days went;
- ``listed``: shown in the memory page's sections (a conversation turn is the archive's raw material and
  is found by a search only).

The schema holds the names too: ``agent_memories.memory_type`` has a CHECK constraint built by
:func:`memory_type_check` from :data:`MEMORY_TYPE_NAMES`. A type added here needs a migration that
replaces the constraint (the migration test compares the migrated schema with this table).

>>> [t.name for t in MEMORY_TYPES if t.describes_user]
['user_preference', 'profile']
>>> memory_type_spec("event").owner, FRIEND_OWNED_TYPES
('friend', ('event',))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

Owner = Literal["user", "friend", "any"]


class MemoryType(StrEnum):
    """The kinds of memory the store accepts (their rules: :data:`MEMORY_TYPES`).

    ``profile`` memories describe the user and are shared by every AI friend; ``event`` memories
    record what happened in one friend's conversation and carry that ``friend_id``.
    """

    USER_PREFERENCE = "user_preference"
    COMMAND_OUTPUT = "command_output"
    GENERAL = "general"
    PROFILE = "profile"
    EVENT = "event"
    TOOL_RESULT = "tool_result"
    CONVERSATION = "conversation"


@dataclass(frozen=True, slots=True)
class MemoryTypeSpec:
    """One row of :data:`MEMORY_TYPES` (the fields are described in the module docs)."""

    name: str
    owner: Owner
    describes_user: bool
    priority: float
    cue_words: tuple[tuple[str, float], ...] = ()
    dated: bool = False
    listed: bool = True


#: Every memory type, in the order of :class:`MemoryType` (the order error messages list them in).
MEMORY_TYPES: tuple[MemoryTypeSpec, ...] = (
    MemoryTypeSpec("user_preference", "user", True, 1.0, (("偏好", 0.35), ("preference", 0.35))),
    MemoryTypeSpec("command_output", "any", False, 0.8, (("命令", 0.35), ("command", 0.35))),
    MemoryTypeSpec("general", "any", False, 0.4),
    MemoryTypeSpec("profile", "user", True, 1.0, (("画像", 0.3), ("profile", 0.3))),
    MemoryTypeSpec("event", "friend", False, 0.6, dated=True),
    MemoryTypeSpec("tool_result", "any", False, 0.5),
    MemoryTypeSpec("conversation", "any", False, 0.5, listed=False),
)

_BY_NAME: dict[str, MemoryTypeSpec] = {t.name: t for t in MEMORY_TYPES}
if list(_BY_NAME) != [m.value for m in MemoryType]:  # pragma: no cover - a type added to one of the two only
    raise RuntimeError("MEMORY_TYPES and MemoryType must name the same types in the same order")

#: The names of every type, in table order.
MEMORY_TYPE_NAMES: tuple[str, ...] = tuple(_BY_NAME)
#: The type a memory gets when the caller names none (and the ranker's weight of an unknown one).
DEFAULT_MEMORY_TYPE = MemoryType.GENERAL.value
#: Types that describe the user (the profile every AI friend of the user sees in a recall, and whose
#: stated topics the write path files them under); the other types are what happened.
PROFILE_TYPES: frozenset[str] = frozenset(t.name for t in MEMORY_TYPES if t.describes_user)
#: Types that belong to one AI friend's conversation: they must name the friend.
FRIEND_OWNED_TYPES: tuple[str, ...] = tuple(t.name for t in MEMORY_TYPES if t.owner == "friend")
#: Types that may not name a friend (the user's shared profile).
USER_OWNED_TYPES: frozenset[str] = frozenset(t.name for t in MEMORY_TYPES if t.owner == "user")
#: Types recording what happened on a day, which the recall lists by a time alone.
DATED_TYPES: tuple[str, ...] = tuple(t.name for t in MEMORY_TYPES if t.dated)


def memory_type_spec(name: str) -> MemoryTypeSpec:
    """The row of the type ``name``; raises ``KeyError`` for a name that is no type."""
    return _BY_NAME[name]


def memory_type_check(names: Iterable[str] = MEMORY_TYPE_NAMES, *, column: str = "memory_type") -> str:
    """The SQL condition of the CHECK constraint that keeps ``column`` to ``names`` (plain identifiers).

    >>> memory_type_check(["a", "b"])
    "memory_type IN ('a', 'b')"
    """
    listed = list(names)
    if not listed or not all(n.isidentifier() and n.isascii() for n in listed):
        raise ValueError(f"memory type names must be plain identifiers: {listed!r}")
    return f"{column} IN ({', '.join(repr(n) for n in listed)})"
