"""``agent-memory bench serve`` on a small scale: the real server as a subprocess, concurrent streams,
every turn answered with the recall card before the first reply token; ``bench turns``, the same turns
in one process."""

from __future__ import annotations

import subprocess

import pytest

from test_web_server import AGENT_MEMORY


@pytest.mark.slow
async def test_bench_serve_measures_concurrent_turns() -> None:
    from agent_memory.bench._serve import bench_serve

    figures = await bench_serve(streams=3, turns=2, max_seconds=60)
    assert figures.errors == 0, figures.error_samples
    assert figures.turns == 6 and figures.turns_per_s > 0
    assert 0 < figures.turn_p50_ms <= figures.turn_p95_ms <= figures.turn_max_ms
    assert 0 < figures.first_token_p50_ms <= figures.turn_max_ms
    assert figures.recall_before_reply is True


@pytest.mark.parametrize("recall", [True, False])
async def test_bench_turns_runs_every_turn_in_process_with_the_recall_or_without(recall: bool) -> None:
    from agent_memory.bench._turns import bench_turns

    figures = await bench_turns(users=3, turns=2, recall=recall)
    assert figures.errors == 0, figures.error_samples
    assert figures.turns == 6 and figures.turns_per_s > 0 and figures.cpu_per_turn_ms > 0
    assert 0 < figures.turn_p50_ms <= figures.turn_p95_ms
    assert figures.first_turn_p50_ms > 0 and figures.later_turn_p50_ms > 0
    assert figures.recalled_turns == (6 if recall else 0)  # the recall card, as the page gets it


@pytest.mark.parametrize("kwargs", [{"users": 0}, {"users": 501}, {"turns": 101}, {"turns": True}])
async def test_bench_turns_is_bounded(kwargs: dict[str, object]) -> None:
    from agent_memory.bench._turns import bench_turns

    with pytest.raises(ValueError, match="must be a whole number"):
        await bench_turns(**kwargs)


@pytest.mark.parametrize(
    ("bench", "args"),
    [
        ("serve", ["--streams", "0"]),
        ("serve", ["--streams", "201"]),
        ("serve", ["--turns", "101"]),
        ("turns", ["--users", "0"]),
        ("turns", ["--users", "501"]),
        ("turns", ["--turns", "0"]),
    ],
)
def test_bench_serve_is_bounded(bench: str, args: list[str]) -> None:
    done = subprocess.run([AGENT_MEMORY, "bench", bench, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Invalid value" in done.stderr
    assert not done.stdout.strip()  # no figures printed


async def _sse_server(events: list[bytes]) -> tuple[object, str, list[int]]:
    """A loopback HTTP server answering every chat POST with ``events`` as a server-sent stream, the
    last one a moment later (as the web app's stream ends after its ``done`` event); it records the
    client port of each request (the same port: the same connection)."""
    import asyncio

    from aiohttp import web

    ports: list[int] = []

    async def chat(request: web.Request) -> web.StreamResponse:
        ports.append(request.transport.get_extra_info("peername")[1])
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for i, event in enumerate(events):
            if i and i == len(events) - 1:
                await asyncio.sleep(0.05)
            await response.write(event)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/api/friends/{friend}/chat", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, f"http://127.0.0.1:{port}", ports


async def test_a_stream_keeps_its_connection_across_turns() -> None:
    """Each turn's stream is read to its end, so the next turn reuses the connection, as a browser's
    would (a stream left unread after ``done`` made aiohttp close it: a new connection every turn)."""
    import aiohttp

    from agent_memory.bench._serve import _turn

    events = [
        b'data: {"type": "tool_call"}\n\n',
        b'data: {"type": "token", "text": "hi"}\n\n',
        b'data: {"type": "done"}\n\n',
        b": a comment after the reply\n\n",
    ]
    runner, base, ports = await _sse_server(events)
    try:
        async with aiohttp.ClientSession(base_url=base) as client:
            turns = [await _turn(client, "f1", "你好") for _ in range(3)]
    finally:
        await runner.cleanup()
    assert all(total > 0 and ordered for total, _, ordered in turns)
    assert len(ports) == 3 and len(set(ports)) == 1, ports


async def test_a_stream_without_its_done_event_is_an_error() -> None:
    import aiohttp

    from agent_memory.bench._serve import _turn

    runner, base, _ = await _sse_server([b'data: {"type": "token", "text": "hi"}\n\n'])
    try:
        async with aiohttp.ClientSession(base_url=base) as client:
            with pytest.raises(RuntimeError, match="without its done event"):
                await _turn(client, "f1", "你好")
    finally:
        await runner.cleanup()
