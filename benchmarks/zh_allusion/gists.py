"""What the session archiver makes of this set's chats: how many gists, how many lump statements that
different queries ask about, and what reaches the top of the search when the chats enter as messages.

Run from the repository root (one sqlite run)::

    .venv/bin/python benchmarks/zh_allusion/gists.py [--backend sqlite|postgresql]

``measure.py`` stores each message as a memory of its own; here the messages go through the normal
saving path and the archiver (sessions -> gists, profile items, archived turns), as in a live chat. A
gist is *lumped* when it cites the gold messages of two queries that allude to different statements
(each gold statement is a separate fact or event of the user's). For each query the search's top 5
are read: ``hit@5`` counts queries with a memory citing a gold message, and ``unrelated_gold@5`` the
gold statements of *other* queries that the top 5 carry along inside gists (what reaches the model
without being asked about). ``block.py`` reads the recall block itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from agent_memory.bench import temporary_postgres, temporary_sqlite
from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem
from data_layer import MemoryRecord, NewMessage, upgrade

HERE = Path(__file__).parent


def jsonl(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (HERE / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def _message(doc: dict[str, object]) -> NewMessage:
    when = datetime.fromisoformat(str(doc["created_at"]))
    return NewMessage(role=doc["role"], content=str(doc["text"]), friend_id=str(doc["friend_id"]), created_at=when)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Archived:
    """The set's chats after the archiver: the system, the stored message id -> the set's doc id, and each
    query's gold doc ids."""

    system: MemorySystem
    doc_of: dict[int, str]
    gold: dict[str, set[str]]

    @property
    def gold_of(self) -> dict[str, str]:
        """A gold doc -> (one of) the queries it is gold for."""
        return {doc: qid for qid, docs in self.gold.items() for doc in docs}

    def cited(self, record: MemoryRecord) -> set[str]:
        """The set's doc ids a memory cites (its source message ids)."""
        return {self.doc_of[i] for i in record.metadata.get("source_message_ids") or [] if i in self.doc_of}


@asynccontextmanager
async def archived(backend: str) -> AsyncIterator[Archived]:
    """A new database of ``backend`` holding the set's chats, stored through the saving path and archived
    (every session ended), with the system built on it by the composition root."""
    corpus = jsonl("corpus.jsonl")
    gold: dict[str, set[str]] = {}
    for line in (HERE / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, _ = line.split("\t")
        gold.setdefault(qid, set()).add(doc)
    database = temporary_postgres() if backend == "postgresql" else temporary_sqlite()
    async with database as url:
        await upgrade(url)
        async with MemorySystem.from_settings(load_settings(memory_database_url=url)) as system:
            stored: dict[int, str] = {}
            for user in sorted({str(d["user_id"]) for d in corpus}):
                docs = [d for d in corpus if d["user_id"] == user]
                records = await system.layer.messages.append_many(user_id=user, messages=[_message(d) for d in docs])
                stored.update({r.id: str(d["id"]) for r, d in zip(records, docs, strict=True)})
                await system.session_archiver.run(user_id=user, all_friends=True, end_open=True)
            yield Archived(system, stored, gold)


async def main(backend: str) -> None:
    queries = jsonl("queries.jsonl")
    async with archived(backend) as run:
        system, gold, gold_of = run.system, run.gold, run.gold_of
        gists = sents = lumped = 0
        for user in sorted({str(q["user_id"]) for q in queries}):
            page = await system.layer.memory.list_memories(user_id=user, limit=1000)
            for m in page.items:
                if m.memory_type != "event":
                    continue
                gists += 1
                sents += m.content.count("“") or m.content.count('"') // 2
                asked = {gold_of[d] for d in run.cited(m) if d in gold_of}
                lumped += len({frozenset(gold[q]) for q in asked}) > 1
        hits = unrelated = 0
        for q in queries:
            found = await system.search.search(str(q["text"]), user_id=str(q["user_id"]),
                                               friend_id=str(q["friend_id"]), limit=5,
                                               now=datetime.fromisoformat(str(q["now"])))  # fmt: skip
            cited = [(h.record.memory_type, run.cited(h.record)) for h in found]
            hits += any(docs & gold[str(q["id"])] for _, docs in cited)
            others = {d for kind, docs in cited if kind == "event" for d in docs if d in gold_of}
            unrelated += len(others - gold[str(q["id"])])
    print(json.dumps({"backend": backend, "gists": gists, "sentences_per_gist": round(sents / max(gists, 1), 2),
                      "lumped_gists": lumped, "queries": len(queries), "hit@5": round(hits / len(queries), 3),
                      "unrelated_gold@5": unrelated}, ensure_ascii=False))  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="sqlite", choices=("sqlite", "postgresql"))
    asyncio.run(main(parser.parse_args().backend))
