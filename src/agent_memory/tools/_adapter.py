"""A :class:`MemoryToolbox` method as an AutoGen tool.

Bad arguments from the model come back as the tool's output model with ``success=False`` and a message
(never an exception), and a handoff with bad arguments still ends the recall: the ledger notes why,
and what the searches found is kept.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from autogen_core import CancellationToken
from autogen_core.tools import ToolSchema
from pydantic import BaseModel, ValidationError

from .._fixed_schema import FixedSchemaTool
from ._models import ExpandContextWindowOutput, HandoffOutput, SearchMemoriesOutput
from ._registry import MEMRECALL_TOOLS
from ._toolbox import MemoryToolbox


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip()


def _first_clause(text: str) -> str:
    """A field description up to its first example or full stop."""
    for mark in ("。例如", "，例如", "。", "，如 ", "，低于"):
        if mark in text:
            return text.split(mark, 1)[0]
    return text


class ScopedTool(FixedSchemaTool[BaseModel, BaseModel]):
    """A toolbox method as an AutoGen tool; bad arguments come back as the output model, not an error.

    ``compact`` sends the model a short schema (the description's first line, field descriptions
    cut at the first sentence): the same fields, a fraction of the tokens a small model must read.
    """

    def __init__(self, box: MemoryToolbox, name: str, *, compact: bool = False) -> None:
        spec = MEMRECALL_TOOLS[name]
        description = _first_line(spec.description) if compact else spec.description
        super().__init__(spec.input_model, spec.output_model, spec.name, description)
        self._call: Callable[[Any], Awaitable[BaseModel]] = getattr(box, name)
        self._box = box
        self._spec = spec
        self._compact = compact

    def schema_form(self) -> object:
        return self._compact

    def build_schema(self) -> ToolSchema:
        full = super().build_schema()
        if not self._compact:
            return full
        parameters = full.get("parameters", None)
        if parameters is not None:
            for prop in parameters["properties"].values():
                prop.pop("title", None)
                if isinstance(prop.get("description"), str):
                    prop["description"] = _first_clause(prop["description"])
        return full

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> BaseModel:
        return await self._call(args)

    async def run_json(self, args: Any, cancellation_token: CancellationToken, call_id: str | None = None) -> BaseModel:
        try:
            parsed = self._spec.input_model.model_validate(args)
        except ValidationError as exc:
            return self._invalid(exc)
        return await self.run(parsed, cancellation_token)

    def _invalid(self, exc: ValidationError) -> BaseModel:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors())
        message = f"参数无效，请修正后重试: {problems}"
        out = self._spec.output_model
        if out is ExpandContextWindowOutput:
            refused = self._box.refused_expansion(message)
            self._box.ledger.expansions.append(refused)
            return refused
        if out is SearchMemoriesOutput:
            return SearchMemoriesOutput(success=False, total_found=0, message=message)
        if out is HandoffOutput:
            # the handoff ends the run whatever its arguments: keep what the searches found
            self._box.ledger.handoff_problem = problems
            return HandoffOutput(
                success=False,
                message=f"handoff 参数无效 ({problems})；召回已结束，将使用搜索到的最相关记忆",
                task_completed=True,
            )
        return out.model_validate({"success": False, "message": message})

    def return_value_as_string(self, value: Any) -> str:
        if isinstance(value, BaseModel):
            return value.model_dump_json(exclude_none=True)  # UTF-8, not \\u escapes: fewer tokens
        return str(value)
