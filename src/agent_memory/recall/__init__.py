"""Memory recall: ``MemRecallAgent`` (an AssistantAgent with the memory tools), the offline planner
and the recall events.

>>> from agent_memory.recall import MemRecallAgent, OfflineRecallPlanner
"""

from ._agent import AGENT_NAME, MemRecallAgent, RecallHandoff, RecallResult
from ._days import STATE_TOPICS, describes_state, told_days_filter
from ._events import (
    MemoryForgottenEvent,
    MemoryNotForgottenEvent,
    MemoryUnforgottenEvent,
    RecallErrorEvent,
    RecallFinishedEvent,
    RecallStartedEvent,
    RecallTimeoutEvent,
    WindowExpandedEvent,
    merge_streams,
)
from ._intent import Intent, classify_intent, days_asked_about, days_to_read, needs_memory, recent_days_told
from ._memory_view import (
    EventItem,
    ProfileItem,
    RecallMemoryInput,
    RecallMemoryOutput,
    output_of_records,
    reachable,
    recall_memory_output,
    without_repeats,
)
from ._planner import OfflineRecallPlanner
from ._planner_client import OfflineClient, PlannerClient
from ._prompt import RECALL_SYSTEM_PROMPT, RecallTask, format_task, parse_task, recall_prompt

__all__ = [
    "AGENT_NAME",
    "RECALL_SYSTEM_PROMPT",
    "STATE_TOPICS",
    "EventItem",
    "Intent",
    "MemRecallAgent",
    "MemoryForgottenEvent",
    "MemoryNotForgottenEvent",
    "MemoryUnforgottenEvent",
    "OfflineClient",
    "OfflineRecallPlanner",
    "PlannerClient",
    "ProfileItem",
    "RecallErrorEvent",
    "RecallFinishedEvent",
    "RecallHandoff",
    "RecallMemoryInput",
    "RecallMemoryOutput",
    "RecallResult",
    "RecallStartedEvent",
    "RecallTask",
    "RecallTimeoutEvent",
    "WindowExpandedEvent",
    "classify_intent",
    "days_asked_about",
    "days_to_read",
    "describes_state",
    "format_task",
    "merge_streams",
    "needs_memory",
    "output_of_records",
    "parse_task",
    "reachable",
    "recall_memory_output",
    "recall_prompt",
    "recent_days_told",
    "told_days_filter",
    "without_repeats",
]
