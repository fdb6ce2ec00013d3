"""Under CI=true an unreachable PostgreSQL fails the run instead of skipping its tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests/storage/test_isolation.py::test_settings"
UNREACHABLE = "postgresql+psycopg://postgres@127.0.0.1:1/postgres"


def _run(ci: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": ci, "AGENT_MEMORY_TEST_PG_URL": UNREACHABLE}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TARGET],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_unreachable_postgres_fails_under_ci() -> None:
    result = _run("true")
    assert result.returncode != 0
    assert "PostgreSQL is required under CI=true" in result.stdout


def test_unreachable_postgres_skips_locally() -> None:
    result = _run("")
    assert result.returncode == 0, result.stdout
    assert "1 passed, 1 skipped" in result.stdout
