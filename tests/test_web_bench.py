"""``agent-memory bench serve`` on a small scale: the real server as a subprocess, concurrent streams,
every turn answered with the recall card before the first reply token."""

from __future__ import annotations

import subprocess

import pytest

from test_web_server import AGENT_MEMORY


async def test_bench_serve_measures_concurrent_turns() -> None:
    from agent_memory.bench._serve import bench_serve

    figures = await bench_serve(streams=3, turns=2, max_seconds=60)
    assert figures.errors == 0, figures.error_samples
    assert figures.turns == 6 and figures.turns_per_s > 0
    assert 0 < figures.turn_p50_ms <= figures.turn_p95_ms <= figures.turn_max_ms
    assert 0 < figures.first_token_p50_ms <= figures.turn_max_ms
    assert figures.recall_before_reply is True


@pytest.mark.parametrize("args", [["--streams", "0"], ["--streams", "201"], ["--turns", "101"]])
def test_bench_serve_is_bounded(args: list[str]) -> None:
    done = subprocess.run([AGENT_MEMORY, "bench", "serve", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Invalid value" in done.stderr
    assert not done.stdout.strip()  # no figures printed
