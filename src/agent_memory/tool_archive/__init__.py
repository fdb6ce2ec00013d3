"""The tool-result archive: placeholders in the context, full text on demand.

>>> from agent_memory.tool_archive import ARCHIVE_THRESHOLD
>>> ARCHIVE_THRESHOLD
10000
"""

from ._manager import (
    ARCHIVE_PROMPT,
    ARCHIVE_THRESHOLD,
    LOAD_TOOL,
    LoadToolHistoryInput,
    ToolResultManager,
    extract_sources,
    placeholder,
    summarize,
)

__all__ = [
    "ARCHIVE_PROMPT",
    "ARCHIVE_THRESHOLD",
    "LOAD_TOOL",
    "LoadToolHistoryInput",
    "ToolResultManager",
    "extract_sources",
    "placeholder",
    "summarize",
]
