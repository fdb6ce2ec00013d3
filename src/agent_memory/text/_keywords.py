"""Keyword extraction for memories (stored with them, weighted) and for queries (typed keywords).

Offline, keywords come from TF-IDF over the search tokens, with jieba's IDF table for Chinese words,
plus rules by memory type and the user's own tags. With a model client, ``MEMORY_KEYWORDS_PROMPT`` is used
and the offline extractor is the fallback.

>>> ex = KeywordExtractor()
>>> [k.keyword for k in ex.extract(content="用户之前配置的MySQL数据库端口是3306", summary="MySQL 数据库配置",
...                                  memory_type="command_output")][:2]
['mysql', '数据库']
"""

from __future__ import annotations

import asyncio
import heapq
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from autogen_core.models import ChatCompletionClient, UserMessage

from data_layer import DEFAULT_MEMORY_TYPE, MEMORY_TYPES, KeywordInput, KeywordSource

from ._idf import idf_table
from ._scan import KEYWORD_SCAN_CHARS, ScanBudget, scan
from ._time_expressions import parse_time_expressions
from ._tokenize import Tokenizer, is_cjk_word

KeywordType = Literal["entity", "action", "concept", "time"]

#: The prompt of the model that extracts a memory's keywords (when a client is set).
MEMORY_KEYWORDS_PROMPT = """从以下记忆中提取最多 {max_keywords} 个关键词。

记忆摘要: {summary}
记忆内容: {content}
记忆类型: {memory_type}

要求:
1. 提取核心概念和主题词
2. 包含用户、动作、对象等实体
3. 每个关键词给出重要性权重 (0.0-1.0)
4. 优先选择能区分此记忆与其他记忆的词

返回 JSON 格式:
{{
  "keywords": [
    {{"word": "关键词1", "weight": 0.9}},
    {{"word": "关键词2", "weight": 0.7}}
  ]
}}"""

#: Words added by memory type, with their weight: the cue words of the memory-type table.
TYPE_KEYWORDS: dict[str, tuple[tuple[str, float], ...]] = {t.name: t.cue_words for t in MEMORY_TYPES if t.cue_words}

#: Longest keyword stored (the data layer's limit); a longer word (a URL, a hash) is never a keyword.
MAX_KEYWORD_CHARS = 100
#: Content longer than this is analysed in a worker thread, keeping the event loop free (extraction
#: reads a bounded sample, ``ScanBudget``, but that sample may still cost some 20 ms).
THREAD_CHARS = 20_000
#: Distinct words ranked at most (the heaviest, by ``heapq``; a sort of every word of a long text is
#: not needed for five keywords or thirty summary terms).
MAX_CANDIDATES = 256
#: What extraction reads of a long text by default (see ``agent_memory.text._scan``).
DEFAULT_SCAN = ScanBudget()

#: Runs of name characters; a file name or ``--flag`` lies inside one. Finding runs is linear, and each
#: run is examined once, so the command rule is linear in the text (an open ``[\w.-]*`` followed by
#: ``\.py`` re-scanned a long word from each of its positions: 11 s for an 80,000-character word).
_NAME_RUN = re.compile(r"[\w.-]+")
_FILE_START = re.compile(r"[A-Za-z_]")
_FILE_END = re.compile(r"\.(?:py|sh|js|ts|sql|yaml|yml|json|toml|cfg|ini|md|txt)(?!\w)")
_FLAG = re.compile(r"--[\w-]+")
_ACTION_HINTS = (
    "配置",
    "执行",
    "运行",
    "部署",
    "安装",
    "删除",
    "修改",
    "创建",
    "run",
    "deploy",
    "install",
    "configure",
)


def sample_text(text: str, budget: int = KEYWORD_SCAN_CHARS) -> str:
    """``text`` when it fits ``budget`` characters; else its first half-budget and four evenly spaced
    windows of an eighth each, joined by newlines (what the command rule reads of a long text; its
    regular expressions are linear and cheap, unlike the tokenizer, which reads ``ScanBudget`` windows)."""
    if len(text) <= budget:
        return text
    head = budget // 2
    window = budget // 8
    stride = (len(text) - head - window) // 4
    parts = [text[:head]] + [text[head + (i + 1) * stride : head + (i + 1) * stride + window] for i in range(4)]
    return "\n".join(parts)


def command_tokens(text: str, *, limit: int = 2) -> list[str]:
    """File names with a script or config extension (``deploy.sh``) and ``--flags`` in ``text``, lower-cased,
    at most ``limit``; words longer than a keyword may be are skipped."""
    found: list[str] = []
    for run in _NAME_RUN.finditer(text):
        if len(found) >= limit:
            break
        word = run.group()
        if len(word) <= MAX_KEYWORD_CHARS:
            token = _command_token(word)
            if token:
                found.append(token.lower())
    return found


def _command_token(word: str) -> str | None:
    """The ``--flag`` a run starts with, or the longest file name in it (from its first letter or ``_``
    to its last script or config extension)."""
    if word.startswith("--"):
        flag = _FLAG.match(word)
        return flag.group() if flag else None
    start = _FILE_START.search(word)
    if start is None:
        return None
    ends = [m.end() for m in _FILE_END.finditer(word, start.start())]
    return word[start.start() : ends[-1]] if ends else None


@dataclass(frozen=True, slots=True)
class QueryKeyword:
    """A keyword of a search query, typed as the tools' ``KeywordExtractionItem``."""

    keyword: str
    weight: float
    type: KeywordType


class KeywordExtractor:
    """Weighted keywords of memories and queries.

    ``max_keywords`` and ``min_weight`` come from the ``MEMORY_EXTRACTION_*`` settings;
    ``model_client`` (any AutoGen ``ChatCompletionClient``) switches :meth:`extract_keywords` to the
    model (``MEMORY_KEYWORDS_PROMPT``). ``scan`` bounds what is read of a long text (a memory of at most 2 KB is read
    whole); ``scan=None`` reads everything, whatever it costs (for comparisons).
    """

    def __init__(
        self,
        *,
        max_keywords: int = 5,
        min_weight: float = 0.3,
        model_client: ChatCompletionClient | None = None,
        tokenizer: Tokenizer | None = None,
        scan: ScanBudget | None = DEFAULT_SCAN,
    ) -> None:
        if not 1 <= max_keywords <= 20:
            raise ValueError("max_keywords must be between 1 and 20")
        if not 0.0 <= min_weight <= 1.0:
            raise ValueError("min_weight must be between 0 and 1")
        self.max_keywords = max_keywords
        self.min_weight = min_weight
        self.model_client = model_client
        self._tokenizer = tokenizer or Tokenizer(stem=False, search_mode=False)
        self.scan = scan

    def prepare(self) -> None:
        """Load what offline extraction reads (the IDF table: about 0.14 s, once per process), so the
        first memory a new process writes, an archive run or a chat's keyword tool, does not read it on
        the event loop while every chat waits (a server's search warm-up calls this in a thread)."""
        idf_table()

    @property
    def name(self) -> str:
        """Identifies the offline extraction (stored with analyses)."""
        return f"tfidf-{self.max_keywords}-{self.min_weight:g}-v3"

    # -- offline -----------------------------------------------------------------------------------

    def weighted_terms(self, text: str, *, boost: str = "") -> list[tuple[str, float]]:
        """TF-IDF of the words of ``text`` (``boost`` text counts twice), heaviest first, max weight 1,
        at most ``MAX_CANDIDATES`` words.

        Long texts are sampled (``self.scan``; each of ``text`` and ``boost`` within its budget); words
        longer than a keyword may be are left out.
        """
        idf, median = idf_table()
        counts: Counter[str] = Counter()
        for _, tokens in scan(text, self._tokenizer.tokens, budget=self.scan, dictionary=idf):
            counts.update(tokens)
        for _, tokens in scan(boost, self._tokenizer.tokens, budget=self.scan, dictionary=idf):
            counts.update(tokens)
            counts.update(tokens)
        scored: dict[str, float] = {}
        for word, tf in counts.items():
            if len(word) < 2 or (word.isdigit() and len(word) < 3) or len(word) > MAX_KEYWORD_CHARS:
                continue
            weight = idf.get(word, median) if is_cjk_word(word) else median
            scored[word] = (1.0 + 0.5 * (tf - 1)) * weight
        if not scored:
            return []
        top = max(scored.values())
        ranked = heapq.nsmallest(MAX_CANDIDATES, scored.items(), key=lambda kv: (-kv[1], kv[0]))
        return [(w, round(s / top, 4)) for w, s in ranked]

    def analysed_windows(self, text: str) -> list[str]:
        """The pieces of ``text`` that :meth:`weighted_terms` reads (all of it when short or when
        ``scan`` is ``None``; else the bounded sample)."""
        idf, _ = idf_table()
        return [window for window, _ in scan(text, self._tokenizer.tokens, budget=self.scan, dictionary=idf)]

    def extract(self, *, content: str, summary: str = "", memory_type: str | None = None) -> list[KeywordInput]:
        """Keywords of a memory, offline: TF-IDF (summary words count more), then type rules."""
        boost = summary if summary and summary not in content else ""
        terms = [(w, s) for w, s in self.weighted_terms(content, boost=boost) if s >= self.min_weight]
        chosen = [KeywordInput(w, s, "system") for w, s in terms[: self.max_keywords]]
        taken = {k.keyword for k in chosen}
        if memory_type == "command_output":
            for word in command_tokens(sample_text(content)):
                if word not in taken:
                    chosen.append(KeywordInput(word, 0.8, "system"))
                    taken.add(word)
        for word, weight in TYPE_KEYWORDS.get(memory_type or "", ()):
            if word not in taken:
                chosen.append(KeywordInput(word, weight, "system"))
        if not chosen:
            chosen = self._fallback(content, summary, memory_type)
        return chosen

    def _fallback(self, content: str, summary: str, memory_type: str | None) -> list[KeywordInput]:
        """Every memory gets a keyword, even one of stop words or symbols only: its first words as they
        stand (folded), else its type. Reads the sampled windows until it has two words."""
        idf, _ = idf_table()
        plain = Tokenizer(stem=False, stop_words=False, single_char_min_idf=0.0)
        words: list[str] = []
        for text in (summary, content):
            for _, tokens in scan(text, plain.tokens, budget=self.scan, dictionary=idf):
                words.extend(w for w in dict.fromkeys(tokens) if w not in words)
                if len(words) >= 2:
                    break
            if len(words) >= 2:
                break
        if words:
            return [KeywordInput(w[:MAX_KEYWORD_CHARS], 0.3, "system") for w in words[:2]]
        return [KeywordInput((memory_type or DEFAULT_MEMORY_TYPE)[:MAX_KEYWORD_CHARS], 0.3, "system")]

    def query_keywords(self, query: str, *, context: str | None = None, max_keywords: int = 5) -> list[QueryKeyword]:
        """Typed keywords of a query, offline (entity / action / concept / time), heaviest first."""
        from datetime import UTC, datetime

        found: list[QueryKeyword] = []
        times = parse_time_expressions(query, now=datetime.now(UTC))
        time_words = {t.expression for t in times}
        for word, weight in self.weighted_terms(query, boost=""):
            if any(word in t for t in time_words):
                continue
            found.append(QueryKeyword(word, weight, _kind(word)))
        if context:
            known = {k.keyword for k in found}
            for word, weight in self.weighted_terms(context)[:3]:
                if word not in known:
                    found.append(QueryKeyword(word, round(0.5 * weight, 4), _kind(word)))
        found.sort(key=lambda k: (-k.weight, k.keyword))
        result = found[: max(0, max_keywords - len(times[:1]))]
        result.extend(QueryKeyword(t.expression, 0.6, "time") for t in times[:1])
        return result[:max_keywords]

    # -- with a model --------------------------------------------------------------------------------

    async def extract_keywords(
        self, content: str, summary: str, memory_type: str | None = None, max_keywords: int | None = None
    ) -> list[tuple[str, float]]:
        """The extractor's interface: ``(keyword, weight)`` pairs, by LLM when a client is set, else offline.

        A failing or malformed LLM answer falls back to the offline extractor.
        """
        limit = max_keywords or self.max_keywords
        if self.model_client is not None:
            try:
                return await self._llm_keywords(content, summary, memory_type, limit)
            except (ValueError, KeyError, TypeError):
                pass
        return [(k.keyword, k.weight) for k in self.extract(content=content, summary=summary, memory_type=memory_type)][
            :limit
        ]

    async def extract_inputs(
        self, *, content: str, summary: str = "", memory_type: str | None = None
    ) -> list[KeywordInput]:
        """Keywords to store: the model's (source ``llm``) when a client is set and answers well, else
        the offline ones (source ``system``). Offline extraction of a long text runs in a worker thread."""
        if self.model_client is not None:
            try:
                pairs = await self._llm_keywords(content, summary, memory_type, self.max_keywords)
                return keyword_inputs(pairs, source="llm")
            except (ValueError, KeyError, TypeError):
                pass
        if len(content) + len(summary) > THREAD_CHARS:
            return await asyncio.to_thread(self.extract, content=content, summary=summary, memory_type=memory_type)
        return self.extract(content=content, summary=summary, memory_type=memory_type)

    async def _llm_keywords(
        self, content: str, summary: str, memory_type: str | None, limit: int
    ) -> list[tuple[str, float]]:
        assert self.model_client is not None
        prompt = MEMORY_KEYWORDS_PROMPT.format(
            max_keywords=limit, summary=summary, content=content[:4000], memory_type=memory_type or DEFAULT_MEMORY_TYPE
        )
        result = await self.model_client.create([UserMessage(content=prompt, source="system")], json_output=True)
        if not isinstance(result.content, str):
            raise ValueError("the model answered with a tool call, not JSON")
        data = json.loads(result.content)
        pairs: list[tuple[str, float]] = []
        for item in data["keywords"]:
            word = str(item.get("word") or item.get("keyword") or "").strip().lower()
            weight = float(item.get("weight", 0.5))
            if word and 0.0 <= weight <= 1.0 and len(word) <= MAX_KEYWORD_CHARS:
                pairs.append((word, weight))
        if not pairs:
            raise ValueError("the model returned no keywords")
        return pairs[:limit]


def _kind(word: str) -> KeywordType:
    if any(hint in word for hint in _ACTION_HINTS):
        return "action"
    if not is_cjk_word(word) and (word[:1].isdigit() or "." in word or "_" in word):
        return "entity"
    return "concept" if is_cjk_word(word) else "entity"


def keyword_inputs(pairs: Sequence[tuple[str, float]], *, source: KeywordSource = "llm") -> list[KeywordInput]:
    """``(keyword, weight)`` pairs as ``KeywordInput`` with the given extraction source."""
    return [KeywordInput(k, w, source) for k, w in pairs]
