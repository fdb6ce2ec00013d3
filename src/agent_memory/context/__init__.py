"""What the main model sees: ``MemoryContext`` (recall before every reply, a bounded history), the
recall block and its slots.

>>> from agent_memory.context import MemoryContext, RecallOptions
"""

from ._block import (
    PROFILE_TYPES,
    SLOT_HEADER,
    RecallBlock,
    estimate_tokens,
    flatten,
    ledger_block,
    reachable,
    reachable_items,
    recall_block,
    slot,
)
from ._context import MemoryContext, MemoryContextConfig
from ._options import InjectionMode, RecallOptions
from ._window import bounded, message_tokens

__all__ = [
    "PROFILE_TYPES",
    "SLOT_HEADER",
    "InjectionMode",
    "MemoryContext",
    "MemoryContextConfig",
    "RecallBlock",
    "RecallOptions",
    "bounded",
    "estimate_tokens",
    "flatten",
    "ledger_block",
    "message_tokens",
    "reachable",
    "reachable_items",
    "recall_block",
    "slot",
]
