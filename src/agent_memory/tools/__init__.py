"""The MemRecallAgent tools of seed 000, bound to a user (and AI friend) scope.

>>> from agent_memory.tools import MEMRECALL_TOOLS, MemoryToolbox
>>> sorted(MEMRECALL_TOOLS)
['expand_context_window', 'extract_search_keywords', 'get_memory_detail', 'handoff', 'search_memories']
"""

from ._models import (
    ExpandContextWindowInput,
    ExpandContextWindowOutput,
    ExtractKeywordsInput,
    ExtractKeywordsOutput,
    GetMemoryDetailInput,
    GetMemoryDetailOutput,
    HandoffInput,
    HandoffOutput,
    KeywordExtractionItem,
    MemorySearchResultItem,
    SearchMemoriesInput,
    SearchMemoriesOutput,
)
from ._registry import MEMRECALL_TOOLS, ToolSpec
from ._toolbox import MAX_CONSECUTIVE_SEARCHES, MAX_RESULTS, MAX_WINDOW, MemoryToolbox

__all__ = [
    "MAX_CONSECUTIVE_SEARCHES",
    "MAX_RESULTS",
    "MAX_WINDOW",
    "MEMRECALL_TOOLS",
    "ExpandContextWindowInput",
    "ExpandContextWindowOutput",
    "ExtractKeywordsInput",
    "ExtractKeywordsOutput",
    "GetMemoryDetailInput",
    "GetMemoryDetailOutput",
    "HandoffInput",
    "HandoffOutput",
    "KeywordExtractionItem",
    "MemorySearchResultItem",
    "MemoryToolbox",
    "SearchMemoriesInput",
    "SearchMemoriesOutput",
    "ToolSpec",
]
