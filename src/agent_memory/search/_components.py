"""The score components of one search over a :class:`UserIndex`, as dense per-slot vectors.

Each function takes the analysed query and returns one value per slot (0 where nothing matched):
BM25F over a memory and its conversation neighbours, tf-idf cosine smoothed over neighbours, the
tiered keyword score (exact 1.0, prefix 0.8, synonym 0.7) and embedding similarity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import partial

import numpy as np
import numpy.typing as npt

from ._index import UserIndex
from ._scoring import EXACT, PREFIX, SYNONYM, bm25_idf, bm25_tf

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Shortest term that may match by prefix: two Chinese characters or four latin letters.
MIN_PREFIX_CJK, MIN_PREFIX_LATIN = 2, 4


def _spread(index: UserIndex, slots: npt.NDArray[np.int64], values: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(own, neighbours)``: the values placed on their slots, and the weighted sum of neighbours' values."""
    own = np.zeros(index.capacity, dtype=np.float64)
    own[slots] = values
    return own, index.spread(slots, values)


def bm25f(
    index: UserIndex,
    query: Mapping[str, int],
    *,
    k1: float = 1.2,
    b: float = 0.75,
    idf: Mapping[str, float] | None = None,
) -> FloatArray:
    """BM25F: a memory's fields are its own text (weight 1) and its neighbours' (0.5, 0.25).

    ``query`` maps terms to their count in the query; ``idf`` (Lucene idf of the indexed terms) may be
    passed when the caller has it already. Lengths are expanded the same way as frequencies.
    """
    scores = np.zeros(index.capacity, dtype=np.float64)
    if not query or index.size == 0:
        return scores
    arrays = index.arrays()
    dl = arrays["expanded_length"]
    avg = float(dl[arrays["active"]].mean())
    for term, weight in (idf if idf is not None else index.bm25_idf(query)).items():
        # a term's part depends on the index only: kept until the next write (UserIndex.memo)
        part = index.memo(("bm25f", term, k1, b), partial(_bm25f_part, index, term, dl, avg, k1=k1, b=b))
        if part is None:
            continue
        hit, values = part
        scores[hit] += query[term] * weight * values
    return scores


def _bm25f_part(
    index: UserIndex, term: str, dl: FloatArray, avg: float, *, k1: float, b: float
) -> tuple[npt.NDArray[np.int64], FloatArray] | None:
    """``(slots, BM25 tf part)`` of one term over a memory and its neighbours, or ``None``."""
    postings = index.postings(term)
    if postings is None:
        return None
    own, around = _spread(index, *postings)
    tf = own + around
    hit = np.flatnonzero(tf)
    return hit, bm25_tf(tf[hit], dl[hit], avg, k1=k1, b=b)


def bm25_ceiling(index: UserIndex, query: Mapping[str, int], *, idf: Mapping[str, float] | None = None) -> float:
    """Sum of the query terms' weights (``idf``, by default :func:`text_weights`: every term, held by a
    memory or not): a memory holding each term about once scores about this much."""
    return float(sum(query[t] * w for t, w in (idf if idf is not None else text_weights(index, query)).items()))


def tfidf_cosine(
    index: UserIndex,
    query: Mapping[str, int],
    *,
    smooth: bool = True,
    informativeness: Callable[[str], float] | None = None,
    unheld: Callable[[str], float] | None = None,
) -> FloatArray:
    """Cosine of sublinear tf-idf vectors (idf ``ln((1+N)/(1+df))+1``), plus 0.5/0.25 of the neighbours'.

    Every query term is a dimension of the query vector, also one no memory holds: a memory sharing one
    word of a six-word message is not an exact match because the memories know nothing of the other
    five. Such a term has no idf here; it weighs the mean idf of the query's terms the memories hold,
    times ``unheld(term)`` (see :func:`text_weights`). ``informativeness`` (``term -> 0-1``) scales
    each query term.
    """
    dots = np.zeros(index.capacity, dtype=np.float64)
    if not query or index.size == 0:
        return dots
    held = {t: index.tfidf_idf(df) for t in query if (df := index.document_frequency(t)) > 0}
    typical = sum(held.values()) / len(held) if held else 0.0
    q_norm = 0.0
    for term, count in query.items():
        idf = held[term] if term in held else typical * (unheld(term) if unheld is not None else 1.0)
        wq = (1.0 + math.log(count)) * idf * (informativeness(term) if informativeness is not None else 1.0)
        q_norm += wq * wq
        postings = index.postings(term) if term in held else None
        if postings is None:
            continue
        slots, tf = postings
        dots[slots] += wq * (1.0 + np.log(tf)) * idf
    if q_norm <= 0:
        return dots
    norms = index.norms()
    cos = np.divide(dots, norms * math.sqrt(q_norm), out=np.zeros_like(dots), where=norms > 0)
    np.minimum(cos, 1.0, out=cos)
    if not smooth:
        return cos
    hit = np.flatnonzero(cos)
    return cos + index.spread(hit, cos[hit])


def query_weights(
    index: UserIndex, query: Mapping[str, int], informativeness: Callable[[str], float] | None = None
) -> dict[str, float]:
    """The weight of every query term in the keyword tiers: its BM25 idf over the user's memories times
    its general ``informativeness`` (``term -> 0-1``, e.g. :func:`agent_memory.text.informativeness`).

    A term no memory holds gets the idf of a document frequency of 0, the highest: it can still match by
    prefix, synonym or a word near in meaning (主子 -> 猫), and such a match is worth as much as a rare word.
    """
    terms = list(query)
    idf = bm25_idf(index.size, [index.document_frequency(t) for t in terms]).tolist()
    if informativeness is None:
        return dict(zip(terms, idf, strict=True))
    return {t: w * informativeness(t) for t, w in zip(terms, idf, strict=True)}


def text_weights(
    index: UserIndex,
    query: Mapping[str, int],
    informativeness: Callable[[str], float] | None = None,
    unheld: Callable[[str], float] | None = None,
) -> dict[str, float]:
    """The weight of every query term in the text score's ceiling (:func:`bm25_ceiling`): BM25 idf times
    ``informativeness`` for a term some memory holds; a term none holds weighs the mean idf of the held
    ones times ``unheld(term)`` (e.g. :func:`agent_memory.text.unheld_weight`) and its informativeness.

    Counting every term is what gives a score its absolute meaning: when the memories hold only 今天 of
    "主子今天胃口好多了", a memory holding 今天 covers a small part of the message, not all of it (counted
    over the held terms alone, it scored like an exact match). A term no memory holds says nothing about
    which memory matches, and is often what a question asks for (型号 in "我的手机是什么型号"), so it
    weighs as a typical word of the query, not as the rarest possible one; a word saying what is done or
    when (准备, 越来越) weighs less than one naming a thing the memories do not know (主子, 胃口).
    """
    terms = list(query)
    dfs = [index.document_frequency(t) for t in terms]
    idf = bm25_idf(index.size, dfs).tolist()
    held = [w for w, df in zip(idf, dfs, strict=True) if df > 0]
    typical = sum(held) / len(held) if held else 0.0
    weigh = informativeness or (lambda _: 1.0)
    less = unheld or (lambda _: 1.0)
    return {t: (w if df > 0 else typical * less(t)) * weigh(t) for t, w, df in zip(terms, idf, dfs, strict=True)}


def min_prefix(term: str) -> int:
    """The shortest query word that matches the words it begins (Latin and Chinese differ)."""
    return MIN_PREFIX_LATIN if term.isascii() else MIN_PREFIX_CJK


def keyword_tiers(
    index: UserIndex,
    query: Mapping[str, float],
    *,
    synonyms: Mapping[str, Mapping[str, float]] | None = None,
    siblings: Mapping[str, frozenset[str]] | None = None,
) -> FloatArray:
    """Weighted keyword coverage in 0-1: ``sum_q w_q * best_q / sum_q w_q``.

    ``best_q`` is the best tier over what the memory holds (its terms and stored keywords, with a
    keyword's weight; a neighbour's match counts half): exact 1.0, prefix 0.8, synonym 0.7 times the
    synonym's similarity. ``query`` maps query terms to weights (idf), ``synonyms`` maps a query term
    to ``{synonym: similarity}``.

    A word of the message is counted once, as itself: it is not also a prefix or compound match of
    another term. ``siblings`` (:func:`message_siblings` of the whole message; default: of ``query``'s terms)
    names the words each term must leave to themselves. The terms of "天气预报准吗" are 天气预报, 天气, 预报
    (a rare compound and its words); a memory saying only 天气 matched 天气 and, through it, the compound
    at the prefix tier, and so covered two of the three words rather than one.
    """
    total = sum(query.values())
    scores = np.zeros(index.capacity, dtype=np.float64)
    if total <= 0 or index.size == 0:
        return scores
    synonyms = synonyms or {}
    family = siblings if siblings is not None else message_siblings(query)
    for term, weight in query.items():
        similar = synonyms.get(term, {})
        skip = family.get(term, frozenset())
        key = ("tiers", term, tuple(sorted(similar.items())), tuple(sorted(skip)))
        part = index.memo(key, partial(_tier_part, index, term, similar, skip))
        if part is not None:
            hit, best = part
            scores[hit] += weight * best  # the same sums as adding the dense vector (zeros elsewhere)
    return scores / total


#: Words up to this long are matched with the message's other words through their substrings; a
#: longer one (a pasted token) is compared with each word instead.
_SUBSTRING_CHARS = 32


def message_siblings(words: Iterable[str]) -> dict[str, frozenset[str]]:
    """For each word of a message, the message's other words it contains or that contain it; computed
    once per message (a word's substrings looked up, not every pair of words compared).

    >>> sorted(message_siblings(["天气预报", "天气", "预报", "准"])["天气预报"])
    ['天气', '预报']
    """
    unique = list(dict.fromkeys(words))
    present = set(unique)
    found: dict[str, set[str]] = {w: set() for w in unique}
    for word in unique:
        n = len(word)
        if n > _SUBSTRING_CHARS:
            inside = {w for w in unique if w != word and w in word}
        else:
            inside = {word[i:j] for i in range(n) for j in range(i + 1, n + 1) if j - i < n} & present
        for other in inside:
            found[word].add(other)
            found[other].add(word)
    return {w: frozenset(s) for w, s in found.items()}


def _tier_part(
    index: UserIndex, term: str, similar: Mapping[str, float], skip: Collection[str] = ()
) -> tuple[npt.NDArray[np.int64], FloatArray] | None:
    """``(slots, best tier)`` of one query term (a neighbour's match counts half), or ``None``; the
    prefix and compound matches leave out ``skip`` (words the message weighs on their own)."""
    own = _own_tier(index, term, similar, skip)
    if own is None:
        return None
    best = np.zeros(index.capacity, dtype=np.float64)
    best[own[0]] = own[1]
    np.maximum(best, np.minimum(index.spread(*own), 0.5), out=best)
    hit = np.flatnonzero(best)
    return hit, best[hit]


def _own_tier(
    index: UserIndex, term: str, similar: Mapping[str, float], skip: Collection[str] = ()
) -> tuple[npt.NDArray[np.int64], FloatArray] | None:
    """``(slots, best tier)`` of one query term over what each memory holds itself, or ``None``."""
    best = np.zeros(index.capacity, dtype=np.float64)
    candidates: list[tuple[str, float]] = [(term, EXACT)]
    candidates += [(t, PREFIX) for t in index.expansions(term, min_prefix=min_prefix(term)) if t not in skip]
    candidates += [(s, SYNONYM * sim) for s, sim in similar.items() if s != term]
    for word, tier in candidates:
        for slots, values in _presence(index, word):
            value = tier * values
            better = value > best[slots]
            best[slots[better]] = value[better]
    hit = np.flatnonzero(best)
    return (hit, best[hit]) if hit.size else None


def own_words_match(
    index: UserIndex,
    query: Iterable[str],
    *,
    synonyms: Mapping[str, Mapping[str, float]] | None = None,
    siblings: Mapping[str, frozenset[str]] | None = None,
) -> npt.NDArray[np.bool_]:
    """Per slot, whether the memory itself (its text or stored keywords, not its conversation
    neighbours) holds a query term as :func:`keyword_tiers` matches one: exactly, by prefix (leaving
    each term's ``siblings`` to themselves) or as a synonym."""
    terms = list(dict.fromkeys(query))
    synonyms = synonyms or {}
    family = siblings if siblings is not None else message_siblings(terms)
    held = np.zeros(index.capacity, dtype=bool)
    for term in terms:
        similar = synonyms.get(term, {})
        skip = family.get(term, frozenset())
        key = ("own-tiers", term, tuple(sorted(similar.items())), tuple(sorted(skip)))
        part = index.memo(key, partial(_own_tier, index, term, similar, skip))
        if part is not None:
            held[part[0]] = True
    return held


def _presence(index: UserIndex, word: str) -> list[tuple[npt.NDArray[np.int64], FloatArray]]:
    """``(slots, values)`` where a memory holds ``word``: its stored keyword weight, then 1 in its text."""
    found = []
    keyword = index.keyword_postings(word)
    if keyword is not None:
        found.append((keyword[0], np.clip(keyword[1], 0.0, 1.0)))
    text = index.postings(word)
    if text is not None:
        found.append((text[0], np.ones(len(text[0]))))
    return found


def semantic(
    index: UserIndex,
    query_vector: npt.NDArray[np.float32] | None,
    *,
    among: npt.NDArray[np.bool_] | None = None,
    depth: int | None = None,
    floor: float = 0.0,
) -> FloatArray:
    """Cosine of the query embedding with each memory's (values under ``floor`` count as 0), for the
    memories ``among`` allows (all by default); with ``depth``, only the ``depth`` most similar keep theirs.

    A query shares some meaning with every memory, so without ``depth`` every memory is related and
    every later stage works on the whole index (at 100,000 memories that doubled a search's time). The
    memories past the nearest ``depth`` (ties at the cut are kept, so the set does not depend on slot
    order) can reach the results of a hybrid search only through their words, which they keep, and are
    left out of a semantic one; an index of at most ``depth`` candidates is unchanged.
    """
    matrix = index.embeddings()
    if matrix is None or query_vector is None:
        return np.zeros(index.capacity, dtype=np.float64)
    sims = np.clip(matrix @ query_vector, 0.0, 1.0).astype(np.float64)
    sims[sims < floor] = 0.0
    if among is not None:
        sims[~among] = 0.0
    if depth is not None and np.count_nonzero(sims) > depth:
        cut = float(sims[np.argpartition(-sims, depth - 1)[depth - 1]])
        sims[sims < cut - 1e-6] = 0.0  # ties within float rounding stay together (scores show 6 decimals)
    return sims


def query_terms(tokens: Sequence[str]) -> dict[str, int]:
    """Term counts of a tokenised query."""
    counts: dict[str, int] = {}
    for token in tokens:
        counts[token] = counts.get(token, 0) + 1
    return counts


#: How many of the most relevant memories pass relevance to their replies when they ask something, and
#: which share of it (``lift_replies``).
REPLY_SOURCES = 10
REPLY_SHARE = 0.9
#: When a query names one speaker, what the other speakers said weighs this share (``weigh_speakers``).
OTHERS_WEIGHT = 2 / 3
#: How many of a memory's heaviest terms are kept between searches for feedback (the query's own words
#: are skipped, so a few more than ``feedback_terms``' limit); a search that skips more reads them all.
FEEDBACK_KEPT = 24
#: Feedback postings are added in one pass (``np.bincount`` over every slot) when there are at least
#: 1/ONE_PASS as many of them as slots, else term by term: the same sums either way.
ONE_PASS = 8


def feedback_terms(
    index: UserIndex, slot: int, exclude: Mapping[str, int], *, limit: int = 8
) -> dict[str, tuple[float, float]]:
    """The ``limit`` heaviest tf-idf terms of a memory that are not in the query (ties by term), each
    with its smoothed idf and its ``1 + ln tf`` in the memory.

    Terms in more than 5 % of the memories (and over 50 of them) are left out: they link everything.
    """
    kept, complete = index.derived(("feedback", slot), lambda: _ranked_terms(index, slot, FEEDBACK_KEPT))
    found = _first_terms(kept, exclude, limit)
    if len(found) < limit and not complete:  # the query held too many of the kept ones
        found = _first_terms(_ranked_terms(index, slot, None)[0], exclude, limit)
    return found


def _first_terms(
    ranked: Sequence[tuple[str, float, float]], exclude: Mapping[str, int], limit: int
) -> dict[str, tuple[float, float]]:
    found: dict[str, tuple[float, float]] = {}
    for term, idf, log_tf in ranked:
        if term not in exclude:
            found[term] = (idf, log_tf)
            if len(found) == limit:
                break
    return found


def _ranked_terms(index: UserIndex, slot: int, keep: int | None) -> tuple[tuple[tuple[str, float, float], ...], bool]:
    """A memory's heaviest ``keep`` (all with ``None``) ``(term, idf, 1 + ln tf)`` by tf-idf weight (ties
    by term), without the common terms, and whether that is all of them."""
    common = max(50, int(0.05 * index.size))
    weighted = [
        ((log_tf := 1.0 + math.log(count)) * (idf := index.tfidf_idf(df)), term, idf, log_tf)
        for term, count in index.slot_terms(slot).items()
        if (df := index.document_frequency(term)) <= common
    ]
    weighted.sort(key=lambda wt: (-wt[0], wt[1]))
    kept = weighted if keep is None else weighted[:keep]
    return tuple((term, idf, log_tf) for _, term, idf, log_tf in kept), len(kept) == len(weighted)


def _log_tf(index: UserIndex, term: str) -> tuple[IntArray, FloatArray] | None:
    """``(slots, 1 + ln tf)`` of a term's postings: its tf-idf weight in each memory, but for the idf."""
    postings = index.postings(term)
    if postings is None:
        return None
    slots, tf = postings
    return slots, 1.0 + np.log(tf)


def propagate(
    index: UserIndex,
    relevance: FloatArray,
    query: Mapping[str, int],
    mask: npt.NDArray[np.bool_],
    *,
    sources: int = 3,
    share: float = 0.3,
    terms: int = 8,
) -> FloatArray:
    """Pseudo-relevance feedback: each of the ``sources`` best memories passes ``share * its relevance *
    link`` to the others, where ``link`` is the tf-idf cosine between them over the source's heaviest
    non-query terms (a memory that names the same place or person as a strong match gains). The
    result is rescaled so the best score is unchanged.
    """
    hit = np.flatnonzero(mask & (relevance > 0))
    if hit.size == 0:
        return relevance
    hit_top = hit[np.argpartition(-relevance[hit], sources - 1)[:sources]] if hit.size > sources else hit
    top = hit_top[np.lexsort((hit_top, -relevance[hit_top]))]
    # sum_i share * rel_i * cos(F_i, d) = (1 / |d|) * sum_i (share * rel_i / |F_i|) * dot(F_i, d):
    # one pass over the feedback terms' postings and one division for all sources together; in a small
    # index the postings are added up at once (in order, as the loop over terms adds them: the same sums)
    parts: list[tuple[IntArray, FloatArray]] = []
    scales: list[tuple[float, float, int]] = []  # per term: factor * idf, idf, postings
    own_links: list[tuple[int, float]] = []
    norms = index.norms()
    for slot in top:
        extra = feedback_terms(index, int(slot), query, limit=terms)
        if not extra:
            continue
        q_norm = math.sqrt(sum(idf * idf for idf, _ in extra.values()))
        factor = share * float(relevance[slot]) / q_norm
        self_dot = 0.0
        for term, (idf, own_log_tf) in extra.items():
            part = index.memo(("log-tf", term), partial(_log_tf, index, term))
            if part is None:
                continue
            parts.append(part)
            scales.append((factor * idf, idf, len(part[0])))
            self_dot += factor * idf * own_log_tf * idf
        own_links.append((int(slot), self_dot))
    acc = np.zeros(index.capacity, dtype=np.float64)
    counts = [n for _, _, n in scales]
    if parts and ONE_PASS * sum(counts) >= index.capacity:  # a small index: all postings in one pass
        log_tf = np.concatenate([lt for _, lt in parts])
        lift = np.repeat([f for f, _, _ in scales], counts) * log_tf * np.repeat([i for _, i, _ in scales], counts)
        acc += np.bincount(np.concatenate([s for s, _ in parts]), weights=lift, minlength=index.capacity)
    else:  # a few postings in a large index: each term's own, not passes over every slot
        for (slots, log_tf), (scaled, idf, _) in zip(parts, scales, strict=True):
            acc[slots] += scaled * log_tf * idf
    for slot, self_dot in own_links:
        acc[slot] -= self_dot  # a memory does not lift itself
    gain = np.divide(acc, norms, out=np.zeros_like(acc), where=(norms > 0) & mask)
    out = relevance + np.maximum(gain, 0.0)
    peak, new_peak = float(relevance[hit].max()), float(out.max())
    return out * (peak / new_peak) if new_peak > 0 else out


def lift_replies(
    index: UserIndex,
    relevance: FloatArray,
    mask: npt.NDArray[np.bool_],
    *,
    sources: int = REPLY_SOURCES,
    share: float = REPLY_SHARE,
) -> FloatArray:
    """Replies to matching questions: the turn after each of the ``sources`` most relevant memories that
    ask something (``IndexedMemory.asks``; the turn after: ``UserIndex.followers``, the next memory of
    the same type in the session) is at least ``share`` times as relevant as the question.

    In a conversation the answer is said in other words than the question: "How long have you had
    them?" matches "how long has Nate had his turtles", the reply "I've had them for 3 years now" holds
    none of its words but "had". Only that turn is lifted, and only when the filters let it through
    (``mask``); a memory of its own has no follower. Measured with ``agent-memory bench retrieval`` on
    LoCoMo dev (the answer is often the reply to a question the other speaker asked): it gains at
    depths 5 and 10; MemDaily and the Chinese allusion set are unchanged. The share is
    the question's: a reply never outranks the question it answers, and a statement passes nothing
    (lifting every next turn gained about half as much at the same share, in a simulation over the
    same lists).
    """
    hit = np.flatnonzero(mask & (relevance > 0))
    if hit.size == 0:
        return relevance
    if hit.size > sources:
        hit = hit[np.argpartition(-relevance[hit], sources - 1)[:sources]]
    asks = index.arrays()["asks"]
    followers = index.followers()
    asking = hit[asks[hit] & (followers[hit] >= 0)]
    if asking.size == 0:
        return relevance
    replies = followers[asking]
    keep = mask[replies]
    if not keep.any():
        return relevance
    out = relevance.copy()
    np.maximum.at(out, replies[keep], share * relevance[asking[keep]])
    return out


def weigh_speakers(
    relevance: FloatArray, said_by: IntArray, named: int, *, others: float = OTHERS_WEIGHT
) -> FloatArray:
    """The relevance of memories another person than ``named`` said, times ``others``; ``said_by`` is
    each slot's person (:class:`~._speakers.SpeakerNames`), -1 where no findable speaker is given.

    A question naming one person of a conversation ("what does Joanna do while she writes?") asks
    about that person: Joanna's own words ("I named her Tilly, and she's always with me while I
    write") answer it before Nate's "your full of great ideas Joanna!", which names her too. A memory
    without a speaker is left as it is, so only conversations written with speakers are affected;
    nothing is raised, so no memory becomes relevant through it. Measured with ``agent-memory bench
    retrieval`` on LoCoMo dev, after ``lift_replies``: each of its five conversations gains; the
    others' share of two thirds lies on the flat part of the curve, not at its best point.
    """
    hit = np.flatnonzero(relevance > 0)
    person = said_by[hit]
    other = hit[(person >= 0) & (person != named)]
    if other.size == 0:
        return relevance
    out = relevance.copy()
    out[other] *= others
    return out


def _cover(index: UserIndex, slots: IntArray, terms: Sequence[str]) -> FloatArray:
    """Per candidate slot and query term, how far the memory covers the term: 1 when it holds it, else
    ``min(0.5, sum of link weight x term frequency)`` over its conversation neighbours.

    One term at a time over all candidates: the term's postings are spread into a slot-sized buffer
    (and cleared again), then read at the candidates and at their neighbours (a Python loop over
    every candidate, term and neighbour took a fifth of a small index's search)."""
    cover = np.zeros((len(slots), len(terms)), dtype=np.float64)
    table, link_weights = index.neighbour_table()
    near = table[slots]
    linked = near >= 0
    near = np.where(linked, near, 0)
    weights = np.where(linked, link_weights[slots], 0.0)
    frequency = np.zeros(index.capacity, dtype=np.float64)
    for j, term in enumerate(terms):
        postings = index.postings(term)
        if postings is None:
            continue
        held, tf = postings
        frequency[held] = tf
        from_neighbours = (weights * frequency[near]).sum(axis=1)
        cover[:, j] = np.where(frequency[slots] > 0, 1.0, np.minimum(0.5, from_neighbours))
        frequency[held] = 0.0
    return cover


def coverage_rerank(
    index: UserIndex,
    scores: FloatArray,
    query: Mapping[str, float],
    candidates: Sequence[int],
    *,
    gamma: float = 1.0,
    mix: float = 1.0,
    picks: int | None = None,
) -> list[int]:
    """Re-order ``candidates`` (best first) so that together they cover more of the query.

    Greedy: the next memory maximises ``score / best_score * (1 - mix + mix * gain)``, where ``gain``
    is the idf-weighted share of the query terms it covers that earlier picks have not (a term in
    the memory counts 1, in a neighbour 0.5 at distance 1 and 0.25 at distance 2). Each pick
    discounts the terms it covered by ``gamma``. A question with two parts then gets memories for
    both parts; memories that add nothing keep their relative order after those that do.

    ``picks``: only the first ``picks`` places are chosen so; the other candidates follow in their
    given order (a search that returns ten of thirty candidates needs ten picks, not thirty).
    """
    total = sum(query.values())
    if len(candidates) < 2 or total <= 0:
        return list(candidates)
    terms = list(query)
    slots = np.asarray(candidates, dtype=np.int64)
    cover = _cover(index, slots, terms)
    remaining = np.asarray([query[t] for t in terms], dtype=np.float64)
    base = scores[slots] / max(float(scores[slots].max()), 1e-12)
    taken = np.zeros(len(candidates), dtype=bool)
    order: list[int] = []
    for _ in range(len(candidates) if picks is None else min(picks, len(candidates))):
        values = base * (1.0 - mix + mix * (cover @ remaining) / total)
        values[taken] = -np.inf
        pick = int(np.argmax(values))  # the first best: ties keep the given order
        order.append(candidates[pick])
        taken[pick] = True
        remaining *= 1.0 - gamma * cover[pick]
    return order + [c for c, done in zip(candidates, taken.tolist(), strict=True) if not done]
