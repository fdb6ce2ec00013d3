"""One search as a pipeline of named stages over a user's in-memory index.

    candidates -> lexical -> semantic -> fuse -> feedback -> (own) -> replies -> speaker -> time
    -> threshold -> rank -> coverage

- ``candidates``: slots the query may return (active, in the scope, type, time and keyword filters;
  the keyword rule is in :class:`SearchQuery`); a query of nothing but a time ("上周", "最近") relates
  every candidate of that time fully and skips the word stages (:meth:`SearchQuery.time_alone`);
- ``lexical``: the keyword tiers (exact 1.0, prefix 0.8, synonym 0.7 x similarity) and the text score
  (BM25F over a memory and its conversation neighbours, averaged with the tf-idf cosine), of the whole
  message and of each sentence, the best per memory; a query word weighs its idf over the user's
  memories times its general informativeness (今天 little, 魔术 much), and every word counts, also one
  no memory holds, so a score is the share of the message (or of one sentence) a memory covers;
- ``semantic``: embedding similarity of the 1,000 candidates nearest in meaning (semantic mode; in
  hybrid a memory's text score is the larger of its words' and ``share`` x its likeness in meaning,
  so it finds and orders what the words miss, under the recall threshold: ``Pipeline.semantic``);
- ``fuse``: relevance ``(w_kw * keyword + w_text * text) / (w_kw + w_text)`` (keyword mode: keyword only);
- ``feedback``: the three best memories lift memories sharing their heaviest other terms;
- ``replies``: the turn after one of the ten most relevant memories that asks something (a "?" ending a
  sentence, a "？"), in its conversation session, is at least 0.9 as relevant as the question: the
  answer to "How long have you had them?" holds none of its words (:func:`~._components.lift_replies`);
- ``speaker``: when the query names exactly one person who said something in its scope (metadata
  ``speaker``; :class:`~._speakers.SpeakerNames`), what the others said counts two thirds
  (:func:`~._components.weigh_speakers`);
- ``own``: beside the relevance that orders the hits, the one each hit reports (its ``score``, which
  ``min_score`` and the recall's threshold compare): the same where the memory's own words match one
  of the query's, else only what its likeness in meaning and a question it replies to give it; its
  neighbours' words and the feedback find and order it, they do not support it (:meth:`Pipeline.own`);
- ``time``: ``s = relevance x (w_kw + w_text + w_time x recency)``, reported as ``1 - (1 - s)^3``
  (``calibrate``: the same order, on a scale where 0.5 means about a fifth of the query is covered;
  the recall's similarity threshold is on this scale);
  recency measures the age from now, or, when the query names a time ("上周", "on 7 July, 2023"), the
  distance to that time (0 inside it): the question asks about then, not about the newest memory; a
  date written out also weighs the relevance by that distance, measured in the date's span;
- ``threshold``: scores under ``min_score`` are dropped;
- ``rank``: :class:`SearchResultRanker` (relevance 70 %, use 20 %, type 10 %); an event whose time has
  passed at the query's time (``as_of``, else now; ``agent_memory.history.lapsed``) ranks below a
  current memory of the same score, and its hit says ``past``;
- ``coverage``: greedy re-rank of the best 30 so a two-part question gets both parts.

Every stage but ``rank`` is pure over the index; ``rank`` reads the records (cached by revision).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from data_layer import MemoryRecord

from ..history import lapsed
from ..telemetry import SEARCH_SPAN, note
from ..text import TimeRange, content_word, informativeness, script_of, unheld_weight
from . import _components as c
from ._embeddings import above_floor, reads_sentences, similarity_floor
from ._index import UserIndex
from ._parts import sentence_parts
from ._query import SearchQuery
from ._scoring import calibrate, normalize_bm25, recency, relevance, top_k, with_time
from ._speakers import MAX_SPEAKERS, SpeakerNames

if TYPE_CHECKING:
    from ._engine import HybridMemorySearch

logger = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float64]
#: How many of the best candidates are fetched, ranked and re-ordered for coverage.
RERANK_DEPTH = 30
#: How many of the candidates nearest in meaning keep their embedding similarity (see ``semantic``).
SEMANTIC_DEPTH = 1000


#: How many of the memories nearest in meaning :meth:`Pipeline.other_script` looks at.
OTHER_SCRIPT_DEPTH = 50
#: The calibrated score at which the words support a memory (the recall's default similarity threshold:
#: see ``calibrate``). Under it, the memories nearest in meaning take an equal part in the order
#: (:func:`fuse_ranks`): a message that alludes to something in other words is ordered by meaning as
#: much as by its few shared words; over it, the words decide, as a question that names its subject is
#: answered by the memories that name it (a sentence encoder ranks "what did Caroline research?" with
#: every memory of Caroline alike). The scores themselves never change: the recall still takes what the
#: words support.
WORDS_DECIDE = 0.5
#: The constant of reciprocal rank fusion: a place ``r`` (from 0) in a list counts ``1 / (RRF_K + r + 1)``.
#: 60 is the value of its authors (Cormack, Clarke and Buettcher, 2009), used as is, not fitted here.
RRF_K = 60


def fuse_ranks(words: Sequence[int], meaning: Sequence[int]) -> list[int]:
    """``words`` (the ranker's order) re-ordered by reciprocal rank fusion with ``meaning`` (the same
    candidates nearest in meaning first, or some of them): the words and the meaning each place a memory,
    and the one both place high comes first. Ties keep the words' order.

    >>> fuse_ranks([1, 2, 3], [3])
    [3, 1, 2]
    """
    place = {slot: r for r, slot in enumerate(meaning)}
    value = {
        slot: 1.0 / (RRF_K + r + 1) + (1.0 / (RRF_K + place[slot] + 1) if slot in place else 0.0)
        for r, slot in enumerate(words)
    }
    return sorted(words, key=lambda slot: -value[slot])


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result: the stored memory, its relevance ``score`` (0-1) and how it was made up.

    ``score`` is what ``min_relevance_score`` is compared with; ``rank_score`` (relevance 70 %,
    interaction 20 %, type 10 %) orders the results together with query coverage.
    """

    record: MemoryRecord
    score: float
    rank_score: float
    keyword: float
    text: float
    semantic: float
    recency: float
    keywords: tuple[str, ...] = ()
    #: the event's time has passed at the query's time (``agent_memory.history.lapsed``): found, but history
    past: bool = False

    @property
    def memory_key(self) -> str:
        """The memory's key."""
        return self.record.memory_key

    @property
    def summary(self) -> str:
        """The memory's summary."""
        return self.record.summary


class SearchResults(list[SearchHit]):
    """The hits of one search, best first (a plain list of :class:`SearchHit` to every caller), and
    :attr:`expanded`: the query terms the engine searched for, in query order, followed by the synonym
    terms (``keyword_synonyms``, the thesaurus, the words near in meaning) it also matched them with.

    ``expanded`` is recorded by the pipeline while it runs, so it is what the search used (folded and
    stemmed terms, e.g. ``('数据库', 'databas', '资料库')``), not a second analysis of the query.
    Prefix matches are not listed (they depend on each memory's words). :attr:`period` is the time a
    query of nothing but a time listed ("最近", :meth:`SearchQuery.time_alone`); then nothing was
    matched by words and ``expanded`` is empty.
    """

    __slots__ = ("expanded", "period")

    def __init__(
        self, hits: Iterable[SearchHit] = (), *, expanded: Sequence[str] = (), period: TimeRange | None = None
    ) -> None:
        super().__init__(hits)
        self.expanded: tuple[str, ...] = tuple(expanded)
        self.period = period

    def copy(self) -> SearchResults:
        """A new list of the same hits with the same ``expanded`` terms and ``period``."""
        return SearchResults(self, expanded=self.expanded, period=self.period)


def expanded_terms(terms: Iterable[str], synonyms: Mapping[str, Mapping[str, float]]) -> tuple[str, ...]:
    """Query terms, then their synonym terms (most similar first), each once."""
    ordered = list(terms)
    for term in list(ordered):
        ordered += sorted(synonyms.get(term, {}), key=lambda s: (-synonyms[term][s], s))
    return tuple(dict.fromkeys(ordered))


class Pipeline:
    """The stages of one search of ``engine`` over ``index`` (see the module docs).

    After :meth:`run`, :attr:`expanded` holds the query terms and synonyms the search used.
    """

    def __init__(self, engine: HybridMemorySearch, index: UserIndex) -> None:
        self.engine = engine
        self.index = index
        zeros = np.zeros(index.capacity)
        self.keyword: FloatArray = zeros
        self.text: FloatArray = zeros
        self.semantic_: FloatArray = zeros
        #: the text score a memory's likeness in meaning gives it (hybrid mode; see ``semantic``)
        self.meaning: FloatArray = zeros
        #: per slot, the factor the time stage multiplies relevance by (a date's distance, else 1)
        self.dated: FloatArray = np.ones(index.capacity)
        self.fresh: FloatArray = zeros
        self.expanded: tuple[str, ...] = ()
        self.period: TimeRange | None = None

    async def run(self, query: SearchQuery, synonyms: Mapping[str, Mapping[str, float]]) -> SearchResults:
        """The hits of ``query``, best first; ``synonyms`` maps query terms to synonym terms."""
        terms = c.query_terms(self.engine.analyzer.tokenizer.tokens(query.text))
        self.expanded = expanded_terms(terms, synonyms if query.mode != "semantic" else {})
        hits = await self._hits(query, terms, synonyms)
        return SearchResults(hits, expanded=self.expanded, period=self.period)

    async def _hits(
        self, query: SearchQuery, terms: Mapping[str, int], synonyms: Mapping[str, Mapping[str, float]]
    ) -> list[SearchHit]:
        if self.index.size == 0:
            return []
        mask = self.candidates(query)
        note(SEARCH_SPAN, {"agent_memory.search.candidates": int(mask.sum())})  # the search's span, if any
        if not mask.any():
            return []
        alone = self.period = query.time_alone()
        lexical = query.mode != "semantic" and bool(terms) and alone is None
        weights = c.query_weights(self.index, terms, informativeness) if lexical else {}
        if alone is not None:  # a time alone: every memory of that time matches it fully
            self.expanded = ()
            rel = np.where(mask & self.index.mask(start=alone.start, end=alone.end), 1.0, 0.0)
        else:
            if lexical:
                self.lexical(query, terms, weights, synonyms)
            if query.mode == "semantic" or (query.mode == "hybrid" and self.engine.semantic_share > 0):
                await self.semantic(query, mask)
            rel = np.where(mask, self.fuse(query), 0.0)
        own = rel
        if lexical:  # what words and a conversation say; semantic mode orders by meaning alone
            rel = c.propagate(self.index, rel, terms, mask)
            own = self.own(query, terms, rel, synonyms)
            rel = self.speaker(query, c.lift_replies(self.index, rel, mask), mask)
            own = np.minimum(rel, self.speaker(query, c.lift_replies(self.index, own, mask), mask))
        scores = self.time(query, rel)
        supported = self.timed(own)  # what is reported; the order is the scores'
        scores = self.threshold(query, scores, supported=supported)
        depth = max(query.limit, RERANK_DEPTH)
        ordered = top_k(scores, depth, tie_key=self.index.tie_key)
        finds = lexical and query.mode == "hybrid" and reads_sentences(self.engine.embedder)
        nearest = self.nearest(scores, depth) if finds else []
        if ordered and float(scores[ordered[0]]) >= WORDS_DECIDE:
            nearest = []  # the words support a memory: their order stands
        pool = ordered + [s for s in nearest if s not in set(ordered)]
        if not pool:
            return []
        records = await self.engine._records(query.scope.user_id, self.index, pool)
        rank, ordered = self.rank(query, scores, records, pool)
        if lexical:
            ordered = self.coverage(rank, weights, ordered, picks=query.limit)
        if nearest:
            ordered = fuse_ranks(ordered, [s for s in nearest if s in rank])
        at = query.as_of or query.at
        return [self._hit(s, records[s], supported, rank, at) for s in ordered[: query.limit]]

    # -- stages ------------------------------------------------------------------------------------

    def candidates(self, query: SearchQuery) -> npt.NDArray[np.bool_]:
        """Slots the query may return: the scope, type and time filters, then the keyword filter."""
        mask = self.index.mask(scope=query.scope, memory_types=query.memory_types, start=query.start, end=query.end)
        if query.keywords is not None and mask.any():
            mask &= self.holding(query.keywords)
        return mask

    def holding(self, keywords: Sequence[str]) -> npt.NDArray[np.bool_]:
        """Slots holding at least one of ``keywords``: all of a keyword's search terms among the memory's
        terms or its stored keywords' terms (the rule is in :class:`SearchQuery`)."""
        tokenizer = self.engine.analyzer.tokenizer
        held = np.zeros(self.index.capacity, dtype=bool)
        for keyword in keywords:
            terms = tokenizer.unique_tokens(keyword)
            if not terms:
                continue  # only stop words or punctuation: held by no memory
            holds = np.ones(self.index.capacity, dtype=bool)
            for term in terms:
                present = np.zeros(self.index.capacity, dtype=bool)
                for postings in (self.index.postings(term), self.index.keyword_postings(term)):
                    if postings is not None:
                        present[postings[0]] = True
                holds &= present
            held |= holds
        return held

    def lexical(
        self,
        query: SearchQuery,
        terms: Mapping[str, int],
        weights: Mapping[str, float],
        synonyms: Mapping[str, Mapping[str, float]],
    ) -> None:
        """Keyword tiers and, in hybrid mode, the text score, of the whole message and of each of its
        sentences (:func:`~._parts.sentence_parts`); each memory keeps those of the part it matches best.

        Every term of a part weighs in both scores, held by a memory or not (``weights``: keyword weights
        of :func:`~._components.query_weights`; the text ceiling: :func:`~._components.text_weights`),
        so a memory matching one everyday word of a message scores low, and the memory answering the
        last sentence of a long message scores as it would for that sentence alone. A sentence counts
        for a memory only when the memory matches one of its content words (a thing or quality,
        :func:`~agent_memory.text.content_word`): "今天呢？主子胃口好多了" is not answered by a memory
        that says 今天. The filter keywords are searched with every sentence."""
        tokenizer = self.engine.analyzer.tokenizer
        extra = c.query_terms(tokenizer.tokens(" ".join(query.keywords or ())))
        common = {t: n for t, n in extra.items() if t in terms}
        parts = sentence_parts(query.message or query.text, tokenizer.tokens, terms=terms, common=common)
        family = c.message_siblings(terms)  # once: every part leaves the message's own words to themselves
        self.keyword, self.text = self._part(query, terms, weights, synonyms, siblings=family)
        if not parts:
            return
        best = self._relevance(query, self.keyword, self.text)
        for part in parts:
            content = {t: weights[t] for t in part if content_word(t)}
            if not content:
                continue
            keyword, text = self._part(query, part, weights, synonyms, siblings=family)
            said = c.keyword_tiers(self.index, content, synonyms=dict(synonyms), siblings=family) > 0
            better = said & (self._relevance(query, keyword, text) > best)
            best = np.where(better, self._relevance(query, keyword, text), best)
            self.keyword = np.where(better, keyword, self.keyword)
            self.text = np.where(better, text, self.text)

    def _relevance(self, query: SearchQuery, keyword: FloatArray, text: FloatArray) -> FloatArray:
        return relevance(keyword, text, self.engine.weights) if query.mode == "hybrid" else keyword

    def _part(
        self,
        query: SearchQuery,
        part: Mapping[str, int],
        weights: Mapping[str, float],
        synonyms: Mapping[str, Mapping[str, float]],
        *,
        siblings: Mapping[str, frozenset[str]],
    ) -> tuple[FloatArray, FloatArray]:
        """``(keyword tiers, text score)`` of the query terms ``part`` (the text score only in hybrid mode);
        ``siblings``: :func:`~._components.message_siblings` of the whole message."""
        own = {t: weights[t] for t in part}
        keyword = c.keyword_tiers(self.index, own, synonyms=dict(synonyms), siblings=siblings)
        if query.mode != "hybrid":
            return keyword, self.text
        held = {t: w for t, w in own.items() if self.index.document_frequency(t) > 0}
        ceiling = c.bm25_ceiling(self.index, part, idf=c.text_weights(self.index, part, informativeness, unheld_weight))
        bm = normalize_bm25(c.bm25f(self.index, part, idf=held), ceiling)
        cosine = c.tfidf_cosine(self.index, part, informativeness=informativeness, unheld=unheld_weight)
        return keyword, 0.5 * bm + 0.5 * np.minimum(1.0, cosine)

    async def semantic(self, query: SearchQuery, mask: npt.NDArray[np.bool_]) -> None:
        """Embedding similarity of the :data:`SEMANTIC_DEPTH` nearest candidates; in hybrid mode it gives a
        memory up to ``semantic_share`` of the text score where its words give less (below); a query none
        of whose words the embedder knows gets no vector, and the text score is the words' alone. When
        the embedder fails (an embedding endpoint that is down), a hybrid search matches words only and
        logs a warning; a semantic search, which has nothing else to go on, raises.

        In hybrid mode a memory's text score is the stronger of two kinds of evidence: its words, or its
        likeness in meaning, ``share * above``, where ``above`` is the cosine over
        the embedder's :func:`similarity_floor` rescaled to 0-1. So the words' score is never lowered (taken as a share
        of it, the vectors put "下周要做季度项目汇报" under the recall threshold for "汇报越来越近了") nor
        raised (added to it, they lifted weak word matches over the threshold: searched in another
        user's memories, where nothing is about them, 16 of the 84 allusion questions listed a memory at
        0.5 or more, against 8 with words alone and 10 now, ``benchmarks/zh_allusion/measure.py``),
        and a memory alike in meaning alone scores at most ``share`` of the text score, about 0.39
        calibrated: under the 0.5 threshold. The vectors find and order what the words miss; the recall
        block takes what the words support, as it would without them. Texts on different subjects
        share some direction (with the packaged Chinese word vectors, "café" and "旅行计划改成去成都" 0.10,
        everyday sentences 0.3-0.46): under the floor a cosine says nothing and the memory is not listed
        for it. Chosen with ``agent-memory bench retrieval`` and the word vectors, against cutting the
        share at 0.2: the Chinese allusion set gains at depth 10, MemDaily and LoCoMo stay where they
        were. Semantic mode, which asks for the order by meaning alone, keeps
        every cosine as it is."""
        engine = self.engine
        try:
            await engine._ensure_vectors(self.index)
            vector = await engine.query_vector(query.text)
        except Exception:
            if query.mode != "hybrid":
                raise
            logger.warning("embedding the query failed; this search matches words only", exc_info=True)
            return
        floor = similarity_floor(engine.embedder) if query.mode == "hybrid" else 0.0
        self.semantic_ = c.semantic(self.index, vector, among=mask, depth=SEMANTIC_DEPTH, floor=floor)
        if query.mode == "hybrid" and self.semantic_.any():
            above = above_floor(self.semantic_, floor)
            share = np.full(self.index.capacity, engine.semantic_share)
            share[self.other_script(query.text)] = 1.0
            self.meaning = share * above
            self.text = np.maximum(self.text, self.meaning)

    def other_script(self, text: str) -> list[int]:
        """The memories near in meaning written in a script the query does not use (a Chinese memory for
        an English question, and the other way round): no word can relate them, so the likeness of a
        multilingual embedder counts whole there, and a strong one (a cosine of about 0.5 with the
        sentence encoder) reaches the recall's threshold. An unrelated memory in the other language
        stays near 0 (the sentence encoder's cosines of unrelated texts are mostly under its floor)."""
        asked = script_of(text)
        if asked is None:
            return []
        memory = self.index.memory
        return [  # the nearest only: a memory further away could not reach the threshold anyway
            s
            for s in top_k(self.semantic_, OTHER_SCRIPT_DEPTH)
            if (told := script_of(" ".join(memory(s).terms))) is not None and told != asked
        ]

    def nearest(self, scores: FloatArray, depth: int) -> list[int]:
        """The ``depth`` listed memories nearest the query in meaning (by cosine, over the embedder's
        :func:`similarity_floor`), nearest first; none without vectors.

        A date written out weighs the cosine as it weighs the relevance (:attr:`pull`, see ``time``): the
        question asks about then, and a sentence encoder does not read dates ("What did Maria start on
        3 June, 2023?" is as near to what she started a year before), so ordered by cosine alone the
        memories of other times took the meaning's places in the fusion and pushed out of the results the
        memories of then that the words had placed first."""
        likeness = np.where(scores > 0, self.semantic_ * self.dated, 0.0)
        return top_k(likeness, depth, tie_key=self.index.tie_key)

    def speaker(self, query: SearchQuery, rel: FloatArray, mask: npt.NDArray[np.bool_]) -> FloatArray:
        """``rel`` with the other speakers' memories weighed less when the query names exactly one person
        who said something the query may return (who a query names: :class:`~._speakers.SpeakerNames`;
        the weighing: :func:`~._components.weigh_speakers`). A person named who said nothing in the
        query's scope (another AI friend's chat) does not count."""
        index = self.index
        speakers = index.speakers()
        if not speakers or len(speakers) > MAX_SPEAKERS:
            return rel
        table = index.derived(("speaker-names",), lambda: SpeakerNames.of(index.speaker_names()))
        people = table.named(query.text)
        if not people:
            return rel
        codes = index.arrays()["speaker"]
        said_by = np.where(codes >= 0, table.person_of[codes], -1)
        present = [p for p in people if bool(np.any(said_by[mask] == p))]
        return c.weigh_speakers(rel, said_by, present[0]) if len(present) == 1 else rel

    def own(
        self, query: SearchQuery, terms: Mapping[str, int], rel: FloatArray, synonyms: Mapping[str, Mapping[str, float]]
    ) -> FloatArray:
        """The relevance a memory has on its own: ``rel`` where its own words match one of the query's
        (:func:`~._components.own_words_match`), else what its likeness in meaning gives it alone.

        A memory's conversation neighbours' words (the BM25F neighbour fields, the smoothed cosine, a
        neighbour's keyword at half) and the feedback of the best matches (``propagate``) find it and
        order it among the others, but do not say it is about the message: "多穿点，喝点热水" holds
        none of the words of "想去她屋里玩，又怕一直打喷嚏", only its neighbour "换季了一直打喷嚏"
        does. The reported score, which the recall's threshold reads, is this relevance (and the reply
        to a matching question its share of the question's, ``lift_replies``); the order stays that of
        ``rel``."""
        held = c.own_words_match(self.index, terms, synonyms=dict(synonyms), siblings=c.message_siblings(terms))
        alone = self._relevance(query, np.zeros(self.index.capacity), self.meaning)
        return np.where(held, rel, np.minimum(rel, alone))

    def fuse(self, query: SearchQuery) -> FloatArray:
        """Relevance in 0-1 by mode."""
        if query.mode == "keyword":
            return self.keyword
        if query.mode == "semantic":
            return self.semantic_
        return relevance(self.keyword, self.text, self.engine.weights)

    def time(self, query: SearchQuery, rel: FloatArray) -> FloatArray:
        """Scores with the recency of each related memory (an unrelated memory stays at 0): its age, or
        its distance to the time the query names.

        A date written out ("on 9 November, 2022", "in May 2023", "3月4日") says which memories the
        question is about, so it also weighs the relevance: ``recency(distance, half-life = the span)``,
        1 inside the span, 0.75 one span away, never under 0.5. A memory of another time answers another
        question; the pull is measured in spans, so "in 2023" forgives weeks and "on 9 May" a day.
        Only when some related memory is from then: a date no memory was written on is what the
        memories are about ("03月04日是谁的生日", a deadline), not when they were said. A span counted
        from now ("上周", "today") never weighs the relevance: such words are as often small talk
        ("今天天气真好，...") as the subject of the question.
        """
        related = np.flatnonzero(rel > 0)
        stamps = self.index.arrays()["ts"][related]
        named = query.named
        if named is None:
            ages = (query.at.timestamp() - stamps) / 86_400.0
        else:  # the distance to the time the query names (0 inside it)
            lo, hi = named.start.timestamp(), named.end.timestamp()
            ages = (np.maximum(lo - stamps, 0.0) + np.maximum(stamps - hi, 0.0)) / 86_400.0
        self.dated = np.ones(self.index.capacity)
        if named is not None and named.calendar:
            span_days = max((named.end - named.start).total_seconds() / 86_400.0, 1.0)
            if ages.size and ages.min() == 0.0:  # some related memory is from then
                self.dated[related] = recency(ages, span_days)
        self.fresh = np.zeros(self.index.capacity)
        self.fresh[related] = recency(ages, self.engine.half_life_days)
        return self.timed(rel)

    def timed(self, rel: FloatArray) -> FloatArray:
        """Calibrated scores of ``rel`` with the recency and date factors the last :meth:`time` found (for
        a relevance no larger than its, slot by slot: the memories it related)."""
        related = np.flatnonzero(rel > 0)
        scores = np.zeros(self.index.capacity)
        weighed = rel[related] * self.dated[related]
        scores[related] = calibrate(with_time(weighed, self.fresh[related], self.engine.weights))
        return scores

    @staticmethod
    def threshold(query: SearchQuery, scores: FloatArray, *, supported: FloatArray | None = None) -> FloatArray:
        """Scores under ``min_score`` (and exact zeros) dropped; compared as reported (6 decimals), so
        a caller passing back a score it was shown keeps that memory. With ``supported`` (the scores
        reported, :meth:`own`), a memory whose reported score is under ``min_score`` is dropped too."""
        scores[np.round(scores, 6) < max(query.min_score, 1e-12)] = 0.0
        if supported is not None:
            scores[np.round(supported, 6) < query.min_score] = 0.0
        return scores

    def rank(
        self, query: SearchQuery, scores: FloatArray, records: Mapping[int, MemoryRecord], ordered: list[int]
    ) -> tuple[dict[int, float], list[int]]:
        """Ranker scores of the candidates, and the candidates in ranker order (ties: score, then key)."""
        rank = {
            slot: self.engine.ranker.score(
                relevance=float(scores[slot]),
                access_count=records[slot].access_count,
                last_accessed_at=records[slot].last_accessed_at,
                memory_type=records[slot].memory_type,
                now=query.at,
                lapsed=lapsed(records[slot], query.as_of or query.at),
            )
            for slot in ordered
            if slot in records
        }
        keys = {i: self.index.tie_key(i) for i in rank}
        return rank, sorted(rank, key=lambda s: (-rank[s], -round(float(scores[s]), 9), keys[s]))

    def coverage(
        self, rank: Mapping[int, float], weights: Mapping[str, float], ordered: list[int], *, picks: int
    ) -> list[int]:
        """Greedy coverage re-rank of the ranked candidates (the first ``picks`` places)."""
        vector = np.zeros(self.index.capacity)
        vector[ordered] = [rank[s] for s in ordered]
        return c.coverage_rerank(self.index, vector, weights, ordered, picks=picks)

    def _hit(
        self, slot: int, record: MemoryRecord, scores: FloatArray, rank: Mapping[int, float], at: datetime
    ) -> SearchHit:
        return SearchHit(
            record=record,
            score=round(float(scores[slot]), 6),
            rank_score=rank[slot],
            keyword=round(float(self.keyword[slot]), 6),
            text=round(float(self.text[slot]), 6),
            semantic=round(float(self.semantic_[slot]), 6),
            recency=round(float(self.fresh[slot]), 6),
            keywords=tuple(dict.fromkeys(k for k, _ in self.index.memory(slot).keywords)),
            past=lapsed(record, at),
        )
