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
from typing import Any

import httpx
import pytest

from test_web_server import AGENT_MEMORY, free_port, idle_connection_is_kept

#: slow: several server processes each
pytestmark = pytest.mark.slow

#: When a run that waits for a condition is taken as hung (not a measure of speed: a loaded machine
#: takes minutes to start two workers).
HUNG_S = 600


def _start(db: Path, port: int) -> subprocess.Popen[str]:
    env = {**os.environ, "MEMORY_SERVER_TOKEN": "", "MEMORY_SERVER_HOST": "127.0.0.1", "MEMORY_CHAT_MODEL_CLIENT": ""}
    proc = subprocess.Popen(
        [AGENT_MEMORY, "serve", "--db", str(db), "--port", str(port), "--workers", "2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
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
        assert health["workers"]["serving"] == 2 and health["workers"]["expected"] == 2
        assert idle_connection_is_kept(port, 6.0)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_browsers_come_back_to_a_restarted_worker(tmp_path: Path) -> None:
    """A worker is killed (uvicorn's supervisor starts it again): its browsers reconnect to the other.
    With idle connections kept 75 s, they stayed there as long as their people kept talking (12 of 12);
    the crowded worker's answers now close connections until the two are level."""
    import http.client
    import signal
    import threading

    port = free_port()
    proc = _start(tmp_path / "web.db", port)
    stop = threading.Event()

    def health() -> dict[str, object]:
        return dict(httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()["workers"])

    def browser() -> None:  # a keep-alive client asking every 0.3 s
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        while not stop.is_set():
            try:
                conn.request("GET", "/healthz")
                conn.getresponse().read()
            except (OSError, http.client.HTTPException):
                conn.close()  # the killed worker's connection: the next request connects anew
            stop.wait(0.3)
        conn.close()

    threads = [threading.Thread(target=browser, daemon=True) for _ in range(12)]
    try:
        deadline = time.monotonic() + 30
        while health()["serving"] != 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        workers = [int(p) for p in children if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert len(workers) == 2, children
        for thread in threads:
            thread.start()
        time.sleep(1.5)
        os.kill(max(workers), signal.SIGKILL)
        deadline, seen = time.monotonic() + 40, health()
        while seen["serving"] != 1 and time.monotonic() < deadline:  # the board shows the worker gone
            time.sleep(0.1)
            seen = health()
        while time.monotonic() < deadline:
            seen = health()
            held = sorted(seen["connections"])
            if seen["serving"] == 2 and sum(held) >= 12 and held[-1] - held[0] <= 2:
                break
            time.sleep(0.3)
        else:
            raise AssertionError(f"the browsers stayed with one worker: {seen}")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=15)
        proc.terminate()
        proc.wait(timeout=30)


class _Answers:
    """A loopback server whose ``/healthz`` answers are given in turn (the last one repeats)."""

    def __init__(self, answers: list[bytes]) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        pending = list(answers)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pending.pop(0) if len(pending) > 1 else pending[0]
                cut = body.startswith(b"CUT")
                self.send_response(200)
                self.send_header("Content-Length", "100" if cut else str(len(body)))
                self.end_headers()
                self.wfile.write(body[3:] if cut else body)  # CUT: fewer bytes than announced
                if cut:
                    self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _watched(answers: list[bytes], seconds: float) -> tuple[list[str], bool]:
    """What the watcher announced in ``seconds``, and whether it gave up."""
    import threading

    from agent_memory.web._app import _watch

    fake = _Answers(answers)
    announced: list[str] = []
    gave_up, stopped = threading.Event(), threading.Event()
    watcher = threading.Thread(target=_watch, args=(fake.address, gave_up, stopped, announced.append), daemon=True)
    try:
        watcher.start()
        watcher.join(seconds)
        return announced, gave_up.is_set()
    finally:
        stopped.set()
        watcher.join(5)
        fake.close()


def test_the_server_is_announced_once_every_worker_serves_despite_a_cut_answer() -> None:
    """A worker gone mid-answer (a body cut short) does not end the watch: it asks again, and announces
    the server once both workers serve."""
    one = b'{"status": "ok", "workers": {"serving": 1, "expected": 2, "connections": [0]}}'
    two = b'{"status": "ok", "workers": {"serving": 2, "expected": 2, "connections": [0, 0]}}'
    announced, gave_up = _watched([b"CUT" + one, one, one, two], seconds=10)
    assert not gave_up and len(announced) == 1 and announced[0].startswith("http://127.0.0.1:")


def test_a_worker_that_never_serves_delays_the_announcement_then_is_warned_about(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from agent_memory.web import _app

    monkeypatch.setattr(_app, "ALL_WORKERS_S", 0.6)
    one = b'{"status": "ok", "workers": {"serving": 1, "expected": 2, "connections": [0]}}'
    with caplog.at_level(logging.WARNING, logger="agent_memory.web._app"):
        announced, gave_up = _watched([one], seconds=5)
    assert not gave_up and len(announced) == 1
    assert any("not every worker serves" in r.getMessage() and "'serving': 1" in r.getMessage() for r in caplog.records)


_SLOW_SECOND_WORKER = """
import os
if os.environ.get("AGENT_MEMORY_SERVE_WORKER") and os.environ.get("TEST_SLOW_DIR"):
    import asyncio
    import agent_memory.web._app as _app
    _made = _app.worker_app
    def worker_app():
        app = _made()
        try:  # the first worker to get here starts as usual
            os.close(os.open(os.path.join(os.environ["TEST_SLOW_DIR"], "first"), os.O_CREAT | os.O_EXCL))
            return app
        except FileExistsError:
            pass
        parent = os.getppid()
        release = os.path.join(os.environ["TEST_SLOW_DIR"], "release")
        async def slow(scope, receive, send):  # the second one's warm-up lasts until the test releases it
            if scope["type"] == "lifespan":
                while not os.path.exists(release) and os.getppid() == parent:  # (or its server is gone)
                    await asyncio.sleep(0.05)
            await app(scope, receive, send)
        return slow
    _app.worker_app = worker_app
"""


def test_stopping_while_a_worker_still_starts_is_no_error(tmp_path: Path) -> None:
    """Ctrl-C after the first worker answered but before the second listens (the address not announced
    yet) stops the server as any Ctrl-C does: not with "no worker answered"."""
    import signal

    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(_SLOW_SECOND_WORKER, encoding="utf-8")
    port = free_port()
    env = {
        **os.environ,
        "MEMORY_SERVER_TOKEN": "",
        "MEMORY_SERVER_HOST": "127.0.0.1",
        "MEMORY_CHAT_MODEL_CLIENT": "",
        "PYTHONPATH": str(tmp_path / "site"),
        "TEST_SLOW_DIR": str(tmp_path),
    }
    command = [AGENT_MEMORY, "serve", "--db", str(tmp_path / "web.db"), "--port", str(port), "--workers", "2"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def health() -> Any:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).json()
        except httpx.TransportError:  # not listening, or no worker takes the connection
            return None

    try:
        # the second worker cannot serve before it is released: the first one's answer says 1 of 2,
        # however long the start takes on a busy machine (the deadline only ends a hung run)
        deadline, first = time.monotonic() + HUNG_S, None
        while first is None and time.monotonic() < deadline and proc.poll() is None:
            first = health()
            if first is None:
                time.sleep(0.1)
        assert first is not None and first["workers"]["serving"] == 1, first
        proc.send_signal(signal.SIGINT)
        while health() is not None and time.monotonic() < deadline:  # the server stops the first worker
            time.sleep(0.1)
        (tmp_path / "release").touch()  # the second worker ends its start while its server stops
        out, err = proc.communicate(timeout=HUNG_S)
    finally:
        (tmp_path / "release").touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert "no worker answered" not in err and "127.0.0.1" not in out, (out, err)
    assert proc.returncode == 0, err[-2000:]


def test_the_watch_gives_up_and_stops_the_server_when_no_worker_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """No worker answers within READY_SECONDS: the watcher stops the supervisor (as Ctrl-C would) and
    says so, which the server turns into "no worker answered"; a Ctrl-C of the user sets nothing."""
    import signal
    import threading

    from agent_memory.web import _app

    monkeypatch.setattr(_app, "READY_SECONDS", 0.5)
    signals: list[tuple[int, int]] = []
    monkeypatch.setattr(_app.os, "kill", lambda pid, sig: signals.append((pid, sig)))
    announced: list[str] = []
    gave_up, stopped = threading.Event(), threading.Event()
    closed = f"http://127.0.0.1:{free_port()}/"  # nothing listens there
    watcher = threading.Thread(target=_app._watch, args=(closed, gave_up, stopped, announced.append), daemon=True)
    watcher.start()
    watcher.join(10)
    assert not watcher.is_alive() and gave_up.is_set() and not announced
    assert signals == [(os.getpid(), signal.SIGTERM)]


def test_every_worker_serves_is_read_the_same_by_the_server_and_the_bench() -> None:
    from agent_memory.web._api import every_worker_serves

    assert every_worker_serves({"status": "ok"})  # a single process
    assert every_worker_serves({"workers": {"serving": 2, "expected": 2, "connections": [0, 0]}})
    assert not every_worker_serves({"workers": {"serving": 1, "expected": 2, "connections": [3]}})
