"""The ``agent-memory`` command."""

from __future__ import annotations

import typer

from . import _bench, _db, _demo, _keywords, _memory, _messages, _recall

app = typer.Typer(
    name="agent-memory",
    help="Long-term memory for AutoGen agents: database, memories, messages, demo and benchmarks.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(_db.app, name="db")
app.add_typer(_memory.app, name="memory")
app.add_typer(_messages.app, name="messages")
app.add_typer(_keywords.app, name="keywords")
app.add_typer(_bench.app, name="bench")
app.command("demo")(_demo.demo_cmd)
app.command("recall")(_recall.recall_cmd)


def main() -> None:
    """Console-script entry point."""
    app()
