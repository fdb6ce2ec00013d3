"""Evidence ``lexical_search`` latency and results over one user's chat messages, for comparing two checkouts.

Run with each checkout's ``src`` on ``PYTHONPATH`` (the script only uses the public ``MessageIndex`` /
``EvidenceToolbox`` API, the same in both):

    python benchmarks/message_search_latency.py setup  --url URL --messages 100000 --corpus DIR
    python benchmarks/message_search_latency.py search --url URL --out results.json [--rounds 5]
    python benchmarks/message_search_latency.py compare a.json b.json

``setup`` migrates ``URL`` to the checkout's head and writes the messages (LoCoMo turns and MemDaily
messages from ``DIR`` cycled, three chats: two AI friends and shared messages) the way the app does, with
the checkout's ``MessageIndex`` built first (so a checkout that analyses on write does). ``search`` is one
fresh process: the first search after start-up (the layer opened, nothing searched yet), then warm
rounds over the query set; it prints the figures and saves every query's hits (ids and scores).
``compare`` says how many queries got the same hits in the same order with the same scores.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import os
import random
import resource
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

USER = "bench-user"
FRIENDS = ("mentor", "xiaozhu", None)


def _texts(corpus: Path) -> list[tuple[str, str]]:
    """``(role, text)`` of every LoCoMo turn and MemDaily message under ``corpus``, in file order."""
    out: list[tuple[str, str]] = []
    locomo = corpus / "locomo" / "locomo_dev.json"
    for conv in json.loads(locomo.read_text()):
        c = conv["conversation"]
        for key in sorted(k for k in c if k.startswith("session_") and not k.endswith("date_time")):
            for i, turn in enumerate(c[key]):
                out.append(("user" if i % 2 == 0 else "assistant", f"{turn['speaker']}: {turn['text']}"))
    for path in sorted(glob.glob(str(corpus / "memdaily" / "*.json"))):
        for traj in json.loads(Path(path).read_text()):
            for i, msg in enumerate(traj["message_list"]):
                out.append(("user" if i % 3 else "assistant", msg["message"]))
    return out


def _queries(texts: list[tuple[str, str]], seed: int = 7) -> list[dict[str, Any]]:
    """A fixed query set drawn from the corpus: word pairs, single words, quoted phrases (English and
    Chinese), some with a role filter."""
    rng = random.Random(seed)
    english = [t for _, t in texts if t.isascii()]
    chinese = [t for _, t in texts if not t.isascii()]
    queries: list[dict[str, Any]] = []
    for i in range(16):
        words = [w.strip(".,!?:;'\"()") for w in rng.choice(english).split()[1:]]
        words = [w for w in words if len(w) > 3] or ["music"]
        queries.append({"query_text": " ".join(rng.sample(words, min(2, len(words))))})
        if i % 4 == 0:
            queries[-1]["filter"] = {"role": "user"}
    for _ in range(8):
        text = rng.choice(chinese)
        start = rng.randrange(max(1, len(text) - 4))
        queries.append({"query_text": text[start : start + 4]})
    for _ in range(4):
        words = rng.choice(english).split()[1:]
        start = rng.randrange(max(1, len(words) - 2))
        queries.append({"query_text": '"' + " ".join(words[start : start + 2]).strip(".,!?") + '"'})
    for _ in range(4):
        text = rng.choice(chinese)
        start = rng.randrange(max(1, len(text) - 3))
        queries.append({"query_text": f'"{text[start : start + 3]}" 喜欢'})
    return queries


async def _setup(url: str, n: int, corpus: Path) -> None:
    from agent_memory.evidence import MessageIndex
    from data_layer import AgentFusionDataLayer, NewMessage, upgrade

    await upgrade(url)
    texts = _texts(corpus)
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    started = time.perf_counter()
    async with AgentFusionDataLayer(url) as layer:
        MessageIndex(layer)  # a checkout that analyses on write installs its analyzer here
        batch: list[NewMessage] = []
        for i in range(n):
            role, text = texts[i % len(texts)]
            if i >= len(texts):
                text = f"{text} (#{i // len(texts)})"
            friend = FRIENDS[(i // 50) % len(FRIENDS)]
            batch.append(NewMessage(role=role, content=text, friend_id=friend, created_at=t0 + timedelta(minutes=i)))
            if len(batch) == 1000:
                await layer.messages.append_many(user_id=USER, messages=batch)
                batch = []
        if batch:
            await layer.messages.append_many(user_id=USER, messages=batch)
    print(json.dumps({"setup_s": round(time.perf_counter() - started, 1), "messages": n}))


async def _search(url: str, rounds: int, corpus: Path) -> tuple[dict[str, Any], dict[str, list[list[Any]]]]:
    from agent_memory.evidence import EvidenceToolbox, MessageIndex
    from data_layer import AgentFusionDataLayer, Scope

    queries = _queries(_texts(corpus))
    async with AgentFusionDataLayer(url) as layer:
        index = MessageIndex(layer)
        scope = Scope.of(USER, "mentor")
        index.tokenizer.tokens("预热 warm up")  # the tokenizer's dictionary loads with the process, untimed
        started = time.perf_counter()
        first = await EvidenceToolbox(layer, index, scope=scope).lexical_search(queries[0]["query_text"], page_size=10)
        first_ms = (time.perf_counter() - started) * 1000
        times: list[float] = []
        hits: dict[str, list[list[Any]]] = {}
        for _ in range(rounds):
            for q in queries:
                box = EvidenceToolbox(layer, index, scope=scope)
                started = time.perf_counter()
                found = await box.lexical_search(q["query_text"], filter=q.get("filter"), page_size=10)
                times.append((time.perf_counter() - started) * 1000)
                key = json.dumps(q, ensure_ascii=False)
                hits[key] = [[m.message_id, m.score] for m in found.messages]
        assert first.success
    times.sort()
    report = {
        "backend": url.split(":", 1)[0],
        "first_search_ms": round(first_ms, 1),
        "warm_p50_ms": round(times[len(times) // 2], 2),
        "warm_p95_ms": round(times[int(len(times) * 0.95)], 2),
        "queries": len(queries),
        "rounds": rounds,
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    return report, hits


def _compare(a: Path, b: Path) -> None:
    ha, hb = json.loads(a.read_text())["hits"], json.loads(b.read_text())["hits"]
    same = [k for k in ha if ha[k] == hb.get(k)]
    same_ids = [k for k in ha if [h[0] for h in ha[k]] == [h[0] for h in hb.get(k, [])]]
    differ = {k: {"a": ha[k][:3], "b": hb.get(k, [])[:3]} for k in ha if ha[k] != hb.get(k)}
    print(json.dumps({"queries": len(ha), "identical": len(same), "same_ids_in_order": len(same_ids),
                      "differ": differ}, ensure_ascii=False))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("setup")
    s.add_argument("--url", required=True)
    s.add_argument("--messages", type=int, default=10_000)
    s.add_argument("--corpus", type=Path, default=Path(os.environ.get("BENCH_CORPUS", "/work/shared/data")))
    q = sub.add_parser("search")
    q.add_argument("--url", required=True)
    q.add_argument("--out", type=Path, required=True)
    q.add_argument("--rounds", type=int, default=5)
    q.add_argument("--corpus", type=Path, default=Path(os.environ.get("BENCH_CORPUS", "/work/shared/data")))
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "setup":
        asyncio.run(_setup(args.url, args.messages, args.corpus))
    elif args.command == "search":
        report, hits = asyncio.run(_search(args.url, args.rounds, args.corpus))
        args.out.write_text(json.dumps({"report": report, "hits": hits}, ensure_ascii=False, indent=0))
        print(json.dumps(report))
    else:
        _compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
