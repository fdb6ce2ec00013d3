"""``python -m agent_memory.bench ...``: the commands of ``agent-memory bench ...`` (an error is raised
as a Python traceback, not explained in two lines)."""

from agent_memory.bench import bench_app

bench_app()(prog_name="python -m agent_memory.bench")
