"""Builders that wire agent-fusion-memory into AutoGen agents.

>>> from builders import AgentBuilder
>>> builder = AgentBuilder(system)  # doctest: +SKIP
"""

from ._agent_builder import MAIN_AGENT_TOOLS, AgentBuilder, Hook
from ._prompts import (
    ARCHIVE_TOOL_PROMPT,
    MEMORY_TOOLS_PROMPT,
    RECALL_BLOCK_PROMPT,
    RUN_CODE_PROMPT,
    Language,
    detect_language,
)

__all__ = [
    "ARCHIVE_TOOL_PROMPT",
    "MAIN_AGENT_TOOLS",
    "MEMORY_TOOLS_PROMPT",
    "RECALL_BLOCK_PROMPT",
    "RUN_CODE_PROMPT",
    "AgentBuilder",
    "Hook",
    "Language",
    "detect_language",
]
