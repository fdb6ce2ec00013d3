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

from test_web_server import AGENT_MEMORY, free_port, idle_connection_is_kept


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


def test_the_server_says_it_is_ready_when_every_worker_serves_and_keeps_idle_browsers(tmp_path: Path) -> None:
    """A worker listens once warmed up, and a browser stays with the worker that accepted it: so the
    server announces its address only when both workers serve (``/healthz`` counts them), and keeps a
    browser's idle connection longer than the 6 s a person may take between messages (uvicorn's
    default of 5 s sent every such message to a worker chosen anew, which had to load the user's
    search index and archiving state again)."""
    port = free_port()
    env = {**os.environ, "MEMORY_SERVER_TOKEN": "", "MEMORY_SERVER_HOST": "127.0.0.1", "MEMORY_CHAT_MODEL_CLIENT": ""}
    command = [AGENT_MEMORY, "serve", "--db", str(tmp_path / "web.db"), "--port", str(port), "--workers", "2"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        announced = proc.stdout.readline()  # the CLI prints the address once the server is ready
        assert f"127.0.0.1:{port}" in announced, announced
        health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()
        assert health["workers"] == {"serving": 2, "expected": 2}
        assert idle_connection_is_kept(port, 6.0)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
