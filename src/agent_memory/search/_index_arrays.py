"""Per-slot views of :class:`~agent_memory.search._index.UserIndex`: arrays, conversation links and filter masks.

These are derived structures, rebuilt lazily after a change rather than kept in step on every write: the
per-slot arrays (active, timestamp, length, friend, type), the neighbour links between consecutive memories
of one conversation (a sparse adjacency matrix and a fixed-width neighbour table) and the filter mask built
from them. They live in a mixin so the index module keeps only its write path and term statistics.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt
from scipy import sparse

from data_layer import Scope

from ._index_lazy import LazyList, LazyMap
from ._index_postings import FloatArray, IntArray, _Slot

#: Weights of the neighbours at distance 1 and 2 in a conversation.
NEIGHBOUR_WEIGHTS = (0.5, 0.25)
#: What a per-slot array holds for an empty slot, where it is not 0 (``speaker``: -1, no speaker).
_EMPTY = {"speaker": -1}


class SlotArraysMixin:
    """Arrays, neighbour links and masks of :class:`UserIndex`, derived from its slots and sessions."""

    link_seconds: float
    _slots: LazyList[_Slot | None]
    _sessions: dict[str, list[tuple[float, str, int]]] | LazyMap[str, list[tuple[float, str, int]]]
    _links: dict[str, IntArray] | LazyMap[str, IntArray]
    _dirty_sessions: set[str]
    _dirty_slots: set[int]
    _arrays: dict[str, np.ndarray] | None
    _adjacency: sparse.csr_matrix | None
    _neighbours: tuple[IntArray, FloatArray] | None
    _followers: IntArray | None
    #: every session's links at the last ``adjacency`` build (``_all_links``), ``None`` when not built
    _link_rows: IntArray | None

    def speaker_code(self, name: str) -> int:
        """A speaker's code in ``arrays()["speaker"]``: the index's own (:meth:`UserIndex.speaker_code`)."""
        raise NotImplementedError

    @property
    def capacity(self) -> int:
        """Number of slots (indexed memories plus free slots); score vectors have this length."""
        return len(self._slots)

    def arrays(self) -> dict[str, np.ndarray]:
        """Per-slot arrays: ``active``, ``ts``, ``length``, ``asks``, ``speaker``, ``friend``, ``type`` and
        ``expanded_length`` (with neighbours).

        Built once, then only the slots written since are refreshed (new arrays, so a caller's copy
        never changes under it); ``expanded_length`` is recomputed with the current links.
        """
        n = len(self._slots)
        if self._arrays is None:
            self._arrays = {
                "active": np.zeros(n, dtype=bool),
                "ts": np.zeros(n, dtype=np.float64),
                "length": np.zeros(n, dtype=np.float64),
                "asks": np.zeros(n, dtype=bool),
                "speaker": np.full(n, -1, dtype=np.int32),
                "friend": np.full(n, None, dtype=object),
                "type": np.full(n, None, dtype=object),
            }
            self._fill_slots(self._arrays, range(n))
        elif self._dirty_slots or len(self._arrays["active"]) != n:
            grown = {}
            for name in ("active", "ts", "length", "asks", "speaker", "friend", "type"):
                old = self._arrays[name]
                new = np.full(n, None if old.dtype == object else _EMPTY.get(name, 0), dtype=old.dtype)
                new[: min(n, len(old))] = old[:n]
                grown[name] = new
            self._fill_slots(grown, [i for i in self._dirty_slots if i < n])
            self._arrays = grown
        else:
            return self._arrays
        self._dirty_slots.clear()
        length = self._arrays["length"]
        self._arrays["expanded_length"] = length + self.adjacency() @ length
        return self._arrays

    def _fill_slots(self, arrays: dict[str, np.ndarray], slots: Iterable[int]) -> None:
        for i in slots:
            entry = self._slots[i]
            if entry is None:
                arrays["active"][i] = False
                arrays["ts"][i] = 0.0
                arrays["length"][i] = 0.0
                arrays["asks"][i] = False
                arrays["speaker"][i] = -1
                arrays["friend"][i] = None
                arrays["type"][i] = None
            else:
                arrays["active"][i] = True
                arrays["ts"][i] = entry.ts
                arrays["length"][i] = sum(entry.tf.values())
                arrays["asks"][i] = entry.memory.asks
                said_by = entry.memory.speaker
                arrays["speaker"][i] = -1 if said_by is None else self.speaker_code(said_by)
                arrays["friend"][i] = entry.memory.friend_id
                arrays["type"][i] = entry.memory.memory_type

    def adjacency(self) -> sparse.csr_matrix:
        """Symmetric slot-by-slot matrix of neighbour weights (0.5 at distance 1, 0.25 at distance 2)."""
        if self._adjacency is None:
            for session in self._dirty_sessions:
                self._links[session] = self._link(self._sessions.get(session, []))
                if not self._sessions.get(session):
                    self._sessions.pop(session, None)
                    self._links.pop(session, None)
            self._dirty_sessions.clear()
            n = len(self._slots)
            self._link_rows = self._all_links()
            a, b, distance = self._link_rows.T
            w = np.asarray(NEIGHBOUR_WEIGHTS, dtype=np.float64)[distance - 1]
            # each link both ways, in the order (a -> b, b -> a) link by link
            rows = np.stack([a, b], axis=1).ravel()
            cols = np.stack([b, a], axis=1).ravel()
            vals = np.repeat(w, 2)
            self._adjacency = sparse.csr_matrix((vals, (rows, cols)), shape=(n, n), dtype=np.float64)
            width = 2 * len(NEIGHBOUR_WEIGHTS)
            table = np.full((n, width), -1, dtype=np.int64)
            weights = np.zeros((n, width), dtype=np.float64)
            order = np.argsort(rows, kind="stable")  # a slot's neighbours in the order its links come
            by_row = rows[order]
            at = np.arange(len(by_row))
            starts = np.maximum.accumulate(np.where(np.r_[True, by_row[1:] != by_row[:-1]], at, 0)) if at.size else at
            place = at - starts
            table[by_row, place] = cols[order]
            weights[by_row, place] = vals[order]
            self._neighbours = (table, weights)
        return self._adjacency

    def _all_links(self) -> IntArray:
        """Every session's links as one ``(k, 3)`` array of ``(earlier slot, later slot, distance)``."""
        parts = [links for links in self._links.values() if len(links)]
        return np.concatenate(parts) if parts else np.zeros((0, 3), dtype=np.int64)

    def neighbour_table(self) -> tuple[IntArray, FloatArray]:
        """``(slots, weights)``: per slot, up to four neighbours (-1 pads) and their weights."""
        self.adjacency()
        assert self._neighbours is not None
        return self._neighbours

    def followers(self) -> IntArray:
        """Per slot that asks something (``asks``), the slot of the turn after it in its conversation
        session, or -1 (always -1 for a memory that asks nothing): its nearest later neighbour (within
        two turns and the link window) of the same memory type, so a gist written between a question
        and its reply (the archiver stamps it with its first message's time) is passed over. Kept until
        the next write."""
        if self._followers is None:
            arrays = self.arrays()  # also brings the links up to date
            links = self._link_rows if self._link_rows is not None else self._all_links()
            a, b, distance = links.T
            asking = arrays["asks"][a]  # only a question's reply is looked for
            a, b, distance = a[asking], b[asking], distance[asking]
            same = arrays["type"][a] == arrays["type"][b]
            a, b, distance = a[same], b[same], distance[same]
            followers = np.full(len(self._slots), -1, dtype=np.int64)
            for far in range(len(NEIGHBOUR_WEIGHTS), 0, -1):  # the farthest first: the nearest is kept
                followers[a[distance == far]] = b[distance == far]
            self._followers = followers
        return self._followers

    def spread(self, slots: IntArray, values: FloatArray) -> FloatArray:
        """Per slot, the weighted sum of its neighbours' ``values`` (given on ``slots``)."""
        if len(slots) * 30 > len(self._slots):  # many slots: the sparse matrix-vector product's sums
            dense = np.zeros(len(self._slots), dtype=np.float64)
            dense[slots] = values
            return np.asarray(self.adjacency() @ dense, dtype=np.float64)
        table, weights = self.neighbour_table()
        targets = table[slots].ravel()
        contrib = (weights[slots] * np.asarray(values, dtype=np.float64)[:, None]).ravel()
        ok = targets >= 0
        # weighted, the counts are float64 (numpy's stubs give every bincount integers)
        return np.asarray(np.bincount(targets[ok], weights=contrib[ok], minlength=len(self._slots)), dtype=np.float64)

    def _link(self, members: Sequence[tuple[float, str, int]]) -> IntArray:
        """``(earlier slot, later slot, distance)`` rows of the session's turns linked as neighbours."""
        links = []
        for i, (ts, _, slot) in enumerate(members):
            for distance in range(1, len(NEIGHBOUR_WEIGHTS) + 1):
                j = i + distance
                if j >= len(members) or members[j][0] - ts > self.link_seconds:
                    break
                links.append((slot, members[j][2], distance))
        return np.asarray(links, dtype=np.int64).reshape(-1, 3)

    def mask(
        self,
        *,
        scope: Scope | None = None,
        memory_types: Sequence[str] | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Slots that pass the filters; the friend filter is the scope's rule (:class:`data_layer.Scope`)."""
        arrays = self.arrays()
        keep = arrays["active"].copy()
        if start is not None:
            keep &= arrays["ts"] >= start.timestamp()
        if end is not None:
            keep &= arrays["ts"] < end.timestamp()
        if scope is not None:
            keep &= scope.friend_mask(arrays["friend"])
        if memory_types:
            keep &= np.isin(arrays["type"], list(memory_types))
        return keep
