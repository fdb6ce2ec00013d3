"""``.env.example`` lists every setting, each with a comment, and its values load."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_memory.settings import AgentMemorySettings, load_settings

EXAMPLE = Path(__file__).resolve().parents[2] / ".env.example"


def _entries() -> dict[str, str]:
    text = EXAMPLE.read_text(encoding="utf-8")
    return {m.group(1): m.group(2) for m in re.finditer(r"^#?\s*(MEMORY_[A-Z_]+)=(.*)$", text, re.M)}


def test_every_setting_is_listed_with_a_comment() -> None:
    listed = _entries()
    assert set(listed) == {name.upper() for name in AgentMemorySettings.model_fields}
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    for name in listed:
        index = next(i for i, line in enumerate(lines) if re.match(rf"^#?\s*{name}=", line))
        assert lines[index - 1].startswith("#"), f"{name} has no comment above it"


def test_example_values_are_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    active = {k: v for k, v in _entries().items() if k != "MEMORY_DATABASE_URL"}
    for name, value in active.items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    assert settings.memory_recall_rounds == int(active["MEMORY_RECALL_ROUNDS"])
