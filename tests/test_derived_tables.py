"""Tables derived from installed data files (thesaurus index, predicate words, character IDF) are saved
once and read back by later processes, only when derived from the same inputs, never from a folder
another user could write, and a damaged file is derived again rather than failing."""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_memory.text._derived import derived_table


class Builder:
    """Derives a sorted word list from a source file and counts how often it had to."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.builds = 0

    def __call__(self) -> list[str]:
        self.builds += 1
        return sorted(self.source.read_text(encoding="utf-8").split())


def _adopt(raw: object) -> tuple[str, ...] | None:
    if isinstance(raw, list) and all(isinstance(w, str) for w in raw):
        return tuple(raw)
    return None


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    source, code, folder = tmp_path / "words.txt", tmp_path / "rule.py", tmp_path / "cache"
    source.write_text("猫 狗 鱼", encoding="utf-8")
    code.write_text("RULE = 1\n", encoding="utf-8")
    return source, code, folder


def _table(source: Path, code: Path, folder: Path, build: Builder) -> tuple[str, ...]:
    return derived_table("words", sources=[source], code=code, build=build, adopt=_adopt, folder=folder)


def test_a_table_is_built_once_and_read_back(files: tuple[Path, Path, Path]) -> None:
    source, code, folder = files
    build = Builder(source)
    assert _table(source, code, folder, build) == tuple(sorted(["猫", "狗", "鱼"])) and build.builds == 1
    assert _table(source, code, folder, build) == tuple(sorted(["猫", "狗", "鱼"])) and build.builds == 1
    saved = list(folder.glob("words-*.marshal"))
    assert len(saved) == 1 and marshal.loads(saved[0].read_bytes()) == sorted(["猫", "狗", "鱼"])
    if os.name == "posix":
        assert folder.stat().st_mode & 0o777 == 0o700 and saved[0].stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("change", ["source", "code"])
def test_other_inputs_derive_the_table_again(files: tuple[Path, Path, Path], change: str) -> None:
    source, code, folder = files
    build = Builder(source)
    _table(source, code, folder, build)
    if change == "source":
        source.write_text("猫 狗 鱼 鸟", encoding="utf-8")
    else:
        code.write_text("RULE = 2\n", encoding="utf-8")
    table = _table(source, code, folder, build)
    assert build.builds == 2
    assert table == tuple(sorted(source.read_text(encoding="utf-8").split()))
    assert len(list(folder.glob("words-*.marshal"))) == 1  # the table of the old inputs is removed


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", marshal.dumps({"not": "a list"}), marshal.dumps([1, 2])])
def test_a_damaged_file_is_derived_again_and_replaced(files: tuple[Path, Path, Path], damage: bytes) -> None:
    source, code, folder = files
    build = Builder(source)
    _table(source, code, folder, build)
    (saved,) = folder.glob("words-*.marshal")
    saved.write_bytes(damage)
    assert _table(source, code, folder, build) == tuple(sorted(["猫", "狗", "鱼"]))
    assert build.builds == 2
    assert marshal.loads(saved.read_bytes()) == sorted(["猫", "狗", "鱼"])


@pytest.mark.skipif(os.name != "posix", reason="POSIX owners and modes")
def test_a_folder_others_may_write_to_is_neither_read_nor_written(files: tuple[Path, Path, Path]) -> None:
    source, code, folder = files
    build = Builder(source)
    _table(source, code, folder, build)
    (saved,) = folder.glob("words-*.marshal")
    saved.write_bytes(marshal.dumps(["planted"]))
    folder.chmod(0o777)
    assert _table(source, code, folder, build) == tuple(sorted(["猫", "狗", "鱼"]))
    assert build.builds == 2
    assert marshal.loads(saved.read_bytes()) == ["planted"]  # not replaced either


def test_an_unusable_folder_only_costs_the_build(files: tuple[Path, Path, Path]) -> None:
    source, code, folder = files
    folder.write_text("a file where the folder should be", encoding="utf-8")
    build = Builder(source)
    assert _table(source, code, folder, build) == tuple(sorted(["猫", "狗", "鱼"]))
    assert _table(source, code, folder, build) == tuple(sorted(["猫", "狗", "鱼"]))
    assert build.builds == 2 and folder.is_file()


def test_a_build_of_the_wrong_shape_is_an_error(files: tuple[Path, Path, Path]) -> None:
    source, code, folder = files
    with pytest.raises(ValueError, match="words table"):
        derived_table("words", sources=[source], code=code, build=lambda: {"a": 1}, adopt=_adopt, folder=folder)
    assert not list(folder.glob("words-*.marshal"))


_DIGESTS = (
    "import hashlib, marshal\n"
    "from agent_memory.text import cilin_thesaurus\n"
    "from agent_memory.text._idf import char_idf\n"
    "from agent_memory.text._informativeness import _predicate_words\n"
    "t = cilin_thesaurus()\n"
    "print(hashlib.sha256(repr(t._state()).encode()).hexdigest(), t.related('老公').get('丈夫'))\n"
    "print(hashlib.sha256(repr(sorted(_predicate_words())).encode()).hexdigest())\n"
    "print(hashlib.sha256(repr(sorted(char_idf().items())).encode()).hexdigest())\n"
)


def test_the_search_tables_read_back_equal_what_a_build_gives(tmp_path: Path) -> None:
    """Two fresh processes on an empty cache folder: the first derives and saves the three tables, the
    second reads them back; both hold exactly what deriving them in this process gives."""
    from agent_memory.text import Thesaurus
    from agent_memory.text._idf import _scan_chars
    from agent_memory.text._informativeness import _scan_predicates
    from agent_memory.text._thesaurus import _cilin_file, _leaves

    tree = json.loads(Path(_cilin_file().locate()).read_text(encoding="utf-8"))
    built = Thesaurus(dict(leaf for top, node in tree.items() for leaf in _leaves(node, top)))
    expected = [
        f"{hashlib.sha256(repr(built._state()).encode()).hexdigest()} 0.8",
        hashlib.sha256(repr(sorted(_scan_predicates())).encode()).hexdigest(),
        hashlib.sha256(repr(sorted(_scan_chars().items())).encode()).hexdigest(),
    ]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def run() -> tuple[list[str], dict[str, int]]:
        out = subprocess.run([sys.executable, "-c", _DIGESTS], capture_output=True, text=True, check=True, env=env)
        return out.stdout.split("\n")[:3], {
            p.name: p.stat().st_mtime_ns for p in (tmp_path / "cache").rglob("*.marshal")
        }

    first, saved = run()
    assert sorted(name.split("-")[0] for name in saved) == ["char", "cilin", "predicate"]
    second, read = run()
    assert first == second == expected
    assert read == saved  # the second process read the tables back: nothing was derived and saved again
