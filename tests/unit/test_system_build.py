"""``MemorySystem.build`` refuses what is not its settings or its overrides with one line, before it opens
anything; it builds through the overrides it is given."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_memory.settings import load_settings
from agent_memory.system import MemorySystem, SystemOverrides


@pytest.mark.parametrize("settings", [None, "sqlite+aiosqlite:///x.db", {"memory_database_url": "x"}])
def test_settings_that_are_not_settings_are_refused(settings: object) -> None:
    with pytest.raises(TypeError, match=r"^settings must be AgentMemorySettings \(load_settings\(\.\.\.\)\), got "):
        MemorySystem.build(settings)


@pytest.mark.parametrize("overrides", ["sqlite+aiosqlite:///x.db", {"database_url": "x"}])
def test_overrides_that_are_not_overrides_are_refused(overrides: object) -> None:
    with pytest.raises(TypeError, match=r"^overrides must be a SystemOverrides\(\.\.\.\) or None, got "):
        MemorySystem.build(load_settings(), overrides=overrides)


async def test_the_database_of_the_overrides_is_the_one_opened(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'chosen.db'}"
    system = MemorySystem.build(load_settings(), overrides=SystemOverrides(database_url=url))
    try:
        assert str(system.layer.url) == url
    finally:
        await system.close()
