"""The web chat server itself: ``agent-memory serve`` as a real subprocess on loopback, the bind rule
(a non-loopback address without a token is refused), and :func:`web_server`, the in-thread server
the other web tests use (uvicorn on 127.0.0.1 with a free port, on the test's database).
"""

from __future__ import annotations

import gc
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from data_layer import InvalidInputError

AGENT_MEMORY = str(Path(sys.executable).with_name("agent-memory"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def idle_connection_is_kept(port: int, idle_s: float) -> bool:
    """Whether a connection left idle for ``idle_s`` still carries the next request (HTTP keep-alive)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/healthz")
        first = conn.getresponse()
        first.read()
        sock = conn.sock
        time.sleep(idle_s)
        try:
            conn.request("GET", "/healthz")
            again = conn.getresponse()
            again.read()
        except (http.client.RemoteDisconnected, ConnectionError):
            return False
        return again.status == 200 and conn.sock is sock
    finally:
        conn.close()


@contextmanager
def web_server(db_url: str, *, token: str = "", own_process: bool = False, **overrides: Any) -> Iterator[str]:
    """The web app on ``db_url`` served by uvicorn in a background thread; yields its base URL."""
    import uvicorn

    from agent_memory.settings import load_settings
    from agent_memory.system import MemorySystem
    from agent_memory.web import create_app

    settings = load_settings(memory_database_url=db_url, memory_server_token=token, **overrides)
    app = create_app(MemorySystem.from_settings(settings), close_system=True, own_process=own_process)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the web server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


@contextmanager
def signed_in(base: str, user: str, *, token: str | None = None) -> Iterator[httpx.Client]:
    """A client with a session for ``user``."""
    with httpx.Client(base_url=base, timeout=60) as client:
        body = {"name": user} if token is None else {"name": user, "token": token}
        response = client.post("/api/session", json=body)
        assert response.status_code == 200, response.text
        yield client


@pytest.mark.parametrize("own_process", [True, False])
def test_a_server_process_freezes_what_its_warm_up_loaded(own_process: bool, tmp_path: Path) -> None:
    """``agent-memory serve`` owns its process: the objects loaded at start-up (dictionaries, modules)
    are taken out of the collector's walks; an app mounted in someone else's process leaves them."""
    gc.unfreeze()
    try:
        with web_server(f"sqlite+aiosqlite:///{tmp_path / 'gc.db'}", own_process=own_process) as base:
            assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200
            frozen = gc.get_freeze_count()
    finally:
        gc.unfreeze()
    assert (frozen > 100_000) is own_process, frozen


_BLAS = """
import sys
sys.path.insert(0, sys.argv[1])
import httpx
from threadpoolctl import threadpool_info
from test_web_server import web_server

def threads():
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]

before = threads()
with web_server(sys.argv[2], own_process=sys.argv[3] == "own") as base:
    assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200
    serving = threads()
print(before, serving, threads())
"""


@pytest.mark.slow
@pytest.mark.parametrize("own_process", [True, False])
def test_a_server_process_runs_matrix_products_on_one_thread(own_process: bool, tmp_path: Path) -> None:
    """``agent-memory serve`` runs numpy's matrix products on one thread while it serves (its chats run
    at once, and ``--workers`` processes share the cores) and gives the setting back when it stops; an
    app mounted in someone else's process leaves it alone. Two BLAS threads to start with, as on any
    machine of two cores or more."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            _BLAS,
            str(Path(__file__).parent),
            f"sqlite+aiosqlite:///{tmp_path / 'b.db'}",
            "own" if own_process else "mounted",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    before, serving, after = (json.loads(part) for part in run.stdout.strip().replace("] [", "]|[").split("|"))
    assert before == after and before and set(before) == {2}
    assert serving == ([1] * len(before) if own_process else before)


@pytest.mark.slow
def test_cli_serve_answers_on_loopback_and_stops(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "MEMORY_SERVER_TOKEN": "", "MEMORY_SERVER_HOST": "127.0.0.1"}
    proc = subprocess.Popen(
        [AGENT_MEMORY, "serve", "--db", str(tmp_path / "web.db"), "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        health = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert health is not None, proc.stderr.read() if proc.stderr else "no output"
        assert health.status_code == 200
        assert health.json()["status"] == "ok" and health.json()["backend"] == "sqlite"
        assert "离线" in health.json()["model"]
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
        assert page.status_code == 200 and "设置" in page.text
        assert (tmp_path / "web.db").exists()  # --db PATH made and migrated the file
        # a browser's idle connection outlives the 6 s a person may take between messages
        assert idle_connection_is_kept(port, 6.0)
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::"])
def test_cli_serve_refuses_non_loopback_without_token(host: str, tmp_path: Path) -> None:
    env = {**os.environ, "MEMORY_SERVER_TOKEN": ""}
    done = subprocess.run(
        [AGENT_MEMORY, "serve", "--host", host, "--db", str(tmp_path / "x.db"), "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "MEMORY_SERVER_TOKEN" in done.stderr and host in done.stderr
    assert not (tmp_path / "x.db").exists()  # refused before anything was opened


async def test_serve_function_checks_the_bind_before_opening(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_memory.web import serve

    monkeypatch.setenv("MEMORY_SERVER_TOKEN", "")
    with pytest.raises(InvalidInputError, match="needs a token"):
        await serve(host="0.0.0.0", port=free_port(), database_url=f"sqlite:///{tmp_path / 'y.db'}")
    assert not (tmp_path / "y.db").exists()


@pytest.mark.postgres
def test_cli_serve_refuses_an_unmigrated_postgresql_database(fresh_pg_url: str) -> None:
    done = subprocess.run(
        [AGENT_MEMORY, "serve", "--db", fresh_pg_url, "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "agent-memory db upgrade" in done.stderr
