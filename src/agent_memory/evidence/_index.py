"""``MessageIndex``: an in-process index of each user's chat messages for lexical and semantic search.

Why in process: evidence search (seed 003) ranks a user's own messages, a few thousand to a few
hundred thousand rows, by BM25 with phrase filters; neither SQLite nor PostgreSQL offer that with
jieba tokens. The index is per user, built on the first search and then kept in step incrementally:

- Messages are append-only and ids grow with insertion, so a refresh reads only rows with an id above
  the last one seen (``layer.archive_state.messages_after``, per chat of the user).
- Before every search it asks for the user's row count and re-reads the last indexed row. Fewer rows
  than indexed, a changed or missing last row (a re-created or cleared database: the max id went
  down) or rows it cannot reach by id (ids restarted) trigger a full rebuild. Two small queries.
- Filters (the scope's visibility rule ``Scope.friend_mask``, role, ``[since, until)``) are applied
  before ranking, and BM25's statistics (N, df, average length) are those of the scope's visible
  messages: another friend's chat never changes a score, let alone shows up.

Memory is bounded: at most ``max_users`` users (least recently searched dropped first), at most
``max_messages_per_user`` messages per user (the oldest dropped, 10 % at a time; :meth:`stats` says
how many) and ``max_messages_total`` over all users. Per message it holds the record (content
included), its folded content once a phrase query has read it, about 12 bytes per distinct term in
postings and, once semantic search has embedded it, ``4 * dim`` bytes (1 KiB for the default
256-dimensional :class:`HashingEmbedder`). With the defaults that is at most 200k messages: about
1.5 KiB each for 200-character messages, some 300 MB in the worst case, typically far less.

Query parsing (quoted phrases and BM25 terms: :class:`ParsedQuery`, :func:`parse_query`) lives in
:mod:`._query` and is re-exported here.

>>> index = MessageIndex(layer)  # doctest: +SKIP
>>> hits = await index.lexical(Scope.of("u1", "mentor"), '"不吃辣" 火锅', role="user")  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import bisect
from array import array
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from data_layer import AgentFusionDataLayer, MessageRecord, Scope

from ..search import Embedder, HashingEmbedder, above_floor, similarity_floor
from ..search._scoring import bm25_idf, bm25_tf
from ..text import Tokenizer, fold
from ._query import ParsedQuery as ParsedQuery
from ._query import parse_query as parse_query

#: Rows per read of new messages (the repository's maximum).
READ_BATCH = 1000
#: Texts per call of the embedder.
EMBED_BATCH = 256
#: Batches at least this large are tokenised in a worker thread (keeps the event loop responsive).
THREAD_TOKENISE = 200
#: A message matching every quoted phrase scores at least this much.
PHRASE_FLOOR = 0.05

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Hit = tuple[MessageRecord, float]


def _micros(when: datetime) -> int:
    return (when - _EPOCH) // timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class IndexStats:
    """What the index holds of one user: indexed messages, messages dropped (oldest first) to stay
    within the cap, and how many are embedded."""

    messages: int
    dropped: int
    embedded: int


class _UserMessages:
    """One user's indexed messages, in id order, with postings, lengths and (lazily) vectors."""

    def __init__(self, user_id: str) -> None:
        self.user_id = user_id
        self.lock = asyncio.Lock()
        self.clear()

    def clear(self) -> None:
        self.records: list[MessageRecord] = []
        self.folded: list[str | None] = []  #: folded content, filled by the first phrase query
        self.lengths = array("I")
        self.postings: dict[str, tuple[array[int], array[int]]] = {}
        self.vectors: npt.NDArray[np.float32] | None = None
        self.embedded = np.zeros(0, dtype=bool)
        self.seen = 0  #: rows read since the last rebuild, dropped ones included
        self.dropped = 0
        self._arrays: dict[str, npt.NDArray[np.generic]] | None = None

    @property
    def last_id(self) -> int:
        return self.records[-1].id if self.records else 0

    def add(self, rows: Sequence[MessageRecord], terms: Sequence[Counter[str]]) -> None:
        for record, counts in zip(rows, terms, strict=True):
            doc = len(self.records)
            self.records.append(record)
            self.folded.append(None)
            self.lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                docs, tfs = self.postings.setdefault(term, (array("I"), array("I")))
                docs.append(doc)
                tfs.append(tf)
        self.seen += len(rows)
        if self.vectors is not None:
            grown = np.zeros((len(self.records), self.vectors.shape[1]), dtype=np.float32)
            grown[: len(self.vectors)] = self.vectors
            self.vectors = grown
        self.embedded = np.concatenate([self.embedded, np.zeros(len(rows), dtype=bool)])
        self._arrays = None

    def drop_oldest(self, k: int) -> None:
        """Forget the ``k`` oldest messages (postings are sorted by document, so cut and shift)."""
        if k <= 0:
            return
        for term in list(self.postings):
            docs, tfs = self.postings[term]
            start = bisect.bisect_left(docs, k)
            if start == len(docs):
                del self.postings[term]
                continue
            shifted = np.frombuffer(docs, dtype=np.uint32)[start:] - np.uint32(k)
            self.postings[term] = (array("I", shifted.tobytes()), tfs[start:])
        self.records = self.records[k:]
        self.folded = self.folded[k:]
        self.lengths = self.lengths[k:]
        self.vectors = self.vectors[k:] if self.vectors is not None else None
        self.embedded = self.embedded[k:]
        self.dropped += k
        self._arrays = None

    def folded_text(self, i: int) -> str:
        """Message ``i``'s content folded as queries are (kept: phrase queries re-read it often)."""
        text = self.folded[i]
        if text is None:
            content = self.records[i].content
            text = fold(content)
            self.folded[i] = text = content if text == content else text  # share the string when equal
        return text

    def arrays(self) -> dict[str, npt.NDArray[np.generic]]:
        """Per-message columns for filters (rebuilt after a change, not per query)."""
        if self._arrays is None:
            self._arrays = {
                "ids": np.fromiter((r.id for r in self.records), dtype=np.int64, count=len(self.records)),
                "times": np.fromiter((_micros(r.created_at) for r in self.records), np.int64, len(self.records)),
                "roles": np.array([r.role for r in self.records], dtype=object),
                "friends": np.array([r.friend_id for r in self.records], dtype=object),
                "lengths": np.frombuffer(self.lengths, dtype=np.uint32).astype(np.float64),
            }
        return self._arrays

    def mask(
        self, scope: Scope, role: str | None, since: datetime | None, until: datetime | None
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """``(visible, candidates)``: the scope's messages, and those also passing role and time."""
        cols = self.arrays()
        assert scope.user_id == self.user_id
        visible = np.asarray(scope.friend_mask(cols["friends"]), dtype=bool)
        cand = visible.copy()
        if role is not None:
            cand &= cols["roles"] == role
        if since is not None:
            cand &= cols["times"] >= _micros(since)
        if until is not None:
            cand &= cols["times"] < _micros(until)
        return visible, cand


class MessageIndex:
    """Lexical (BM25 + quoted phrases) and semantic search over each user's chat messages.

    Shared by every toolbox of a :class:`~agent_memory.system.MemorySystem`; each search refreshes
    the user's part first (see the module docs). Searches of one user are serialised by a lock.
    """

    def __init__(
        self,
        layer: AgentFusionDataLayer,
        *,
        tokenizer: Tokenizer | None = None,
        embedder: Embedder | None = None,
        max_users: int = 16,
        max_messages_per_user: int = 100_000,
        max_messages_total: int = 200_000,
        embed_chars: int = 2000,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        if max_users < 1 or max_messages_per_user < 10 or max_messages_total < max_messages_per_user:
            raise ValueError("need max_users >= 1, max_messages_per_user >= 10 and a total >= the per-user cap")
        self.layer = layer
        self.tokenizer = tokenizer or Tokenizer()
        self.embedder: Embedder = embedder or HashingEmbedder()
        self.max_users = max_users
        self.max_messages_per_user = max_messages_per_user
        self.max_messages_total = max_messages_total
        self.embed_chars = embed_chars
        self.k1, self.b = k1, b
        self._users: OrderedDict[str, _UserMessages] = OrderedDict()

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
        async with (u := self._user(scope.user_id)).lock:
            await self._refresh(u)
            visible, cand = u.mask(scope, role, since, until)
            scores = self._bm25(u, query.terms, visible)
            if query.phrases:
                patterns = query.patterns()
                for i in np.flatnonzero(cand):
                    cand[i] = all(p.search(u.folded_text(i)) for p in patterns)
                scores = np.where(cand, np.maximum(scores, PHRASE_FLOOR) if query.terms else 1.0, 0.0)
            else:
                cand &= scores > 0
            return self._ranked(u, np.flatnonzero(cand), scores, limit=limit, after=after)

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
        """Messages of ``scope`` most similar to ``query_text``: the cosine of the embedder's vectors over
        its ``similarity_floor`` rescaled to 0-1 (the search's rule, so ``min_score`` means the same with
        every embedder; the n-grams' floor is 0), at least ``min_score`` and above 0. Only the
        candidates are embedded, once each."""
        async with (u := self._user(scope.user_id)).lock:
            await self._refresh(u)
            _, cand = u.mask(scope, role, since, until)
            todo = np.flatnonzero(cand & ~u.embedded)
            if u.vectors is None:
                u.vectors = np.zeros((len(u.records), self.embedder.dim), dtype=np.float32)
            for start in range(0, len(todo), EMBED_BATCH):
                part = todo[start : start + EMBED_BATCH]
                texts = [u.records[i].content[: self.embed_chars] for i in part]
                u.vectors[part] = await self.embedder.embed(texts)
                u.embedded[part] = True
            query = (await self.embedder.embed([query_text]))[0]
            idx = np.flatnonzero(cand)
            scores = np.zeros(len(u.records))
            scores[idx] = above_floor(np.clip(u.vectors[idx] @ query, 0.0, 1.0), similarity_floor(self.embedder))
            keep = idx[(scores[idx] > 0) & (scores[idx] >= min_score)]
            return self._ranked(u, keep, scores, limit=limit, after=None)

    def stats(self, user_id: str) -> IndexStats | None:
        """What is indexed of ``user_id`` (``None`` before the first search)."""
        u = self._users.get(user_id)
        if u is None:
            return None
        return IndexStats(messages=len(u.records), dropped=u.dropped, embedded=int(u.embedded.sum()))

    def forget(self, user_id: str) -> None:
        """Drop a user's part of the index (it is rebuilt on the next search)."""
        self._users.pop(user_id, None)

    # -- scoring -----------------------------------------------------------------------------------

    def _bm25(self, u: _UserMessages, terms: Sequence[str], visible: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
        """Normalised BM25 of every message; statistics over the ``visible`` messages only."""
        scores = np.zeros(len(u.records))
        n_docs = int(visible.sum())
        if n_docs == 0 or not terms:
            return scores
        lengths = u.arrays()["lengths"]
        avg = float(lengths[visible].mean())
        idf_sum = 0.0
        for term in terms:
            docs_all, tfs_all = u.postings.get(term, (array("I"), array("I")))
            docs = np.frombuffer(docs_all, dtype=np.uint32).astype(np.intp)
            keep = visible[docs]
            docs, tfs = docs[keep], np.frombuffer(tfs_all, dtype=np.uint32)[keep]
            idf = float(bm25_idf(n_docs, docs.size))
            idf_sum += idf
            if docs.size:
                scores[docs] += idf * bm25_tf(tfs, lengths[docs], avg, k1=self.k1, b=self.b)
        return np.minimum(1.0, scores / idf_sum) if idf_sum > 0 else scores

    @staticmethod
    def _ranked(
        u: _UserMessages,
        idx: npt.NDArray[np.intp],
        scores: npt.NDArray[np.float64],
        *,
        limit: int,
        after: tuple[float, int] | None,
    ) -> list[Hit]:
        """``idx`` ordered by score (6 decimals) then id, both descending; keyset-cut after ``after``."""
        ids = u.arrays()["ids"][idx]
        rounded = np.round(scores[idx], 6)
        if after is not None:
            keep = (rounded < after[0]) | ((rounded == after[0]) & (ids < after[1]))
            idx, ids, rounded = idx[keep], ids[keep], rounded[keep]
        order = np.lexsort((-ids, -rounded))[: max(limit, 0)]
        return [(u.records[int(idx[i])], float(rounded[i])) for i in order]

    # -- keeping in step ---------------------------------------------------------------------------

    def _user(self, user_id: str) -> _UserMessages:
        u = self._users.get(user_id)
        if u is None:
            u = self._users[user_id] = _UserMessages(user_id)
            while len(self._users) > self.max_users:
                self._users.popitem(last=False)
        self._users.move_to_end(user_id)
        return u

    async def _refresh(self, u: _UserMessages) -> None:
        """Read what was appended since the last search; rebuild when storage went backwards."""
        messages = self.layer.messages
        total = await messages.count(user_id=u.user_id)
        if u.records:
            probe = await messages.get(user_id=u.user_id, message_id=u.last_id)
            if total < u.seen or probe != u.records[-1]:
                u.clear()
        if total > u.seen:
            await self._read_new(u)
            if u.seen < total:  # ids restarted below the last one seen: read everything again
                u.clear()
                await self._read_new(u)
        self._bound(u)

    async def _read_new(self, u: _UserMessages) -> None:
        start = u.last_id
        rows: list[MessageRecord] = []
        state = self.layer.archive_state
        for friend in await state.chats(user_id=u.user_id):
            after = start
            while True:
                batch = await state.messages_after(
                    user_id=u.user_id, friend_id=friend, after_id=after, limit=READ_BATCH
                )
                rows += batch
                if len(batch) < READ_BATCH:
                    break
                after = batch[-1].id
        rows.sort(key=lambda r: r.id)
        texts = [r.content for r in rows]
        if len(texts) >= THREAD_TOKENISE:
            terms = await asyncio.to_thread(self._analyse, texts)
        else:
            terms = self._analyse(texts)
        u.add(rows, terms)

    def _analyse(self, texts: Sequence[str]) -> list[Counter[str]]:
        return [Counter(self.tokenizer.tokens(text)) for text in texts]

    def _bound(self, u: _UserMessages) -> None:
        """Apply the per-user and total caps (oldest messages, then least recently searched users)."""
        if len(u.records) > self.max_messages_per_user:
            u.drop_oldest(len(u.records) - int(self.max_messages_per_user * 0.9))
        while len(self._users) > 1 and sum(len(x.records) for x in self._users.values()) > self.max_messages_total:
            oldest = next(iter(self._users))
            if oldest == u.user_id:
                break
            del self._users[oldest]
