"""The layer rules of the source, read from its imports (``ast``, no import is run).

A package is ``data_layer``, ``builders`` or a subpackage of ``agent_memory`` (``agent_memory.search``,
...). A package's private modules (a path part starting with ``_``) are its own: another package
imports what the owner's ``__init__`` exports. The modules at the root of ``agent_memory`` (such as
``agent_memory._fixed_schema``) are shared by all its subpackages. Every import counts, also one
inside a function or under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ROOTS = ("agent_memory", "data_layer", "builders")


@dataclass(frozen=True, slots=True)
class Import:
    """One import: the importing module, the module imported and where it is written."""

    importer: str
    target: str
    where: str


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(dotted: str) -> bool:
    base = SRC.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imports_of(path: Path) -> Iterator[Import]:
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        where = f"{path.relative_to(SRC.parent)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, alias.name, where)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            yield Import(name, module, where)
            for alias in node.names:  # ``from pkg import _module`` imports a module too
                if _is_module(f"{module}.{alias.name}"):
                    yield Import(name, f"{module}.{alias.name}", where)


@functools.cache
def _all_imports() -> tuple[Import, ...]:
    return tuple(imp for root in ROOTS for path in sorted((SRC / root).rglob("*.py")) for imp in _imports_of(path))


def package_of(module: str) -> str:
    """The package a module belongs to: ``agent_memory.search._engine`` -> ``agent_memory.search``."""
    parts = module.split(".")
    if parts[0] == "agent_memory":
        return "agent_memory" if len(parts) == 1 or parts[1].startswith("_") else ".".join(parts[:2])
    return parts[0]


def is_private_elsewhere(imp: Import) -> bool:
    """Whether ``imp`` reaches into a private module of a package other than the importer's."""
    if imp.target.split(".")[0] not in ROOTS:
        return False
    owner = package_of(imp.target)
    if owner == package_of(imp.importer) or owner == "agent_memory":
        return False
    inside = imp.target.split(".")[len(owner.split(".")) :]
    return any(part.startswith("_") and not part.startswith("__") for part in inside)


def test_the_rules_see_the_imports_they_are_about() -> None:
    """The reader finds relative, absolute, in-function and module-as-name imports (a rule over an empty
    list would pass whatever the source held)."""
    imports = _all_imports()
    assert len(imports) > 1000
    assert Import("agent_memory.system._system", "agent_memory.search", "") in {
        Import(i.importer, i.target, "") for i in imports
    }
    private = Import("agent_memory.cli._db", "agent_memory.search._analyzer", "")
    assert is_private_elsewhere(private)
    assert not is_private_elsewhere(Import("agent_memory.search._engine", "agent_memory.search._analyzer", ""))
    assert not is_private_elsewhere(Import("data_layer.migrations.env", "data_layer._tables", ""))
    assert not is_private_elsewhere(Import("agent_memory.tools._adapter", "agent_memory._fixed_schema", ""))
    assert is_private_elsewhere(Import("builders._agent_builder", "data_layer._types", ""))


def test_no_package_imports_another_packages_private_modules() -> None:
    found = [f"{i.where}: {i.target}" for i in _all_imports() if is_private_elsewhere(i)]
    assert found == []


@pytest.mark.parametrize(
    ("lower", "upper"),
    [
        ("agent_memory.context", "agent_memory.system"),  # the system builds contexts and hands itself in
        ("agent_memory.bench", "agent_memory.cli"),  # the CLI adds the bench command group
        ("data_layer", "agent_memory"),  # the lowest layer
    ],
)
def test_a_lower_layer_does_not_import_an_upper_one(lower: str, upper: str) -> None:
    found = [
        f"{i.where}: {i.target}"
        for i in _all_imports()
        if (i.importer == lower or i.importer.startswith(lower + "."))
        and (i.target == upper or i.target.startswith(upper + "."))
    ]
    assert found == []
