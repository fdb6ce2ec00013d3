"""The ``agent-memory`` command.

Only typer and rich are imported here and in the command modules; each command imports the library
when it runs, so ``agent-memory --help`` starts fast.
"""

from __future__ import annotations

import typer

from ..bench import bench_app
from . import _archive, _db, _demo, _exec, _keywords, _mcp, _memory, _messages, _recall, _user
from ._common import run, start_command
from ._serve import serve_cmd
from ._transfer import export_cmd, import_cmd

app = typer.Typer(
    name="agent-memory",
    help=(
        "Long-term memory for AutoGen agents: database, memories, messages, demo and benchmarks.\n\n"
        "Data commands create and migrate a new SQLite file on first use; a PostgreSQL database is "
        "migrated with `agent-memory db upgrade`."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(_db.app, name="db")
app.add_typer(_memory.app, name="memory")
app.add_typer(_messages.app, name="messages")
app.add_typer(_keywords.app, name="keywords")
app.add_typer(_archive.app, name="archive")
app.add_typer(bench_app(run=run), name="bench")
app.add_typer(_user.app, name="user")
app.command("demo")(_demo.demo_cmd)
app.command("recall")(_recall.recall_cmd)
app.command("exec")(_exec.exec_cmd)
app.command("serve")(serve_cmd)
app.command("mcp")(_mcp.mcp_cmd)
app.command("export")(export_cmd)
app.command("import")(import_cmd)


@app.callback()
def _options(
    debug: bool = typer.Option(False, "--debug", help="On an error, also print the Python traceback"),
) -> None:
    """Options for every command."""
    start_command(debug=debug)


def main() -> None:
    """Console-script entry point."""
    app()
