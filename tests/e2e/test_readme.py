"""Every Python block of the README, then of the documentation pages that continue its examples, runs as
written, in order, on a fresh SQLite file, with the model answered by a strict OpenAI-compatible server on
loopback (``OPENAI_BASE_URL``, as the README reads it)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from scripted_agent_framework import ScriptedChatClient
from strict_server import Reply, StrictServer

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: The pages whose Python blocks run, in this order, as one program: each page after the README continues
#: the examples of those before it (``system``, ``layer``), and the last one closes the system.
PAGES = (
    README,
    ROOT / "docs" / "search.md",
    ROOT / "docs" / "recall.md",
    ROOT / "docs" / "memory-formation.md",
    ROOT / "docs" / "slots-and-sandbox.md",
)
_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", flags=re.DOTALL)


def python_blocks(page: Path = README) -> list[str]:
    return _PYTHON_BLOCK.findall(page.read_text(encoding="utf-8"))


def _program() -> str:
    parts = []
    for page in PAGES:
        for block in python_blocks(page):
            parts.append(f"# {page.relative_to(ROOT)}\n{block}")
    return "\n".join(parts)


def test_the_readme_has_python_examples() -> None:
    assert len(python_blocks()) >= 2
    assert sum(len(python_blocks(page)) for page in PAGES) >= 6
    assert all(python_blocks(page) for page in PAGES)


def test_every_page_with_python_examples_is_run() -> None:
    """A Python example added to any page of the documentation is run by this test, or this fails."""
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    with_examples = {page for page in pages if python_blocks(page)}
    assert with_examples <= set(PAGES), sorted(str(p.relative_to(ROOT)) for p in with_examples - set(PAGES))


async def test_every_python_block_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the README writes memory.db in the working directory
    from agent_memory.slots import detect_isolation

    if detect_isolation().mechanism == "none":
        # the docs say so: without bubblewrap, code runs need the operator's opt-in (the sandbox
        # tests fail under CI=true when isolation is missing, so this never hides it in CI)
        monkeypatch.setenv("MEMORY_EXEC_ALLOW_UNISOLATED", "true")
    with StrictServer(context_tokens=8192) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        server.script(Reply(text="先把结论写在第一页。"))
        source = "async def _readme():\n" + textwrap.indent(_program(), "    ") + "\n    return locals()\n"
        chat_client = ScriptedChatClient(["先把结论写在第一页。"])  # the Agent Framework example's model
        namespace: dict[str, Any] = {"chat_client": chat_client}
        exec(compile(source, str(README), "exec"), namespace)
        found = await namespace["_readme"]()
        await found["client"].close()
    assert server.errors == []
    assert found["reply"].text == "先把结论写在第一页。"
    assert "[memory:ev-report:" in chat_client.requests[0]["options"]["instructions"]
    assert found["result"].messages[-1].content == "先把结论写在第一页。"
    assert found["rec"].memory_key == "ev-report"
    assert any(h.memory_key == "ev-report" for h in found["hits"])
    assert found["r"].result == 3306
    assert "[memory:ev-report:" in "\n".join(str(m.get("content")) for m in server.requests[-1]["messages"])
