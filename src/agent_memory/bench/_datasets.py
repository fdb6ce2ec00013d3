"""Readers of the public benchmark formats (see docs/benchmarks.md) into one shape.

>>> ds = load_dataset("generic", "path/to/folder")  # doctest: +SKIP
>>> ds.docs[0].text, ds.queries[0].gold  # doctest: +SKIP
"""

from __future__ import annotations

import csv
import errno
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from data_layer import SESSION_FIELD, SPEAKER_FIELD

DatasetName = Literal["locomo", "memdaily", "generic"]


@dataclass(frozen=True, slots=True)
class BenchDoc:
    """One memory to index: ``user_id`` is its scope (a conversation or trajectory)."""

    id: str
    user_id: str
    text: str
    created_at: datetime
    friend_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BenchQuery:
    """One question with its relevant doc ids (``gold``: id -> graded relevance)."""

    id: str
    user_id: str
    text: str
    gold: dict[str, float]
    now: datetime | None = None
    friend_id: str | None = None
    context: tuple[dict[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class BenchDataset:
    """Docs and queries of one data set, with the cut-offs it reports."""

    name: str
    docs: list[BenchDoc]
    queries: list[BenchQuery]
    ks: tuple[int, ...]


def load_dataset(name: str, path: str | Path) -> BenchDataset:
    """Read ``locomo`` (a ``locomo10.json`` file), ``memdaily`` (a folder or one file of MemSim's
    ``messages_and_QAs``) or ``generic`` (a folder with corpus.jsonl, queries.jsonl, qrels.tsv)."""
    source = Path(path)
    if not source.exists():
        reason = "no benchmark data there; see the README for where to download it"
        raise FileNotFoundError(errno.ENOENT, reason, str(source))
    if name == "locomo":
        return _locomo(source)
    if name == "memdaily":
        return _memdaily(source)
    if name == "generic":
        return _generic(source)
    raise ValueError(f"unknown dataset {name!r}; use locomo, memdaily or generic")


_LOCOMO_TIME = re.compile(r"(\d{1,2}):(\d{2})\s*(am|pm)\s*on\s*(\d{1,2})\s+(\w+),?\s+(\d{4})", re.IGNORECASE)


def parse_locomo_time(value: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime."""
    m = _LOCOMO_TIME.search(value)
    if not m:
        raise ValueError(f"unrecognised LoCoMo date_time {value!r}")
    hour, minute, half, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    month_no = datetime.strptime(month[:3].title(), "%b").month
    return datetime(int(year), month_no, int(day), h, int(minute), tzinfo=UTC)


def _locomo(path: Path) -> BenchDataset:
    data = json.loads(path.read_text(encoding="utf-8"))
    docs: list[BenchDoc] = []
    queries: list[BenchQuery] = []
    for conv_no, sample in enumerate(data):
        user = f"locomo-{sample.get('sample_id', conv_no)}"
        conv = sample["conversation"]
        sessions = sorted(
            (int(k.split("_")[1]), k) for k in conv if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list)
        )
        last_time: datetime | None = None
        for _, key in sessions:
            when = parse_locomo_time(conv[f"{key}_date_time"])
            last_time = when if last_time is None or when > last_time else last_time
            for turn in conv[key]:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [image: {turn['blip_caption']}]"
                meta = {"session": key, SESSION_FIELD: key, SPEAKER_FIELD: turn["speaker"]}
                docs.append(BenchDoc(turn["dia_id"], user, text, when, metadata=meta))
        for q_no, qa in enumerate(sample["qa"]):
            if qa.get("category") not in (1, 2, 3, 4) or not qa.get("evidence"):
                continue
            gold = {str(e).strip(): 1.0 for e in qa["evidence"]}
            queries.append(BenchQuery(f"{user}-q{q_no}", user, str(qa["question"]), gold, now=last_time))
    return BenchDataset("locomo", docs, queries, (5, 10))


_MEMDAILY_TIME = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日(?:\s*\S+)?\s*(\d{1,2}):(\d{2})")


def parse_memdaily_time(value: str) -> datetime:
    """``"2024年04月01日 周一 08:30"`` as an aware UTC datetime."""
    m = _MEMDAILY_TIME.search(value)
    if not m:
        raise ValueError(f"unrecognised MemDaily time {value!r}")
    y, mo, d, h, mi = (int(x) for x in m.groups())
    return datetime(y, mo, d, h, mi, tzinfo=UTC)


def _memdaily(path: Path) -> BenchDataset:
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    docs: list[BenchDoc] = []
    queries: list[BenchQuery] = []
    for file in files:
        for trajectory in json.loads(file.read_text(encoding="utf-8")):
            user = f"{file.stem}-{trajectory['tid']}"
            for msg in trajectory["message_list"]:
                docs.append(
                    BenchDoc(
                        str(msg["mid"]),
                        user,
                        str(msg["message"]),
                        parse_memdaily_time(msg["time"]),
                        metadata={"place": msg.get("place")},
                    )
                )
            questions = trajectory.get("question_list") or []
            if not questions:
                continue
            q = questions[0]
            if q.get("question") in ("[ERRORQ]", "[ERRORA]") or q.get("answer") in ("[ERRORQ]", "[ERRORA]"):
                continue
            gold = {str(t): 1.0 for t in q.get("target_step_id") or []}
            if not gold:
                continue
            now = parse_memdaily_time(q["time"]) if q.get("time") else None
            queries.append(BenchQuery(f"{user}-q{q.get('qid', 0)}", user, str(q["question"]), gold, now=now))
    return BenchDataset("memdaily", docs, queries, (3, 5))


def _iso(value: str | None) -> datetime | None:
    if not value:
        return None
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _generic(folder: Path) -> BenchDataset:
    docs = []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                when = _iso(row.get("created_at")) or datetime(1970, 1, 1, tzinfo=UTC)
                docs.append(
                    BenchDoc(
                        str(row["id"]),
                        str(row["user_id"]),
                        str(row["text"]),
                        when,
                        friend_id=row.get("friend_id"),
                        metadata={**({"role": row["role"]} if row.get("role") else {}), **(row.get("metadata") or {})},
                    )
                )
    gold: dict[str, dict[str, float]] = {}
    with (folder / "qrels.tsv").open(encoding="utf-8") as fh:
        for parts in csv.reader(fh, delimiter="\t"):
            if len(parts) < 3 or parts[0] == "query_id":
                continue
            if float(parts[2]) > 0:
                gold.setdefault(parts[0], {})[parts[1]] = float(parts[2])
    queries = []
    with (folder / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                qid = str(row["id"])
                if qid in gold:
                    queries.append(
                        BenchQuery(
                            qid,
                            str(row["user_id"]),
                            str(row["text"]),
                            gold[qid],
                            now=_iso(row.get("now")),
                            friend_id=row.get("friend_id"),
                            context=tuple(row.get("context") or ()),
                        )
                    )
    return BenchDataset("generic", docs, queries, (1, 3, 5, 10))
