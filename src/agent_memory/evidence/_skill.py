"""Agent Skills: a folder with ``SKILL.md`` (YAML front matter + Markdown instructions).

The evidence recall loads its skill as the recall agent's instructions, and its offline planner reads
the same file's ``metadata`` (time windows, role words, anchor counts), so the model-driven and the
offline recall follow one specification.

>>> skill = load_skill("evidence-recall")
>>> skill.name, skill.metadata["anchors"]
('evidence-recall', 2)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml


@dataclass(frozen=True, slots=True)
class Skill:
    """A loaded skill: its name, description, metadata and instructions (the Markdown body)."""

    name: str
    description: str
    metadata: dict[str, Any]
    instructions: str


@cache
def load_skill(name: str) -> Skill:
    """The packaged skill ``name`` (``agent_memory/evidence/skills/<name>/SKILL.md``)."""
    if not name.replace("-", "").isalnum():
        raise ValueError(f"skill names are letters, digits and dashes, not {name!r}")
    path = resources.files("agent_memory.evidence").joinpath("skills", name, "SKILL.md")
    text = path.read_text(encoding="utf-8")
    return parse_skill(text)


def parse_skill(text: str) -> Skill:
    """Parse a SKILL.md text: ``---`` front matter with ``name`` and ``description``, then the body."""
    if not text.startswith("---\n"):
        raise ValueError("a SKILL.md starts with YAML front matter between --- lines")
    head, _, body = text[4:].partition("\n---\n")
    meta = yaml.safe_load(head) or {}
    if not isinstance(meta, dict) or not meta.get("name") or not meta.get("description"):
        raise ValueError("a skill's front matter needs name and description")
    return Skill(
        str(meta["name"]), " ".join(str(meta["description"]).split()), dict(meta.get("metadata") or {}), body.strip()
    )
