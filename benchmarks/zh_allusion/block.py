"""What the recall block holds when this set's chats are memories formed by the archiver: per query,
whether the block the main model is given cites the gold statement, and how many of its memories are
unrelated to the query.

Run from the repository root::

    .venv/bin/python benchmarks/zh_allusion/block.py [--backend sqlite|postgresql|both] [--look-back stored|context]
                                                     [--per-query]

The chats enter as in ``gists.py`` (the saving path, then the archiver, built by the composition root).
Each query is then recalled as a chat turn is: the system's recall agent (the deterministic offline
planner, the user's default recall settings and similarity threshold) reads the conversation at the
query's ``now``, and the block is made by the code ``MemoryContext`` makes it with (``ledger_block``:
the relevant memories the friend may see, each once, cut to the top-k and the token budget). The
conversation is what a persisted ``MemoryContext`` reads: the stored chat with this friend before the
query's ``context`` and the query (``--look-back context``: the ``context`` and the query alone).

Figures (over the block's memories; a memory's statements are the set's messages it cites):

- ``with_gold``: queries whose block cites a gold message of the query;
- ``unrelated_gold``: the gold statements of *other* queries the blocks cite (as in ``gists.py``, not
  counting a statement that is gold for this query too), in all and by memory type;
- ``not_citing_gold``: block memories that cite no gold message of their query (the block's other
  memories; some are related to the query without being its gold);
- ``statements_beside``: the statements block gists quote beside their first (a gist quotes one
  episode; what more it quotes reaches the model with it, related or not);
- ``mean_size``, and the same by split (dev: the id ends in an even number, test: odd).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from dataclasses import dataclass
from datetime import datetime

from gists import Archived, archived, jsonl

from agent_memory.context import ledger_block, reachable
from agent_memory.context._turns import MAX_RECALL_HISTORY, chat_pairs, stored_before

SPLITS = {"all": lambda n: True, "dev": lambda n: n % 2 == 0, "test": lambda n: n % 2 == 1}


@dataclass(frozen=True, slots=True)
class Block:
    """One query's block: each memory's key, type, cited docs and text."""

    query: str
    memories: tuple[tuple[str, str, frozenset[str], str], ...]
    #: per memory, how many user messages it quotes
    statements: tuple[int, ...]


async def blocks(run: Archived, queries: list[dict[str, object]], *, look_back: str) -> list[Block]:
    system, out = run.system, []
    users = {str(d["id"]) for d in jsonl("corpus.jsonl") if d["role"] == "user"}
    settings = system.settings.recall_settings()  # a user who never changed the defaults
    for q in queries:
        scope = system.scope(str(q["user_id"]), str(q["friend_id"]))
        turn = [*((str(m["role"]), str(m["content"])) for m in q.get("context") or []), ("user", str(q["text"]))]  # type: ignore[attr-defined]
        if look_back == "stored":
            stored = await system.layer.messages.latest(user_id=scope.user_id, friend_id=scope.friend_id,
                                                        limit=MAX_RECALL_HISTORY)  # fmt: skip
            turn = stored_before(chat_pairs(stored), turn)
        agent = system.recall_agent(scope, settings=settings, now=datetime.fromisoformat(str(q["now"])))
        result = await agent.recall(turn)
        pairs = await reachable(system.layer, scope, result.ledger.relevant(settings.similarity_threshold))
        _, records = ledger_block(pairs, ledger=result.ledger, settings=settings,
                                  token_budget=system.recall_options.slot_token_budget)  # fmt: skip
        out.append(Block(str(q["id"]), tuple((r.memory_key, r.memory_type, frozenset(run.cited(r)), r.content)
                                             for r in records),
                         tuple(len(run.cited(r) & users) for r in records)))  # fmt: skip
    return out


def _number(query_id: str) -> int:
    return int(re.search(r"(\d+)$", query_id).group(1))  # type: ignore[union-attr]


def figures(run: Archived, found: list[Block]) -> dict[str, object]:
    every_gold = set(run.gold_of)
    out: dict[str, object] = {}
    for name, pick in SPLITS.items():
        chosen = [b for b in found if pick(_number(b.query))]
        by_type: dict[str, int] = {}
        with_gold = unrelated = other = size = beside = 0
        for b in chosen:
            gold = run.gold[b.query]
            with_gold += any(docs & gold for _, _, docs, _ in b.memories)
            size += len(b.memories)
            beside += sum(max(0, n - 1) for (_, kind, _, _), n in zip(b.memories, b.statements, strict=True)
                          if kind == "event")  # fmt: skip
            other += sum(not docs & gold for _, _, docs, _ in b.memories)
            carried: dict[str, str] = {}
            for _, kind, docs, _ in b.memories:
                for d in (docs & every_gold) - gold:
                    carried.setdefault(d, kind)
            unrelated += len(carried)
            for kind in carried.values():
                by_type[kind] = by_type.get(kind, 0) + 1
        n = max(1, len(chosen))
        out[name] = {"queries": len(chosen), "with_gold": round(with_gold / n, 3), "unrelated_gold": unrelated,
                     "unrelated_gold_by_type": dict(sorted(by_type.items())), "not_citing_gold": other,
                     "statements_beside": beside,
                     "mean_size": round(size / n, 2),
                     "queries_with_unrelated_gold": sum(bool(_carried(run, b)) for b in chosen)}  # fmt: skip
    return out


def _carried(run: Archived, b: Block) -> set[str]:
    return {d for _, _, docs, _ in b.memories for d in docs if d in run.gold_of} - run.gold[b.query]


def per_query(run: Archived, found: list[Block]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for b in found:
        gold = run.gold[b.query]
        others = [f"{kind}:{text[:60]}" for _, kind, docs, text in b.memories if not docs & gold]
        out.append({"query": b.query, "with_gold": any(docs & gold for _, _, docs, _ in b.memories),
                    "unrelated_gold": sorted(_carried(run, b)), "not_citing_gold": others})  # fmt: skip
    return out


async def main(backends: list[str], look_back: str, show: bool) -> None:
    queries = jsonl("queries.jsonl")
    out: dict[str, object] = {"look_back": look_back}
    seen: dict[str, list[tuple[str, ...]]] = {}
    for backend in backends:
        async with archived(backend) as run:
            found = await blocks(run, queries, look_back=look_back)
            out[backend] = figures(run, found)
            if show:
                out[f"{backend}_per_query"] = per_query(run, found)
            seen[backend] = [tuple(sorted(text for _, _, _, text in b.memories)) for b in found]
    if len(seen) == 2:
        first, second = seen.values()
        out["same_blocks_on_both"] = sum(a == b for a, b in zip(first, second, strict=True))
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="sqlite", choices=("sqlite", "postgresql", "both"))
    parser.add_argument("--look-back", default="stored", choices=("stored", "context"))
    parser.add_argument("--per-query", action="store_true", help="list each query's block")
    args = parser.parse_args()
    chosen = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    asyncio.run(main(chosen, args.look_back, args.per_query))
