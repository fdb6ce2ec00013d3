"""Every Python block of the README runs as written, in order, on a fresh SQLite file, with the model
answered by a strict OpenAI-compatible server on loopback (``OPENAI_BASE_URL``, as the README reads it)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from scripted_agent_framework import ScriptedChatClient
from strict_server import Reply, StrictServer

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_readme_has_python_examples() -> None:
    assert len(python_blocks()) >= 4


async def test_every_python_block_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the README writes memory.db in the working directory
    from agent_memory.slots import detect_isolation

    if detect_isolation().mechanism == "none":
        # the README says so: without bubblewrap, code runs need the operator's opt-in (the sandbox
        # tests fail under CI=true when isolation is missing, so this never hides it in CI)
        monkeypatch.setenv("MEMORY_EXEC_ALLOW_UNISOLATED", "true")
    with StrictServer(context_tokens=8192) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        server.script(Reply(text="先把结论写在第一页。"))
        body = "\n".join(python_blocks())
        source = "async def _readme():\n" + textwrap.indent(body, "    ") + "\n    return locals()\n"
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
    assert found["r"].result == 3306
    assert "[memory:ev-report:" in "\n".join(str(m.get("content")) for m in server.requests[-1]["messages"])
