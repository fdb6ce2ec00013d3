"""AutoGen tools whose schema is built once per process, not on every model call.

AutoGen asks each tool of an agent for its schema before every model call
(``StaticWorkbench.list_tools``), and ``BaseTool.schema`` builds it anew from the pydantic input
model each time: a JSON-schema generation per tool per call. A web chat turn makes several model
calls (the recall agent's rounds, the reply), so that was a few per cent of a turn's CPU for
nothing. Our tools' schemas depend only on the tool's class, name, description and input model
(and a form such as the recall agent's compact one), so each is built once.

Every caller gets its own copy: a model client may edit what it is given (strict mode adds fields,
some clients drop ``title``), and that must not change what the next agent of the process sees.

>>> class Echo(FixedSchemaTool[EchoInput, EchoOutput]):  # doctest: +SKIP
...     def __init__(self) -> None:
...         super().__init__(EchoInput, EchoOutput, "echo", "Repeat the text")
>>> Echo().schema["parameters"]["properties"]  # doctest: +SKIP
{'text': {'type': 'string', 'title': 'Text'}}
"""

from __future__ import annotations

import marshal
from typing import Any, TypeVar

from autogen_core.tools import BaseTool, ToolSchema
from pydantic import BaseModel

ArgsT = TypeVar("ArgsT", bound=BaseModel, contravariant=True)
ReturnT = TypeVar("ReturnT", bound=Any, covariant=True)

#: Built schemas by (class, name, description, input model, strict, form), in ``marshal``'s form: a
#: schema is JSON-like, and loading it is a fresh copy at half the cost of copying the dicts in
#: Python (a turn asks for about 27 schemas).
_SCHEMAS: dict[tuple[Any, ...], bytes] = {}
#: A bound on the cache, for a subclass that makes a new description per instance (then the
#: schemas past the bound are built per call, as AutoGen's own tools do).
MAX_SCHEMAS = 1_000


class FixedSchemaTool(BaseTool[ArgsT, ReturnT]):
    """A ``BaseTool`` whose schema is built once (see the module docs).

    A subclass whose schema has several forms names the form in :meth:`schema_form` and builds it
    in :meth:`build_schema` (starting from ``super().build_schema()``).
    """

    @property
    def schema(self) -> ToolSchema:
        key = (type(self), self.name, self.description, self.args_type(), self._strict, self.schema_form())
        frozen = _SCHEMAS.get(key)
        if frozen is None:
            frozen = marshal.dumps(dict(self.build_schema()))
            if len(_SCHEMAS) < MAX_SCHEMAS:
                _SCHEMAS[key] = frozen
        return marshal.loads(frozen)

    def schema_form(self) -> object:
        """What else the schema depends on (``None``: nothing)."""
        return None

    def build_schema(self) -> ToolSchema:
        """The schema as AutoGen builds it from the input model."""
        # on the class, mypy types the property as its value; it is the property, whose getter this calls
        return BaseTool.schema.fget(self)  # type: ignore[attr-defined]
