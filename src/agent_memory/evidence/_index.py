"""``MessageIndex``: lexical and semantic search over each user's chat messages, in the store's engine.

Nothing of a user is held in the process. A message's search terms (:class:`MessageTermsAnalyzer`) are
written with the message, in its transaction, and the store's own full-text engine indexes them (FTS5
on SQLite, a GIN-indexed ``tsvector`` on PostgreSQL; see ``data_layer._message_search``). So every
process sees every committed message at once, whichever process wrote it and whatever its id.

A lexical search makes four small reads: the user's messages still without terms (written by a layer
without the analyzer; analysed and stored first, once for all processes), BM25's statistics of the
scope's visible messages (count and total length summed over the per-chat rows the store keeps, each
query term's document frequency counted by the engine), the candidates (the query's terms OR'ed, each
quoted phrase's prefilter, the scope's visibility rule ``Scope.memory_clause``, role and ``[since,
until)``, all in SQL) with their stored terms, and the records of the page. It ranks the candidates with
the same BM25 as the memories' search (:func:`~agent_memory.search._scoring.bm25_idf`,
:func:`~agent_memory.search._scoring.bm25_tf`) over those statistics: another friend's chat never
changes a score, let alone shows up.

Semantic search scores a bounded candidate set: the scope's newest :attr:`MessageIndex.semantic_window`
messages passing the filters plus the best :attr:`MessageIndex.semantic_lexical` lexical hits of the
query's words. An older message that shares no word with the query is not found by it (``messages_list``
reads any time). Vectors are kept in a bounded least-recently-used cache keyed by the embedder and the
text (shared by all users; a message's text never changes), not per user.

Query parsing (quoted phrases and BM25 terms: :class:`ParsedQuery`, :func:`parse_query`) lives in
:mod:`._query` and is re-exported here.

>>> index = MessageIndex(layer)  # doctest: +SKIP
>>> hits = await index.lexical(Scope.of("u1", "mentor"), '"不吃辣" 火锅', role="user")  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from data_layer import AgentFusionDataLayer, MessageRecord, PhraseFilter, Scope, TermCandidate

from ..search import Embedder, HashingEmbedder, above_floor, bm25_idf, bm25_tf, similarity_floor
from ..text import Tokenizer, fold
from ._analyzer import MessageTermsAnalyzer, analyse_user
from ._query import ParsedQuery as ParsedQuery
from ._query import parse_query as parse_query

#: Texts per call of the embedder.
EMBED_BATCH = 256
#: A message matching every quoted phrase scores at least this much.
PHRASE_FLOOR = 0.05
#: A phrase made only of these (Latin letters and digits, spaces, ASCII punctuation) is tokenised the same
#: inside any message (Latin words are cut at their own edges), so a message holding it holds its terms.
_CONTEXT_FREE = re.compile(r"[0-9a-z\u00c0-\u024f\s!-/:-@\[-`{-~]*")

Hit = tuple[MessageRecord, float]


def phrase_filter(phrase: str, tokenizer: Tokenizer) -> PhraseFilter:
    """The storage's prefilter of a quoted (folded) phrase: messages holding all its terms, or also those
    whose content holds it literally when its terms may be cut otherwise inside a message (Chinese:
    jieba's cut depends on the neighbours) or it has none (stop words only). The phrase itself is then
    checked on the folded content; a message in another script form (traditional characters, full
    width) that jieba also cuts otherwise is the one the prefilter may miss."""
    terms = tuple(tokenizer.tokens(phrase))
    literal = None if terms and _CONTEXT_FREE.fullmatch(phrase) else phrase
    return PhraseFilter(terms=terms, text=literal)


class MessageIndex:
    """Lexical (BM25 + quoted phrases) and semantic search over each user's chat messages.

    Shared by every toolbox of a :class:`~agent_memory.system.MemorySystem`. It installs its analyzer
    on ``layer.messages`` (every message written through the layer gets its terms in its transaction)
    and analyses, before a search, the user's messages stored without terms by another writer.
    What it keeps is bounded and shared by all users: the tokenizer, the embedder and at most
    ``vector_cache`` vectors.
    """

    def __init__(
        self,
        layer: AgentFusionDataLayer,
        *,
        tokenizer: Tokenizer | None = None,
        embedder: Embedder | None = None,
        embed_chars: int = 2000,
        k1: float = 1.2,
        b: float = 0.75,
        semantic_window: int = 2000,
        semantic_lexical: int = 200,
        vector_cache: int = 20_000,
    ) -> None:
        if semantic_window < 1 or semantic_lexical < 0 or vector_cache < 0:
            raise ValueError("need semantic_window >= 1, semantic_lexical >= 0 and vector_cache >= 0")
        self.layer = layer
        self.analyzer = MessageTermsAnalyzer(tokenizer)
        self.tokenizer = self.analyzer.tokenizer
        self.embedder: Embedder = embedder or HashingEmbedder()
        self.embed_chars = embed_chars
        self.k1, self.b = k1, b
        #: semantic search scores the scope's newest this many messages ...
        self.semantic_window = semantic_window
        #: ... and this many best lexical hits of the query's words
        self.semantic_lexical = semantic_lexical
        self._vector_cache = vector_cache
        self._vectors: OrderedDict[bytes, npt.NDArray[np.float32]] = OrderedDict()
        layer.messages.set_analyzer(self.analyzer)

    # -- searches ----------------------------------------------------------------------------------

    async def lexical(
        self,
        scope: Scope,
        query_text: str,
        *,
        role: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 20,
        after: tuple[float, int] | None = None,
    ) -> list[Hit]:
        """Messages of ``scope`` matching ``query_text``, best first, with scores in 0-1.

        Every quoted phrase must occur (after folding); the words, quoted or not, rank by BM25,
        normalised by the sum of the query terms' idf (1.0: every term present, about once). Ties
        go to the newer message. ``after`` is the ``(score, message_id)`` of the last hit of the
        previous page: the hits strictly after it in this order (keyset paging).
        """
        query = parse_query(query_text, self.tokenizer)
        if not query.phrases and not query.terms:
            return []
        ranked = await self._lexical(scope, query, role=role, since=since, until=until)
        return await self._page(scope, ranked, limit=limit, after=after)

    async def semantic(
        self,
        scope: Scope,
        query_text: str,
        *,
        role: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[Hit]:
        """Messages of ``scope`` most similar to ``query_text`` among the bounded candidate set (see the
        module docs): the cosine of the embedder's vectors over its ``similarity_floor`` rescaled to 0-1
        (the search's rule, so ``min_score`` means the same with every embedder; the n-grams' floor is 0),
        at least ``min_score`` and above 0."""
        words = ParsedQuery((), parse_query(query_text, self.tokenizer).terms)
        lexical = await self._lexical(scope, words, role=role, since=since, until=until) if words.terms else []
        rows = await self.layer.messages.recent_contents(
            scope,
            limit=self.semantic_window,
            role=role,
            since=since,
            until=until,
            ids=[mid for mid, _ in lexical[: self.semantic_lexical]],
        )
        if not rows:
            return []
        vectors = await self._embed([content for _, content in rows])
        query = (await self.embedder.embed([query_text]))[0]
        scores = above_floor(np.clip(vectors @ query, 0.0, 1.0), similarity_floor(self.embedder))
        found = [(mid, float(s)) for (mid, _), s in zip(rows, scores, strict=True) if s > 0 and s >= min_score]
        return await self._page(scope, found, limit=limit, after=None)

    # -- lexical ranking ---------------------------------------------------------------------------

    async def _lexical(
        self,
        scope: Scope,
        query: ParsedQuery,
        *,
        role: str | None,
        since: datetime | None,
        until: datetime | None,
    ) -> list[tuple[int, float]]:
        """``(message id, score)`` of every match of ``query`` in ``scope`` (unordered)."""
        messages = self.layer.messages
        await self._catch_up(scope.user_id)
        stats = await messages.term_statistics(scope, query.terms)
        if stats.documents == 0:
            return []
        phrases = [phrase_filter(p, self.tokenizer) for p in query.phrases]
        candidates = await messages.term_candidates(
            scope,
            any_of=() if phrases else query.terms,
            phrases=phrases,
            role=role,
            since=since,
            until=until,
            with_content=bool(phrases),
        )
        if phrases:
            patterns = query.patterns()
            candidates = [c for c in candidates if all(p.search(fold(c.content or "")) for p in patterns)]
        scores = self._bm25(candidates, query.terms, stats.documents, stats.average_length, stats.frequencies)
        if phrases:
            scores = np.maximum(scores, PHRASE_FLOOR) if query.terms else np.ones(len(candidates))
        return [(c.id, float(s)) for c, s in zip(candidates, scores, strict=True) if s > 0]

    def _bm25(
        self,
        candidates: Sequence[TermCandidate],
        terms: Sequence[str],
        n_docs: int,
        avg_length: float,
        frequencies: dict[str, int],
    ) -> npt.NDArray[np.float64]:
        """Normalised BM25 of each candidate: ``min(1, sum_t idf(t) * tf(t) / sum_t idf(t))`` over the
        query ``terms``, with the scope's statistics."""
        scores = np.zeros(len(candidates))
        if not terms or not candidates:
            return scores
        lengths = np.fromiter((c.length for c in candidates), dtype=np.float64, count=len(candidates))
        split = [c.terms.split(" ") if c.terms else [] for c in candidates]
        idf_sum = 0.0
        for term in terms:
            idf = float(bm25_idf(n_docs, frequencies.get(term, 0)))
            idf_sum += idf
            tf = np.fromiter((words.count(term) for words in split), dtype=np.float64, count=len(split))
            held = tf > 0
            if held.any():
                scores[held] += idf * bm25_tf(tf[held], lengths[held], avg_length, k1=self.k1, b=self.b)
        return np.minimum(1.0, scores / idf_sum) if idf_sum > 0 else scores

    async def _page(
        self, scope: Scope, scored: Sequence[tuple[int, float]], *, limit: int, after: tuple[float, int] | None
    ) -> list[Hit]:
        """``scored`` ordered by score (6 decimals) then id, both descending; keyset-cut after ``after``;
        the first ``limit`` as records."""
        ranked = sorted(((round(s, 6), mid) for mid, s in scored), reverse=True)
        if after is not None:
            ranked = [(s, mid) for s, mid in ranked if (s, mid) < (after[0], after[1])]
        ranked = ranked[: max(limit, 0)]
        records = await self.layer.messages.records(user_id=scope.user_id, ids=[mid for _, mid in ranked])
        return [(records[mid], s) for s, mid in ranked if mid in records]

    # -- keeping the store's terms complete --------------------------------------------------------

    async def _catch_up(self, user_id: str) -> None:
        """Analyse and store the terms of the user's messages written without them (by a layer without the
        analyzer, or before the engine existed). Shared by all processes: each message is analysed once."""
        await analyse_user(self.layer, self.analyzer, user_id)

    # -- vectors -----------------------------------------------------------------------------------

    async def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The embedder's vectors of ``texts`` (cut at ``embed_chars``), from the cache where it has them."""
        name = self.embedder.name.encode("utf-8")
        keys = [hashlib.sha256(name + b"\0" + t[: self.embed_chars].encode("utf-8")).digest() for t in texts]
        out = np.zeros((len(texts), self.embedder.dim), dtype=np.float32)
        todo: list[int] = []
        for i, key in enumerate(keys):
            vector = self._vectors.get(key)
            if vector is None:
                todo.append(i)
            else:
                out[i] = vector
                self._vectors.move_to_end(key)
        for start in range(0, len(todo), EMBED_BATCH):
            part = todo[start : start + EMBED_BATCH]
            found = await self.embedder.embed([texts[i][: self.embed_chars] for i in part])
            for i, vector in zip(part, found, strict=True):
                out[i] = vector
                if self._vector_cache:
                    self._vectors[keys[i]] = np.asarray(vector, dtype=np.float32)
        while len(self._vectors) > self._vector_cache:
            self._vectors.popitem(last=False)
        return out
