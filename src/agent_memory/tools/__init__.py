"""The MemRecallAgent tools, bound to a user (and AI friend) scope.

>>> from agent_memory.tools import MEMRECALL_TOOLS, MemoryToolbox
>>> sorted(MEMRECALL_TOOLS)
['expand_context_window', 'extract_search_keywords', 'get_memory_detail', 'handoff', 'search_memories']
"""

from ._adapter import ScopedTool
from ._ledger import RecallLedger, SearchRound, rank_found
from ._limits import EARLY_STOP_SCORE, MAX_CONSECUTIVE_SEARCHES, MAX_RESULTS, SEED_ROUNDS, RoundConfig, ToolLimits
from ._models import (
    ASSISTANT_SAID,
    PREVIEW_CHARS,
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
    content_preview,
    said_by_assistant,
)
from ._registry import MEMRECALL_TOOLS, ToolSpec
from ._toolbox import MAX_WINDOW, TIMED_OUT, ListingFilter, MemoryToolbox

__all__ = [
    "ASSISTANT_SAID",
    "EARLY_STOP_SCORE",
    "MAX_CONSECUTIVE_SEARCHES",
    "MAX_RESULTS",
    "MAX_WINDOW",
    "MEMRECALL_TOOLS",
    "PREVIEW_CHARS",
    "SEED_ROUNDS",
    "TIMED_OUT",
    "ExpandContextWindowInput",
    "ExpandContextWindowOutput",
    "ExtractKeywordsInput",
    "ExtractKeywordsOutput",
    "GetMemoryDetailInput",
    "GetMemoryDetailOutput",
    "HandoffInput",
    "HandoffOutput",
    "KeywordExtractionItem",
    "ListingFilter",
    "MemorySearchResultItem",
    "MemoryToolbox",
    "RecallLedger",
    "RoundConfig",
    "ScopedTool",
    "SearchMemoriesInput",
    "SearchMemoriesOutput",
    "SearchRound",
    "ToolLimits",
    "ToolSpec",
    "content_preview",
    "rank_found",
    "said_by_assistant",
]
