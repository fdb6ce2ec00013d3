"""The analysis stored with every memory on write: search terms, keywords and (optionally) an embedding.

Set it on the repository once and every ``add`` / ``upsert`` stores it in the same transaction:

>>> analyzer = SearchAnalyzer()
>>> layer.memory.set_analyzer(analyzer)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import Callable, Sequence

from data_layer import (
    PROFILE_TYPES,
    AgentFusionDataLayer,
    KeywordInput,
    KeywordTermsAnalyzer,
    MemoryAnalysis,
    MemoryDraft,
    MemoryRecord,
)

from ..text import KeywordExtractor, Tokenizer
from ._embeddings import Embedder, Vectors, to_bytes
from ._vector_terms import stored_vector_terms

logger = logging.getLogger(__name__)

#: Texts longer than this are tokenised in a worker thread, so a huge memory does not stall every other
#: request of the process (tokenising 100 KB of Chinese takes 0.1 s, of rare characters up to 2 s).
OFF_LOOP_CHARS = 8_000
#: Most memories of one write embedded with it. A chat's archiving run writes a few gists, embedded at
#: once; a bulk write (``add_many``, an import) stores the words and leaves the vectors to the engine's
#: background pass, so a sentence encoder's cost (milliseconds a text) does not bound how fast memories
#: can be written. Until the pass is done, those memories are found by their words.
INLINE_VECTORS = 64
#: Keywords whose search terms are kept once computed (a process's keyword vocabulary).
KEYWORD_CACHE = 200_000


def memory_text(summary: str, content: str) -> str:
    """The text a memory is searched by: its content, preceded by the summary when that adds words."""
    summary = (summary or "").strip()
    if summary and summary not in content:
        return f"{summary}\n{content}"
    return content


class SearchAnalyzer:
    """Implements ``data_layer.MemoryAnalyzer`` for :class:`HybridMemorySearch`.

    ``tokenizer`` makes the search terms (:meth:`Tokenizer.index_tokens`: folded, with the parts of
    words mixing letters and digits), ``extractor`` the weighted keywords (by LLM when it has a model
    client; the data layer folds them as it stores them), ``embedder`` (optional) the vector used by
    semantic search. Content is never changed: only terms and keywords are folded.

    ``topics`` (optional) names the profile topics a text states something about (the composition root
    passes the archiver's ``statement_topics``): a memory of a ``data_layer.PROFILE_TYPES`` type gets them as
    keywords, so a profile an application wrote by hand ("喜欢科幻电影，不喜欢恐怖片") is found by its topic
    (兴趣) as the archiver's items are, which carry it. The recall adds the topic to a request for
    suggestions ("周末想放松一下，有什么推荐？") that names none of the user's interests.

    :attr:`name` is stored with every analysis. The search engine re-analyses (and re-indexes) every
    memory whose stored name differs from the running analyzer's, on the user's next search; so a
    change of the folding rule (``FOLD_VERSION``, part of the tokenizer's name) re-folds old memories.
    The vector is stored with its embedder's name instead, apart from the name: a write whose embedding
    fails (an endpoint down or past its time-out) stores the words without it, with a warning, and a
    change of embedder re-embeds memories in the background (``HybridMemorySearch``) without analysing
    their words again.
    """

    def __init__(
        self,
        *,
        tokenizer: Tokenizer | None = None,
        extractor: KeywordExtractor | None = None,
        embedder: Embedder | None = None,
        topics: Callable[[str], Sequence[str]] | None = None,
    ) -> None:
        if topics is not None and not callable(topics):
            raise TypeError(f"topics must be a function from text to topic labels or None, got {type(topics).__name__}")
        self.tokenizer = tokenizer or Tokenizer()
        self.extractor = extractor or KeywordExtractor()
        self.embedder = embedder
        self.topics = topics
        self._keyword_cache: dict[str, tuple[str, ...]] = {}

    @property
    def name(self) -> str:
        """Tokenizer and keyword extractor names: a change of either re-analyses memories."""
        full = f"{self.tokenizer.name}|{self.extractor.name}" + ("|topics" if self.topics else "")
        if len(full) <= 64:  # the stored column's size
            return full
        return f"{full[:47]}~{hashlib.sha1(full.encode()).hexdigest()[:16]}"

    def keyword_terms(self, keywords: Sequence[str]) -> str:
        """The search terms of a memory's stored keywords, space-joined, each once in the order of the
        keywords (a tag "machine learning" gives "machin learn"): what the store's engine indexes beside
        the tokens. The data layer calls it with the keywords a memory holds after each write."""
        out: dict[str, None] = {}
        for word in keywords:
            terms = self._keyword_cache.get(word)
            if terms is None:
                terms = tuple(self.tokenizer.unique_tokens(word))
                if len(self._keyword_cache) < KEYWORD_CACHE:
                    self._keyword_cache[word] = terms
            out.update(dict.fromkeys(terms))
        return " ".join(out)

    async def analyze(self, drafts: Sequence[MemoryDraft]) -> list[MemoryAnalysis]:
        """One analysis per draft (called by the repository before its write transaction)."""
        return await self.analyze_texts([(d.summary, d.content, d.memory_type) for d in drafts])

    async def analyze_records(self, records: Sequence[MemoryRecord]) -> list[MemoryAnalysis]:
        """Analyses of stored memories (backfill after the analyzer changed)."""
        return await self.analyze_texts([(r.summary, r.content, r.memory_type) for r in records])

    async def analyze_texts(self, items: Sequence[tuple[str, str, str]]) -> list[MemoryAnalysis]:
        """Analyses of ``(summary, content, memory_type)`` triples.

        Offline (no model client for keywords), a batch's words and keywords are computed in one worker
        thread, so a bulk write (an import, an archiving run) does not hold the event loop for every
        other request of the process; a single short memory (a chat's ``add``) is analysed in place."""
        texts = [memory_text(summary, content) for summary, content, _ in items]
        vectors = await self.vectors(texts) if len(texts) <= INLINE_VECTORS else None
        if self.extractor.model_client is None:
            if len(texts) > 1 or sum(map(len, texts)) > OFF_LOOP_CHARS:
                words = await asyncio.to_thread(self._offline, items, texts)
            else:
                words = self._offline(items, texts)
        else:
            words = []
            for i, (summary, content, memory_type) in enumerate(items):
                keywords = await self.keywords(summary=summary, content=content, memory_type=memory_type)
                text = texts[i]
                if len(text) > OFF_LOOP_CHARS:  # seconds of jieba for 100 KB of rare characters: not on the loop
                    tokens = await asyncio.to_thread(self.tokenizer.index_tokens, text)
                else:
                    tokens = self.tokenizer.index_tokens(text)
                words.append((tokens, keywords))
        embedder = self.embedder.name if vectors is not None and self.embedder is not None else None
        buckets = stored_vector_terms(vectors, embedder=embedder) if vectors is not None and embedder else None
        return [
            MemoryAnalysis(
                analyzer=self.name,
                tokens=" ".join(tokens),
                keywords=tuple(keywords),
                embedder=embedder,
                embedding=to_bytes(vectors[i]) if vectors is not None else None,
                vector_terms=buckets[i] if buckets is not None else None,
            )
            for i, (tokens, keywords) in enumerate(words)
        ]

    def _offline(
        self, items: Sequence[tuple[str, str, str]], texts: Sequence[str]
    ) -> list[tuple[list[str], list[KeywordInput]]]:
        """Search terms and offline keywords of each item (``texts``: their :func:`memory_text`)."""
        out = []
        for (summary, content, memory_type), text in zip(items, texts, strict=True):
            found = self.extractor.extract(content=content, summary=summary, memory_type=memory_type)
            out.append((self.tokenizer.index_tokens(text), self._with_topics(found, summary, content, memory_type)))
        return out

    async def vectors(self, texts: Sequence[str]) -> Vectors | None:
        """The embedder's vectors of ``texts``, or ``None`` with no embedder or when embedding fails (logged
        as a warning: the memories are stored with their words, and re-embedded later)."""
        if self.embedder is None or not texts:
            return None
        try:
            return await self.embedder.embed(texts)
        except Exception as exc:  # an endpoint down, a time-out: the write goes on without vectors
            logger.warning(
                "embedding %d memories with %s failed (%s); they are stored without vectors and re-embedded "
                "by a later search",
                len(texts),
                self.embedder.name,
                exc,
            )
            return None

    async def keywords(self, *, summary: str, content: str, memory_type: str | None) -> list[KeywordInput]:
        """Keywords of one memory: the LLM's when the extractor has a model client, else offline; then,
        for a profile, the labels of the topics it states (``topics``) that it does not have yet."""
        found = await self.extractor.extract_inputs(content=content, summary=summary, memory_type=memory_type)
        return self._with_topics(found, summary, content, memory_type)

    def _with_topics(
        self, found: list[KeywordInput], summary: str, content: str, memory_type: str | None
    ) -> list[KeywordInput]:
        """``found``, then for a profile the labels of the topics it states (``topics``) not among them."""
        if self.topics is None or memory_type not in PROFILE_TYPES:
            return found
        have = {k.keyword for k in found}
        labels = self.topics(memory_text(summary, content))
        return found + [KeywordInput(label, 1.0, "system") for label in dict.fromkeys(labels) if label not in have]


def _keyword_terms_of(
    analyzer: KeywordTermsAnalyzer, found: Sequence[tuple[uuid.UUID, list[str]]]
) -> list[tuple[uuid.UUID, str]]:
    """``(search row, keyword terms)`` of each ``(search row, stored keywords)`` pair."""
    return [(mid, analyzer.keyword_terms(words)) for mid, words in found]


async def fill_keyword_terms(
    layer: AgentFusionDataLayer,
    analyzer: KeywordTermsAnalyzer,
    *,
    batch: int = 1000,
    on_batch: Callable[[str, int], None] | None = None,
) -> tuple[int, int]:
    """Store the keyword terms of every search row that has none yet (rows stored before the store's
    engine held memories, or by a layer whose analyzer gives none), in batches; ``on_batch(user, filled)``
    after each. Idempotent: a second run finds none. Returns ``(rows filled, users)``."""
    rows = users = 0
    after: str | None = None
    while True:
        pending = await layer.memory.keyword_terms_pending_users(after=after)
        if not pending:
            return rows, users
        for user in pending:
            filled = 0
            while True:
                found = await layer.memory.keyword_terms_pending(user_id=user, limit=batch)
                if not found:
                    break
                terms = await asyncio.to_thread(_keyword_terms_of, analyzer, found)
                done = await layer.memory.store_keyword_terms(user_id=user, terms=terms)
                filled += done
                if on_batch is not None:
                    on_batch(user, done)
                if len(found) < batch:
                    break
            rows += filled
            users += 1 if filled else 0
        after = pending[-1]
