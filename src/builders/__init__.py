"""Builders that wire agent-fusion-memory into AutoGen agents (``AgentBuilder`` arrives with recall)."""

__all__: list[str] = []
