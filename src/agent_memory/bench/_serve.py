"""``agent-memory bench serve``: concurrent chat streams against the web chat over loopback.

The real ``agent-memory serve`` runs as a subprocess on a new database with the offline responder
(no model), on a free loopback port. Each of N streams is one user with one AI friend: it signs in,
tells the friend a few things and archives them (so recall has event gists to find), then runs its
timed turns. A turn is one ``POST /api/friends/{id}/chat`` read to its ``done`` event: recall,
the AutoGen agent, the streamed reply and both messages stored. Bounded in count (streams, turns)
and time (no turn starts after ``max_seconds``). ``think_ms`` is a user's pause between turns
(reading, typing); 0 sends the next turn at once (closed loop, the worst case).

The streams are aiohttp clients: the bench shares the machine with the server, and httpx took about
twice its CPU per streamed turn (4.4 against 2.3 ms), time the server's workers did not get.

>>> figures = await bench_serve(streams=50, turns=4)  # doctest: +SKIP
>>> figures.turn_p95_ms  # doctest: +SKIP
212.4
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from ._retrieval import percentile

#: What the streams tell their friend before the timed turns (archived into event gists).
WARM_UP = ("我下周二要去北京出差，有点紧张", "最近在准备项目汇报，压力很大", "我喜欢科幻电影，周末想放松一下")
#: What the timed turns say: about the warm-up's facts (recall finds its gists) and small talk. A stream
#: starts at its own place in the list and says each once before any again: the same message again
#: with no new memory in between is answered by the search's cache of recent searches, which real
#: chats seldom hit (a stream of four messages in turn measured that cache more than the chat).
# the word table keeps several entries to a line (fmt: skip); one to a line it would fill a screen
QUESTIONS = (
    "北京出差的事你还记得吗", "汇报压力大怎么办", "推荐个电影吧", "周末做点什么好",
    "下周二出差我要准备些什么", "项目汇报怎么准备比较好", "有什么好看的科幻片", "我最近有点紧张，怎么放松",
    "出差那天我几点出发合适", "汇报的时候怎么才能不慌", "最近有什么新上映的电影", "周末想出去走走，去哪好",
    "北京这几天天气怎么样", "做汇报PPT有什么技巧", "星际穿越这种电影还有类似的吗", "今天好累啊",
    "出差住哪里比较方便", "领导问我汇报进度，我该怎么说", "晚上看什么片子好", "明天早上吃什么好",
    "去北京带什么衣服", "压力大的时候你一般怎么做", "科幻小说有推荐的吗", "周末在家做点什么好",
)  # fmt: skip
MAX_STREAMS = 200
MAX_TURNS = 100


@dataclass
class ServeFigures:
    """What ``bench serve`` measured (times in milliseconds)."""

    backend: str
    workers: int
    streams: int
    turns_per_stream: int
    think_ms: int
    turns: int
    errors: int
    elapsed_s: float
    turns_per_s: float
    turn_p50_ms: float
    turn_p95_ms: float
    turn_max_ms: float
    first_token_p50_ms: float
    first_token_p95_ms: float
    recall_before_reply: bool
    error_samples: list[str] = field(default_factory=list)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _start_server(database_url: str, port: int, workers: int = 1) -> asyncio.subprocess.Process:
    env = {**os.environ, "MEMORY_SERVER_TOKEN": "", "MEMORY_CHAT_MODEL_CLIENT": ""}
    code = "from agent_memory.cli import main; main()"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        "serve",
        "--db",
        database_url,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    from ..web import every_worker_serves

    deadline, serving = time.monotonic() + 60, 0
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as client:
        while time.monotonic() < deadline:
            if proc.returncode is not None:
                err = (await proc.stderr.read()).decode(errors="replace") if proc.stderr else ""
                raise RuntimeError(f"agent-memory serve exited: {err.strip()[:500]}")
            try:
                async with client.get(f"http://127.0.0.1:{port}/healthz") as response:
                    # every worker listening: the streams that connect now are shared out among them
                    health = await response.json()
                    serving = health.get("workers", {}).get("serving", 1)
                    if response.status == 200 and every_worker_serves(health):
                        return proc
            except (aiohttp.ClientError, TimeoutError, ValueError):
                pass
            await asyncio.sleep(0.1)
    proc.terminate()
    if serving:
        raise RuntimeError(f"agent-memory serve: {serving} of {workers} workers serving after 60 s")
    raise RuntimeError("agent-memory serve did not answer within 60 s")


async def _turn(client: aiohttp.ClientSession, friend: str, text: str) -> tuple[float, float, bool]:
    """One chat turn: (total ms, first token ms, whether the recall card came before the reply)."""
    started = time.perf_counter()
    first = total = 0.0
    card_at = token_at = -1
    index = 0
    async with client.post(f"/api/friends/{friend}/chat", json={"message": text}) as response:
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {(await response.read()).decode()[:200]}")
        # read to the end of the stream, as a browser does: a response left unread makes aiohttp close
        # the connection, and the next turn would pay for a new one (with several workers, most likely
        # on another worker, whose caches have not seen the user)
        async for raw in response.content:
            if total or not raw.startswith(b"data: "):
                continue
            event = json.loads(raw[6:])
            index += 1
            if event["type"] == "tool_call" and card_at < 0:
                card_at = index
            elif event["type"] == "token" and token_at < 0:
                token_at = index
                first = (time.perf_counter() - started) * 1000
            elif event["type"] == "error":
                raise RuntimeError(event["message"])
            elif event["type"] == "done":
                total = (time.perf_counter() - started) * 1000  # the reply is whole: the turn's time
    if not total:
        raise RuntimeError("the chat stream ended without its done event")
    return total, first, 0 <= card_at < token_at


async def _stream(
    base: str, n: int, turns: int, think_s: float, ready: asyncio.Barrier, deadline: list[float], out: dict[str, Any]
) -> None:
    jar = aiohttp.CookieJar(unsafe=True)  # the session cookie of a server on an IP address (loopback)
    # 120 s between reads, as a browser waits on a slow reply; long lines (a big reply in one event) fit
    timeout = aiohttp.ClientTimeout(total=None, sock_read=120)
    async with aiohttp.ClientSession(base_url=base, cookie_jar=jar, timeout=timeout, read_bufsize=1 << 20) as client:
        # every response is read whole, as a browser does: aiohttp closes a connection whose response was
        # left unread, and the first timed turn then came on a new one, with several workers most likely
        # on another worker than the one that set the chat up (all of them at once stalled the workers)
        try:
            async with client.post("/api/session", json={"name": f"bench-user-{n}"}) as r:
                r.raise_for_status()
                await r.read()
            async with client.post("/api/friends", json={"name": f"朋友{n}"}) as r:
                friend = (await r.json())["id"]
            settings = {"chat": {"show_tool_calls": True}}
            async with client.put("/api/settings", json=settings) as r:
                r.raise_for_status()
                await r.read()
            for text in WARM_UP:
                await _turn(client, friend, text)
            async with client.post(f"/api/friends/{friend}/archive", json={}) as r:
                r.raise_for_status()
                await r.read()
        except Exception as exc:
            out["errors"].append(f"set-up: {type(exc).__name__}: {exc}"[:200])
            await ready.wait()
            return
        await ready.wait()
        if think_s:
            await asyncio.sleep(think_s * (n / max(1, out["streams"])))  # users do not all type at once
        for i in range(turns):
            if time.monotonic() > deadline[0]:
                break
            if i and think_s:
                await asyncio.sleep(think_s)
            try:
                total, first, ordered = await _turn(client, friend, QUESTIONS[(n + i) % len(QUESTIONS)])
            except Exception as exc:
                out["errors"].append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            out["totals"].append(total)
            out["firsts"].append(first)
            out["ordered"].append(ordered)


async def bench_serve(
    *, streams: int = 50, turns: int = 4, think_ms: int = 0, max_seconds: float = 120.0, workers: int = 1
) -> ServeFigures:
    """Run ``streams`` concurrent chats of ``turns`` timed turns each on a new SQLite file, against a
    server of ``workers`` processes."""
    if not 1 <= streams <= MAX_STREAMS:
        raise ValueError(f"streams must be 1-{MAX_STREAMS}")
    if not 1 <= turns <= MAX_TURNS:
        raise ValueError(f"turns must be 1-{MAX_TURNS}")
    if not 0 <= think_ms <= 60_000:
        raise ValueError("think_ms must be 0-60000")
    if not 1 <= workers <= 32:
        raise ValueError("workers must be 1-32")
    with tempfile.TemporaryDirectory(prefix="agent-memory-serve-") as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'serve.db'}"
        port = _free_port()
        proc = await _start_server(url, port, workers)
        try:
            out: dict[str, Any] = {"totals": [], "firsts": [], "ordered": [], "errors": [], "streams": streams}
            ready = asyncio.Barrier(streams + 1)
            deadline = [float("inf")]
            tasks = [
                asyncio.create_task(
                    _stream(f"http://127.0.0.1:{port}", n, turns, think_ms / 1000, ready, deadline, out)
                )
                for n in range(streams)
            ]
            await ready.wait()  # every stream set up: the timed part starts together
            started = time.perf_counter()
            deadline[0] = time.monotonic() + max_seconds
            results = await asyncio.gather(*tasks, return_exceptions=True)
            elapsed = time.perf_counter() - started
            out["errors"] += [f"{type(r).__name__}: {r}"[:200] for r in results if isinstance(r, BaseException)]
        finally:
            proc.terminate()
            await proc.wait()
    totals, firsts = out["totals"], out["firsts"]
    return ServeFigures(
        backend="sqlite",
        workers=workers,
        streams=streams,
        turns_per_stream=turns,
        think_ms=think_ms,
        turns=len(totals),
        errors=len(out["errors"]),
        elapsed_s=round(elapsed, 3),
        turns_per_s=round(len(totals) / elapsed, 2) if elapsed > 0 else 0.0,
        turn_p50_ms=round(percentile(totals, 50), 1) if totals else 0.0,
        turn_p95_ms=round(percentile(totals, 95), 1) if totals else 0.0,
        turn_max_ms=round(max(totals), 1) if totals else 0.0,
        first_token_p50_ms=round(percentile(firsts, 50), 1) if firsts else 0.0,
        first_token_p95_ms=round(percentile(firsts, 95), 1) if firsts else 0.0,
        recall_before_reply=bool(out["ordered"]) and all(out["ordered"]),
        error_samples=out["errors"][:5],
    )
