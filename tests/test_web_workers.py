"""``agent-memory serve --workers 2``: two processes on one port and one SQLite file, as a real
subprocess on loopback. A sign-in made through one worker is valid in the other, and two browser tabs
that send to the same friend at the same moment still store the chat as message, reply, message, reply
(the chat's turns are ordered across the workers, not only within each)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from test_web_server import AGENT_MEMORY, free_port


def _start(db: Path, port: int) -> subprocess.Popen[str]:
    env = {**os.environ, "MEMORY_SERVER_TOKEN": "", "MEMORY_SERVER_HOST": "127.0.0.1", "MEMORY_CHAT_MODEL_CLIENT": ""}
    proc = subprocess.Popen([AGENT_MEMORY, "serve", "--db", str(db), "--port", str(port), "--workers", "2"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.terminate()
    raise AssertionError(f"the server did not start: {proc.stderr.read() if proc.stderr else ''}")


async def _turn(base: str, cookies: httpx.Cookies, friend: str, text: str) -> str:
    async with (
        httpx.AsyncClient(base_url=base, cookies=cookies, timeout=60) as client,  # its own connection
        client.stream("POST", f"/api/friends/{friend}/chat", json={"message": text}) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: ") and '"type": "done"' in line:
                return line
    raise AssertionError("the turn did not finish")


async def test_two_workers_share_sign_ins_and_order_a_chats_turns(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _start(tmp_path / "web.db", port)
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            assert (await client.post("/api/session", json={"name": "alice"})).status_code == 200
            cookies = client.cookies
            friend = (await client.post("/api/friends", json={"name": "小明"})).json()["id"]

        async def friends() -> int:
            async with httpx.AsyncClient(base_url=base, cookies=cookies, timeout=30) as one:  # a new connection
                return (await one.get("/api/friends")).status_code

        # many connections at once reach both workers; a session signed by either is valid in both
        assert await asyncio.gather(*(friends() for _ in range(40))) == [200] * 40

        for round_ in range(8):  # two tabs send at the same moment
            await asyncio.gather(
                *(_turn(base, cookies, friend, f"第{round_}轮，标签{tab}：我下周去北京出差") for tab in (1, 2))
            )
        async with httpx.AsyncClient(base_url=base, cookies=cookies, timeout=30) as client:
            stored = (await client.get(f"/api/friends/{friend}/messages")).json()["messages"]
        assert [m["role"] for m in stored] == ["user", "assistant"] * 16
        async with httpx.AsyncClient(base_url=base, cookies=cookies, timeout=30) as client:
            assert (await client.delete(f"/api/friends/{friend}")).status_code == 200
            assert (await client.get(f"/api/friends/{friend}/messages")).status_code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode is not None


def test_a_worker_app_outside_serve_says_how_it_is_started(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_memory.web._app import WORKER_ENV, worker_app

    monkeypatch.delenv(WORKER_ENV, raising=False)
    with pytest.raises(RuntimeError, match="agent-memory serve --workers N"):
        worker_app()
