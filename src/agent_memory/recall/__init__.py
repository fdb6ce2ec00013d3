"""Memory recall before the main model answers: ``MemRecallAgent`` and its offline planner.

>>> from agent_memory.recall import MemRecallAgent, OfflineRecallPlanner
"""

from ._agent import AGENT_NAME, MemRecallAgent, RecallHandoff, RecallResult
from ._planner import DEFAULT_ROUNDS, EARLY_STOP_SCORE, OfflineRecallPlanner, RoundConfig
from ._prompt import RECALL_SYSTEM_PROMPT, RecallTask, format_task, parse_task

__all__ = [
    "AGENT_NAME",
    "DEFAULT_ROUNDS",
    "EARLY_STOP_SCORE",
    "RECALL_SYSTEM_PROMPT",
    "MemRecallAgent",
    "OfflineRecallPlanner",
    "RecallHandoff",
    "RecallResult",
    "RecallTask",
    "RoundConfig",
    "format_task",
    "parse_task",
]
