"""The ``agent-memory`` command line (typer + rich)."""

from ._app import app, main

__all__ = ["app", "main"]
