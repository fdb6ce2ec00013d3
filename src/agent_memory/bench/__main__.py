"""``python -m agent_memory.bench ...`` is ``agent-memory bench ...``."""

from agent_memory.cli._bench import app

app(prog_name="python -m agent_memory.bench")
