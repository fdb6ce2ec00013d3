"""Memory recall before the main model answers: ``MemoryContext``, ``MemRecallAgent``, the offline
planner and the recall events.

>>> from agent_memory.recall import MemRecallAgent, OfflineRecallPlanner
"""

from ._agent import AGENT_NAME, MemRecallAgent, RecallHandoff, RecallResult
from ._context import InjectionMode, MemoryContext, MemoryContextConfig, estimate_tokens, slot
from ._events import (
    RecallErrorEvent,
    RecallFinishedEvent,
    RecallStartedEvent,
    RecallTimeoutEvent,
    WindowExpandedEvent,
    merge_streams,
)
from ._factory import memory_context
from ._planner import DEFAULT_ROUNDS, EARLY_STOP_SCORE, OfflineRecallPlanner, RoundConfig
from ._prompt import RECALL_SYSTEM_PROMPT, RecallTask, format_task, parse_task

__all__ = [
    "AGENT_NAME",
    "DEFAULT_ROUNDS",
    "EARLY_STOP_SCORE",
    "RECALL_SYSTEM_PROMPT",
    "InjectionMode",
    "MemRecallAgent",
    "MemoryContext",
    "MemoryContextConfig",
    "OfflineRecallPlanner",
    "RecallErrorEvent",
    "RecallFinishedEvent",
    "RecallHandoff",
    "RecallResult",
    "RecallStartedEvent",
    "RecallTask",
    "RecallTimeoutEvent",
    "RoundConfig",
    "WindowExpandedEvent",
    "estimate_tokens",
    "format_task",
    "memory_context",
    "merge_streams",
    "parse_task",
    "slot",
]
