"""Memory recall: ``MemRecallAgent`` (an AssistantAgent with the memory tools), the offline planner
and the recall events.

>>> from agent_memory.recall import MemRecallAgent, OfflineRecallPlanner
"""

from ._agent import AGENT_NAME, MemRecallAgent, RecallHandoff, RecallResult
from ._events import (
    RecallErrorEvent,
    RecallFinishedEvent,
    RecallStartedEvent,
    RecallTimeoutEvent,
    WindowExpandedEvent,
    merge_streams,
)
from ._planner import OfflineRecallPlanner
from ._prompt import RECALL_SYSTEM_PROMPT, RecallTask, format_task, parse_task, recall_prompt

__all__ = [
    "AGENT_NAME",
    "RECALL_SYSTEM_PROMPT",
    "MemRecallAgent",
    "OfflineRecallPlanner",
    "RecallErrorEvent",
    "RecallFinishedEvent",
    "RecallHandoff",
    "RecallResult",
    "RecallStartedEvent",
    "RecallTask",
    "RecallTimeoutEvent",
    "WindowExpandedEvent",
    "format_task",
    "merge_streams",
    "parse_task",
    "recall_prompt",
]
