"""A new process's first tokenisation: jieba's cache read whole, the IDF table read without jieba.analyse."""

from __future__ import annotations

import marshal
import subprocess
import sys
import tempfile
from pathlib import Path

import jieba
import pytest

from agent_memory.text import ensure_jieba
from agent_memory.text._idf import char_idf, idf_table
from agent_memory.text._tokenize import _load_cache


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _write_cache(folder: Path) -> None:
    ensure_jieba()
    (folder / "jieba.cache").write_bytes(marshal.dumps((jieba.dt.FREQ, jieba.dt.total)))


def test_cache_read_whole_segments_like_jieba(temp_dir: Path) -> None:
    _write_cache(temp_dir)
    fresh = jieba.Tokenizer()
    assert _load_cache(fresh) is True
    assert fresh.initialized and fresh.total == jieba.dt.total and len(fresh.FREQ) == len(jieba.dt.FREQ)
    text = "我上周在东京的咖啡馆和同事讨论了数据库迁移方案"
    assert list(fresh.cut(text)) == list(jieba.dt.cut(text))


@pytest.mark.parametrize("content", [b"", b"not marshal data", marshal.dumps(("a", 1)), marshal.dumps(({}, 0))])
def test_bad_cache_leaves_the_work_to_jieba(temp_dir: Path, content: bytes) -> None:
    (temp_dir / "jieba.cache").write_bytes(content)
    fresh = jieba.Tokenizer()
    assert _load_cache(fresh) is False
    assert not fresh.initialized and fresh.FREQ == {}


def test_missing_cache_or_custom_dictionary_leaves_the_work_to_jieba(temp_dir: Path) -> None:
    assert _load_cache(jieba.Tokenizer()) is False  # no cache file in the folder
    _write_cache(temp_dir)
    words = temp_dir / "words.txt"
    words.write_text("数据库迁移 10 n\n", encoding="utf-8")
    custom = jieba.Tokenizer(str(words))
    assert _load_cache(custom) is False and not custom.initialized


def test_idf_tables_match_jieba_analyse() -> None:
    import jieba.analyse

    table, median = idf_table()
    assert table == jieba.analyse.default_tfidf.idf_freq and median == jieba.analyse.default_tfidf.median_idf
    assert char_idf() == {w: f for w, f in table.items() if len(w) == 1}


def test_first_search_tokenisation_does_not_load_jieba_analyse() -> None:
    """jieba.analyse loads jieba's part-of-speech dictionary (about a second) that nothing here uses."""
    code = (
        "import sys\n"
        "from agent_memory.text import KeywordExtractor, Tokenizer\n"
        "assert '猫' in Tokenizer().tokens('我养了一只猫')\n"
        "assert KeywordExtractor().query_keywords('上周的数据库迁移方案')\n"
        "print(sorted(m for m in sys.modules if m.startswith('jieba.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "jieba.analyse" not in out and "jieba.posseg" not in out, out


@pytest.mark.slow
def test_building_the_system_loads_neither_scikit_learn_nor_the_thesaurus(tmp_path: Path) -> None:
    """Every command, server and MCP start builds the system: importing scikit-learn (about 0.5 s) and
    reading the 同义词词林 (about 0.2 s) waited for it. Both now load when first needed, and a search then
    still expands 老公 with its cilin synonym 丈夫, and the evidence tools' character n-grams still work."""
    code = (
        "import asyncio, sys\n"
        "from agent_memory import MemorySystem\n"
        "from agent_memory.text import cilin_thesaurus\n"
        "async def main(url):\n"
        "    async with MemorySystem.open(url) as system:\n"
        "        await system.ensure_schema()\n"
        "        print('built', 'sklearn' in sys.modules, cilin_thesaurus.cache_info().currsize)\n"
        "        await system.layer.memory.add(user_id='u', memory_key='m1', content='丈夫下个月去北京出差')\n"
        "        hits = await system.search.search('老公', user_id='u')\n"
        "        print('searched', [h.memory_key for h in hits], cilin_thesaurus.cache_info().currsize)\n"
        "        from agent_memory.search import HashingEmbedder\n"
        "        v = await HashingEmbedder(dim=32).embed(['丈夫出差', '丈夫出差'])\n"
        "        print('hashed', v.shape, round(float(v[0] @ v[1]), 3), 'sklearn' in sys.modules)\n"
        "asyncio.run(main(sys.argv[1]))\n"
    )
    url = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    out = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True, check=True).stdout
    lines = out.split("\n")
    assert "built False 0" in lines, out
    assert "searched ['m1'] 1" in lines, out
    assert "hashed (2, 32) 1.0 True" in lines, out


_WARM = """
import asyncio, sys, tempfile
from agent_memory.text._idf import idf_table
from agent_memory.system import MemorySystem

async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with MemorySystem.open(f"sqlite+aiosqlite:///{folder}/m.db") as system:
            await system.ensure_schema()
            before = idf_table.cache_info().currsize
            if sys.argv[1] == "warm":
                await system.search.warm_up()
            else:  # a search waits for the search's part of the warm-up only
                await system.search.search("北京出差", user_id="u1")
            print(before, idf_table.cache_info().currsize)

asyncio.run(main())
"""


@pytest.mark.slow
def test_the_warm_up_loads_the_keyword_idf_table() -> None:
    """A server's warm-up reads the keyword extractor's IDF table, so the first memory written in a new
    process (an archive run) does not read it on the event loop; a process's first search, which starts
    the warm-up and waits for its search part, does not wait for that table."""
    out = {
        kind: subprocess.run([sys.executable, "-c", _WARM, kind], capture_output=True, text=True, timeout=120)
        for kind in ("warm", "cold")
    }
    for kind, done in out.items():
        assert done.returncode == 0, (kind, done.stderr[-2000:])
    assert out["warm"].stdout.split() == ["0", "1"]
    assert out["cold"].stdout.split() == ["0", "0"]
