"""The terms a search row gives the store's engine (``data_layer._memory_engine.engine_text``): the one
rule, checked against its plain statement on texts with and without what it removes."""

from __future__ import annotations

import random

import pytest

from data_layer._memory_engine import MAX_TERM_BYTES, engine_text


def _rule(text: str) -> str:
    """The rule as stated: non-empty terms, none holding a character below U+0020, none longer than
    MAX_TERM_BYTES in UTF-8, joined by single spaces."""
    kept = [t for t in text.split(" ") if t and all(ch >= " " for ch in t) and len(t.encode()) <= MAX_TERM_BYTES]
    return " ".join(kept)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("数据库 配置  端口 ", "数据库 配置 端口"),
        ("a\tb c", "c"),  # a tab is a control character: the term holding it goes
        ("ok " + "好" * 166 + " end", "ok " + "好" * 166 + " end"),  # 498 bytes: kept
        ("ok " + "好" * 167 + " end", "ok end"),  # 501 bytes: dropped
        ("x" * 500 + " y", "x" * 500 + " y"),
        ("x" * 501 + " y", "y"),
        ("😀" * 125 + " z", "😀" * 125 + " z"),  # 500 bytes of four-byte characters
        ("😀" * 126 + " z", "z"),
        ("", ""),
    ],
)
def test_engine_text_keeps_what_the_engine_can_hold(text: str, expected: str) -> None:
    assert engine_text(text) == expected == _rule(text)


def test_engine_text_is_none_for_none() -> None:
    assert engine_text(None) is None


def test_engine_text_equals_the_rule_on_random_texts() -> None:
    rng = random.Random(5)
    alphabet = ["a", "é", "好", "😀", " ", " ", "\n", "\x00", "\x1f", "~", "\u2028"]
    for _ in range(400):
        pieces = []
        for _ in range(rng.randrange(1, 8)):
            pieces.append("".join(rng.choice(alphabet) for _ in range(rng.choice([1, 3, 40, 124, 126, 200]))))
        text = " ".join(pieces)
        assert engine_text(text) == _rule(text), repr(text[:60])
