"""Integrations with other agent frameworks, each in a subpackage that imports its framework only when
used: ``agent_memory.integrations.agent_framework`` (Microsoft Agent Framework, the
``agent-framework`` extra).
"""

__all__: list[str] = []
