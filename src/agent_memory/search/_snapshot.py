"""Snapshots of a built :class:`UserIndex`: saved after a build, loaded by the next process instead of a rebuild.

Building a user's index reads and analyses every row (about 19 s at 100,000 memories); loading a
snapshot maps a few numpy arrays and makes the Python objects a search touches on demand
(:mod:`._index_lazy`), so the first search of a new process costs tens of milliseconds.

>>> store = SnapshotStore("/var/lib/agent-memory/search-index")  # doctest: +SKIP
>>> data = encode(index, SnapshotMeta(user_id="u1", revision=42, hard_delete_revision=0,
...                                    analyzer=analyzer.name, embedder=embedder.name))  # doctest: +SKIP
>>> store.save("u1", data)  # doctest: +SKIP
>>> loaded = decode(store.load("u1"), expect=meta_without_revisions)  # doctest: +SKIP

**Never trusted.** A snapshot records the user, the revision and hard-delete revision it was built at,
the analyser and embedder names, the link window and the layout version, and a CRC-32 of its payload.
Any mismatch, a bad checksum or a parse error raises :class:`SnapshotError` and the engine rebuilds
from the database. A snapshot built at revision R is then brought up to date from the rows changed
after R (the per-user revision counter sees every process's writes), exactly like a live index.

**Where.** Snapshots are files (one per user, written to a temporary name and renamed, so readers
never see half a file) in a folder the composition root chooses: beside the SQLite database, or a
per-database cache folder for PostgreSQL. Files need no migration and no database round trip
of tens of megabytes; processes on one host share them, and a process on another host without the
folder builds its own index, which the revision check keeps correct either way.
"""

from __future__ import annotations

import json
import struct
import uuid
import zlib
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from scipy import sparse

from ._index import IndexedMemory, UserIndex, turn_order
from ._index_lazy import LazyList, LazyMap
from ._index_postings import _Postings, _Slot
from ._snapshot_store import SnapshotStore as SnapshotStore
from ._snapshot_store import snapshot_folder as snapshot_folder

#: Bumped whenever the index's layout or any stored structure changes meaning.
SNAPSHOT_FORMAT = 3  # 2: neighbour links by conversation session, not by friend; 3: questions, replies, speakers
_MAGIC = b"AFMSNAP1"


class SnapshotError(ValueError):
    """The snapshot is unreadable, corrupt, or was built under other settings: rebuild instead."""


@dataclass(frozen=True, slots=True)
class SnapshotMeta:
    """What a snapshot was built from; ``decode`` refuses one whose identity differs from the expected."""

    user_id: str
    revision: int
    hard_delete_revision: int
    analyzer: str
    embedder: str
    link_seconds: float
    format: int = SNAPSHOT_FORMAT
    #: ids of the most recently changed memories in the snapshot: at least one must still exist, or the
    #: snapshot belongs to another database at the same place (a re-created file)
    anchors: tuple[str, ...] = ()

    def identity(self) -> tuple[str, str, str, float, int]:
        """The fields that must match (the revisions are compared with storage by the engine)."""
        return (self.user_id, self.analyzer, self.embedder, self.link_seconds, self.format)


# -- encoding ------------------------------------------------------------------------------------------


class _Strings:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, value: str) -> int:
        found = self.ids.get(value)
        if found is None:
            found = self.ids[value] = len(self.ids)
        return found


def _csr(groups: list[Any], dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """Groups (lists, or arrays copied from the source snapshot) as one flat array and offsets."""
    offsets = np.zeros(len(groups) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(g) for g in groups])
    if not groups:
        return np.zeros(0, dtype=dtype), offsets
    return np.concatenate([np.asarray(g, dtype=dtype) for g in groups]), offsets


@dataclass(frozen=True, slots=True)
class _Source:
    """The arrays and string tables an index was loaded from: slots never touched since are copied from
    here when the index is saved again, instead of being loaded as objects and encoded one by one."""

    arrays: dict[str, np.ndarray]
    strings: list[str]
    keys: list[str]
    friends: list[str]
    kinds: list[str]


def _postings_arrays(table: Any, strings: _Strings, prefix: str, out: dict[str, np.ndarray]) -> None:
    keys, slots, values = [], [], []
    for term, postings in table.items():
        keys.append(strings(term))
        s, v = postings.arrays()
        slots.append(s)
        values.append(v)
    out[f"{prefix}_keys"] = np.asarray(keys, dtype=np.int32)
    out[f"{prefix}_offsets"] = np.concatenate([[0], np.cumsum([len(s) for s in slots])]).astype(np.int64)
    out[f"{prefix}_slots"] = np.concatenate(slots).astype(np.int32) if slots else np.zeros(0, np.int32)
    out[f"{prefix}_values"] = np.concatenate(values).astype(np.float64) if values else np.zeros(0)


def encode(index: UserIndex, meta: SnapshotMeta) -> bytes:
    """The index as bytes (loads every slot once; run it after a build, not on every search)."""
    arrays = index.arrays()  # also brings links and the neighbour table up to date
    index.norms()  # saved with the index: a loaded copy then refreshes them exactly when the original would
    table, weights = index.neighbour_table()
    adjacency = index.adjacency()
    n = len(index._slots)
    strings = _Strings()
    friends, kinds = _Strings(), _Strings()
    source = index._snapshot_source if isinstance(index._snapshot_source, _Source) else None
    if source is not None:  # the same ids as the source: its untouched slots are copied as they are
        strings.ids = dict(zip(source.strings, range(len(source.strings)), strict=True))
        friends.ids = dict(zip(source.friends, range(len(source.friends)), strict=True))
        kinds.ids = dict(zip(source.kinds, range(len(source.kinds)), strict=True))
    ids = np.zeros((n, 16), dtype=np.uint8)
    present = np.zeros(n, dtype=bool)
    revision = np.zeros(n, dtype=np.int64)
    friend_code = np.zeros(n, dtype=np.int32)
    kind_code = np.zeros(n, dtype=np.int32)
    keys: list[str] = []
    terms: list[list[int]] = []
    kw_terms: list[list[int]] = []
    kw_weights: list[list[float]] = []
    embedded = np.zeros(n, dtype=bool)
    dim = index.embedding_dim or 0
    vectors = np.zeros((n, dim), dtype=np.float32) if dim else None
    for i in range(n):
        if source is not None and index._slots.pending(i):
            _copy_slot(
                source,
                i,
                out=(ids, present, revision, friend_code, kind_code, embedded, vectors),
                lists=(keys, terms, kw_terms, kw_weights),
            )
            continue
        entry = index._slots[i]
        if entry is None:
            keys.append("")
            terms.append([])
            kw_terms.append([])
            kw_weights.append([])
            continue
        m = entry.memory
        if not isinstance(m.id, uuid.UUID):
            raise SnapshotError("only indexes of stored memories (UUID ids) can be saved")
        present[i] = True
        ids[i] = np.frombuffer(m.id.bytes, dtype=np.uint8)
        revision[i] = m.revision
        friend_code[i] = friends(m.friend_id or "\x00none")
        kind_code[i] = kinds(m.memory_type)
        keys.append(m.memory_key)
        terms.append([strings(t) for t in m.terms])
        kw_terms.append([strings(k) for k, _ in m.keywords])
        kw_weights.append([float(w) for _, w in m.keywords])
        if m.embedding is not None and vectors is not None:
            embedded[i] = True
            vectors[i] = m.embedding
    out: dict[str, np.ndarray] = {
        "ids": ids,
        "present": present,
        "revision": revision,
        "friend_code": friend_code,
        "kind_code": kind_code,
        "ts": arrays["ts"],
        "length": arrays["length"],
        "asks": arrays["asks"],
        "expanded_length": arrays["expanded_length"],
        "free": np.asarray(index._free, dtype=np.int64),
        "adj_data": adjacency.data,
        "adj_indices": adjacency.indices.astype(np.int64),
        "adj_indptr": adjacency.indptr.astype(np.int64),
        "nb_table": table,
        "nb_weights": weights,
        "followers": index.followers(),
        "embedded": embedded,
        "speaker_code": arrays["speaker"],
    }
    out["terms"], out["terms_offsets"] = _csr(terms, np.int32)
    out["kw_terms"], out["kw_offsets"] = _csr(kw_terms, np.int32)
    out["kw_weights"], _ = _csr(kw_weights, np.float64)
    if vectors is not None and embedded.any():
        out["vectors"] = vectors
    if index._norms is not None:
        out["norms"] = np.asarray(index._norms, dtype=np.float64)
    _postings_arrays(index._terms, strings, "tp", out)
    _postings_arrays(index._keywords, strings, "kp", out)
    inner_keys, inner_groups = [], []
    for word, holders in index._inner.items():
        inner_keys.append(strings(word))
        inner_groups.append(sorted(strings(t) for t in holders))
    out["inner_keys"] = np.asarray(inner_keys, dtype=np.int32)
    out["inner_terms"], out["inner_offsets"] = _csr(inner_groups, np.int32)
    session_keys = list(index._sessions)
    out["session_slots"], out["session_offsets"] = _csr(
        [[s for _, _, s in index._sessions[k]] for k in session_keys], np.int64
    )
    out["vocab"] = np.asarray([strings(t) for t in index.vocabulary()], dtype=np.int32)
    text = {
        "strings": list(strings.ids),
        "keys": keys,
        "friends": list(friends.ids),
        "kinds": list(kinds.ids),
        "sessions": session_keys,
        "speakers": index._speaker_names,
    }
    out["text"] = np.frombuffer(json.dumps(text, ensure_ascii=False).encode(), dtype=np.uint8)
    extra = {"norms_at": index._norms_at, "postings_total": index._postings_total, "embedding_dim": index.embedding_dim}
    live = np.flatnonzero(present)
    newest = live[np.argsort(-revision[live], kind="stable")[:8]]
    anchors = tuple(str(uuid.UUID(bytes=ids[i].tobytes())) for i in newest.tolist())
    return _pack(out, {"meta": {**asdict(meta), "anchors": list(anchors)}, "extra": extra})


def _copy_slot(source: _Source, i: int, *, out: tuple[Any, ...], lists: tuple[list[Any], ...]) -> None:
    ids, present, revision, friend_code, kind_code, embedded, vectors = out
    keys, terms, kw_terms, kw_weights = lists
    a = source.arrays
    if not a["present"][i]:
        keys.append("")
        terms.append([])
        kw_terms.append([])
        kw_weights.append([])
        return
    present[i] = True
    ids[i] = a["ids"][i]
    revision[i] = a["revision"][i]
    friend_code[i] = a["friend_code"][i]
    kind_code[i] = a["kind_code"][i]
    keys.append(source.keys[i])
    t_off, kw_off = a["terms_offsets"], a["kw_offsets"]
    terms.append(a["terms"][t_off[i] : t_off[i + 1]])
    kw_terms.append(a["kw_terms"][kw_off[i] : kw_off[i + 1]])
    kw_weights.append(a["kw_weights"][kw_off[i] : kw_off[i + 1]])
    if "vectors" in a and a["embedded"][i] and vectors is not None:
        embedded[i] = True
        vectors[i] = a["vectors"][i]


def _pack(arrays: dict[str, np.ndarray], header: dict[str, Any]) -> bytes:
    directory = []
    chunks = []
    offset = 0
    for name, array in arrays.items():
        raw = np.ascontiguousarray(array).tobytes()
        directory.append([name, array.dtype.str, list(array.shape), offset, len(raw)])
        pad = (-len(raw)) % 8
        chunks.append(raw + b"\x00" * pad)
        offset += len(raw) + pad
    payload = b"".join(chunks)
    head = json.dumps({**header, "arrays": directory, "crc32": zlib.crc32(payload)}).encode()
    return _MAGIC + struct.pack("<Q", len(head)) + head + payload


# -- decoding ------------------------------------------------------------------------------------------


def _unpack(data: bytearray | bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    if len(data) < 16 or bytes(data[:8]) != _MAGIC:
        raise SnapshotError("not a search index snapshot")
    (size,) = struct.unpack("<Q", bytes(data[8:16]))
    try:
        header = json.loads(bytes(data[16 : 16 + size]))
    except ValueError as exc:
        raise SnapshotError("unreadable snapshot header") from exc
    payload = memoryview(data)[16 + size :]
    if zlib.crc32(payload) != header.get("crc32"):
        raise SnapshotError("snapshot checksum mismatch")
    arrays = {}
    try:
        for name, dtype, shape, offset, nbytes in header["arrays"]:
            arrays[name] = np.frombuffer(payload[offset : offset + nbytes], dtype=np.dtype(dtype)).reshape(shape)
    except (ValueError, TypeError, KeyError) as exc:
        raise SnapshotError("malformed snapshot payload") from exc
    return header, arrays


def decode(data: bytearray | bytes, *, expect: SnapshotMeta) -> tuple[UserIndex, SnapshotMeta]:
    """The index stored in ``data`` and what it was built from; raises :class:`SnapshotError` unless
    it is intact and was built for ``expect``'s user, analyser, embedder, link window and format."""
    header, a = _unpack(data)
    try:
        fields = dict(header["meta"])
        fields["anchors"] = tuple(fields.get("anchors", ()))
        meta = SnapshotMeta(**fields)
    except (TypeError, KeyError) as exc:
        raise SnapshotError("snapshot without a valid description") from exc
    if meta.identity() != expect.identity():
        raise SnapshotError("snapshot built for another user, analyser, embedder or index format")
    try:
        return _build(header, a), meta
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        raise SnapshotError(f"inconsistent snapshot: {exc}") from exc


def _postings_map(a: dict[str, np.ndarray], prefix: str, strings: list[str]) -> LazyMap[str, _Postings]:
    offsets, slots, values = a[f"{prefix}_offsets"], a[f"{prefix}_slots"], a[f"{prefix}_values"]

    def load(i: int) -> _Postings:
        lo, hi = int(offsets[i]), int(offsets[i + 1])
        return _Postings(cached=(slots[lo:hi].astype(np.int64), values[lo:hi]))

    return LazyMap([strings[k] for k in a[f"{prefix}_keys"].tolist()], load)


def _build(header: dict[str, Any], a: dict[str, np.ndarray]) -> UserIndex:
    text = json.loads(a["text"].tobytes())
    strings: list[str] = text["strings"]
    keys: list[str] = text["keys"]
    friends = [None if f == "\x00none" else f for f in text["friends"]]
    kinds: list[str] = text["kinds"]
    extra = header["extra"]
    meta = header["meta"]
    index = UserIndex(link_minutes=meta["link_seconds"] / 60.0, embedding_dim=extra["embedding_dim"])
    index.link_seconds = meta["link_seconds"]
    present, ids, ts, asks = a["present"], a["ids"], a["ts"], a["asks"]
    speakers: list[str] = text["speakers"]
    speaker_code = a["speaker_code"]
    n = len(present)
    revision, friend_code, kind_code = a["revision"], a["friend_code"], a["kind_code"]
    terms, t_off = a["terms"], a["terms_offsets"]
    kw_terms, kw_off, kw_weights = a["kw_terms"], a["kw_offsets"], a["kw_weights"]
    vectors = a.get("vectors")
    embedded = a["embedded"]

    sessions: list[str] = text["sessions"]
    s_off, s_slots = a["session_offsets"], a["session_slots"]
    # each slot's link group (see ``link_group``: "friend\x1fsession"), -1 for a memory of its own
    group_of = np.full(n, -1, dtype=np.int64)
    group_of[s_slots] = np.repeat(np.arange(len(sessions), dtype=np.int64), np.diff(s_off))

    def load_slot(i: int) -> _Slot | None:
        if not present[i]:
            return None
        words = tuple([strings[t] for t in terms[t_off[i] : t_off[i + 1]].tolist()])
        lo, hi = int(kw_off[i]), int(kw_off[i + 1])
        keywords = tuple(zip([strings[k] for k in kw_terms[lo:hi].tolist()], kw_weights[lo:hi].tolist(), strict=True))
        stamp = float(ts[i])
        memory = IndexedMemory(
            id=uuid.UUID(bytes=ids[i].tobytes()),
            memory_key=keys[i],
            friend_id=friends[friend_code[i]],
            memory_type=kinds[kind_code[i]],
            created_at=datetime.fromtimestamp(stamp, UTC),
            terms=words,
            keywords=keywords,
            embedding=vectors[i] if vectors is not None and embedded[i] else None,
            revision=int(revision[i]),
            session=sessions[group_of[i]].split("\x1f", 1)[1] if group_of[i] >= 0 else None,
            speaker=speakers[speaker_code[i]] if speaker_code[i] >= 0 else None,
            asks=bool(asks[i]),
        )
        tf: dict[str, int] = {}
        for word in words:
            tf[word] = tf.get(word, 0) + 1
        return _Slot(memory, tf, stamp)

    def slot_map() -> dict[Any, int]:
        raw = ids.tobytes()
        return {uuid.UUID(bytes=raw[16 * i : 16 * i + 16]): i for i in np.flatnonzero(present).tolist()}

    index._slots = LazyList(n, load_slot)
    index._snapshot_source = _Source(a, strings, keys, text["friends"], kinds)
    index._slot_map = None
    index._slot_map_source = (int(present.sum()), slot_map)
    index._free = a["free"].tolist()
    index._terms = _postings_map(a, "tp", strings)
    index._keywords = _postings_map(a, "kp", strings)
    inner_off, inner_terms = a["inner_offsets"], a["inner_terms"]
    index._inner = LazyMap(
        [strings[k] for k in a["inner_keys"].tolist()],
        lambda i: {strings[t] for t in inner_terms[inner_off[i] : inner_off[i + 1]].tolist()},
    )
    index._sessions = LazyMap(
        sessions,
        lambda i: [(float(ts[s]), turn_order(keys[s]), s) for s in s_slots[s_off[i] : s_off[i + 1]].tolist()],
    )
    index._links = LazyMap(sessions, lambda i: index._link(index._sessions[sessions[i]]))
    index._vocab = [strings[t] for t in a["vocab"].tolist()]
    index._postings_total = int(extra["postings_total"])
    friend_of = np.asarray(friends, dtype=object)
    kind_of = np.asarray(kinds, dtype=object)
    nothing = np.full(len(present), None, dtype=object)
    friend = np.where(present, friend_of[friend_code], nothing) if len(friend_of) else nothing
    kind = np.where(present, kind_of[kind_code], nothing) if len(kind_of) else nothing
    index._arrays = {
        "active": present.copy(),
        "ts": ts,
        "length": a["length"],
        "asks": asks,
        "speaker": speaker_code,
        "expanded_length": a["expanded_length"],
        "friend": friend.astype(object),
        "type": kind.astype(object),
    }
    index._adjacency = sparse.csr_matrix((a["adj_data"], a["adj_indices"], a["adj_indptr"]), shape=(n, n))
    index._neighbours = (a["nb_table"], a["nb_weights"])
    index._followers = a["followers"]
    index._speaker_names = list(speakers)
    index._speaker_codes = {name: code for code, name in enumerate(speakers)}
    index._speaker_counts = np.bincount(speaker_code[present & (speaker_code >= 0)], minlength=len(speakers)).tolist()
    if "norms" in a:
        index._norms = a["norms"]
        index._norms_at = int(extra["norms_at"])
    index._snapshot_embedded = embedded
    if vectors is not None:
        index._embeddings = vectors  # zeros where a slot has no embedding, as embeddings() builds it
    return index
