"""The evidence tools: chat messages read, searched and expanded within a bound scope.

The recall reads the user's own messages as evidence through four tools bound to a
:class:`~data_layer.Scope` (the model never sees or sets a user or friend id):

- ``messages_list(since, until, role, page_size, cursor)``: a time range, oldest first;
- ``lexical_search(query_text, filter, page_size, cursor)``: BM25 words, quoted phrases must occur;
- ``semantic_search(query_text, filter, top_k, min_score)``: embedding similarity;
- ``neighbors(message_id, before, after)``: the conversation around a message.

>>> from agent_memory.evidence import EvidenceToolbox, MessageIndex
>>> index = MessageIndex(layer)  # doctest: +SKIP
>>> box = EvidenceToolbox(layer, index, scope=Scope.of("u1", "mentor"))  # doctest: +SKIP
>>> (await box.lexical_search('"不吃辣"')).messages  # doctest: +SKIP
"""

from ._analyzer import MessageTermsAnalyzer, analyse_stored, analyse_user
from ._index import MessageIndex, ParsedQuery, parse_query
from ._models import (
    MAX_NEIGHBORS,
    MAX_PAGE_SIZE,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    EvidenceMessage,
    LexicalSearchInput,
    LexicalSearchOutput,
    MessagesListInput,
    MessagesListOutput,
    NeighborsInput,
    NeighborsOutput,
    Role,
    SearchFilter,
    SemanticSearchInput,
    SemanticSearchOutput,
    TimeRange,
)
from ._recall_agent import EvidenceRecallAgent, EvidenceRun, RankedHit
from ._recall_models import ConflictNote, EvidenceItem, EvidenceRecall, Limits, MemoryView, TimeWindow, ViewItem
from ._recall_planner import EvidenceRecallPlanner
from ._skill import Skill, load_skill, parse_skill
from ._synthesis import synthesize
from ._toolbox import EVIDENCE_TOOLS, EvidenceTool, EvidenceToolbox, EvidenceToolSpec, ToolName

__all__ = [
    "EVIDENCE_TOOLS",
    "MAX_NEIGHBORS",
    "MAX_PAGE_SIZE",
    "MAX_QUERY_CHARS",
    "MAX_TOP_K",
    "ConflictNote",
    "EvidenceItem",
    "EvidenceMessage",
    "EvidenceRecall",
    "EvidenceRecallAgent",
    "EvidenceRecallPlanner",
    "EvidenceRun",
    "EvidenceTool",
    "EvidenceToolSpec",
    "EvidenceToolbox",
    "LexicalSearchInput",
    "LexicalSearchOutput",
    "Limits",
    "MemoryView",
    "MessageIndex",
    "MessageTermsAnalyzer",
    "MessagesListInput",
    "MessagesListOutput",
    "NeighborsInput",
    "NeighborsOutput",
    "ParsedQuery",
    "RankedHit",
    "Role",
    "SearchFilter",
    "SemanticSearchInput",
    "SemanticSearchOutput",
    "Skill",
    "TimeRange",
    "TimeWindow",
    "ToolName",
    "ViewItem",
    "analyse_stored",
    "analyse_user",
    "load_skill",
    "parse_query",
    "parse_skill",
    "synthesize",
]
