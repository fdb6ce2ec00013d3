"""What keyword extraction reads of a long text: a bounded, evenly spread sample, priced as jieba works.

A memory may hold 100 KB (``MAX_CONTENT_BYTES``) or, as command output, megabytes. Keyword weights only
need a representative sample, so a long text is cut into windows of about ``window_chars`` characters
(each boundary moved to the next space or punctuation mark nearby, where the tokenizer splits anyway)
and windows are read in an order whose every prefix is spread over the text: the head first, then the
middle, the quarters, the eighths... Reading stops when the characters read reach ``max_chars`` or the
estimated cost reaches ``max_cost``.

Why a cost and not only characters: jieba's price per character differs by two orders of magnitude.
English costs about 0.1 µs a character, dictionary Chinese about 1.5 µs, and Chinese that jieba finds
no dictionary words in goes through its HMM at about 10 µs a character (random characters: 100 KB of
them took 170-255 ms even when sampled to 12,000 characters). The cost of a window is estimated from
what it gave, so realistic text reads up to ``max_chars`` and random Chinese stops after a few windows.
Small windows also keep the HMM's runs short (its Viterbi copies paths, so a long run costs more than
linear time).

A text of at most ``whole_bytes`` UTF-8 bytes (a normal memory) is read whole, in one piece: its
keywords are exactly those of the unsampled extraction.

>>> budget = ScanBudget(window_chars=8, max_chars=16, snap_chars=2)
>>> list(budget.windows("short"))
['short']
>>> len("".join(budget.windows("alpha beta gamma delta " * 200))) <= 16 + 2 * 8
True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass

from ._tokenize import is_cjk_word

#: Characters extraction reads of a long text at most (the rest is represented by the sample).
KEYWORD_SCAN_CHARS = 12_000

_CJK_CHAR = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
#: Where a window may end: the tokenizer never joins words across these.
_SEPARATOR = re.compile(r"[\s,.;:!?，。；：！？、]")

#: Estimated cost (µs) per character, per Chinese character, and per Chinese character not inside a
#: dictionary word of two or more characters (HMM work, stop words, single characters).
CHAR_COST = 0.1
CJK_COST = 1.5
LOOSE_CJK_COST = 10.0


@dataclass(frozen=True, slots=True)
class ScanBudget:
    """How much of a text keyword extraction reads (see the module docs).

    >>> ScanBudget().whole("数据库配置 " * 10)
    True
    """

    #: A text of at most this many UTF-8 bytes is read whole (2 KB: a normal memory).
    whole_bytes: int = 2_048
    #: Characters per window of a longer text.
    window_chars: int = 512
    #: Characters read at most.
    max_chars: int = KEYWORD_SCAN_CHARS
    #: Estimated cost read at most (about microseconds of tokenizer work; see :func:`window_cost`).
    max_cost: float = 10_000.0
    #: How far (characters) a window boundary may move to reach a separator.
    snap_chars: int = 32

    def __post_init__(self) -> None:
        if self.window_chars < 2 * self.snap_chars or self.max_chars < self.window_chars or self.max_cost <= 0:
            raise ValueError("ScanBudget needs window_chars >= 2 * snap_chars, max_chars >= window_chars, max_cost > 0")

    def whole(self, text: str) -> bool:
        """Whether ``text`` is read whole (it is at most ``whole_bytes`` in UTF-8)."""
        return len(text) <= self.whole_bytes and len(text.encode("utf-8", "surrogatepass")) <= self.whole_bytes

    def windows(self, text: str) -> Iterator[str]:
        """The windows of ``text`` in reading order, limited by ``max_chars`` only (the cost is charged by
        :func:`scan`); the whole text when it is short."""
        if self.whole(text):
            if text:
                yield text
            return
        slots = -(-len(text) // self.window_chars)
        read = 0
        for i in spread_order(slots):
            end = self._boundary(text, (i + 1) * self.window_chars) if i + 1 < slots else len(text)
            window = text[self._boundary(text, i * self.window_chars) : end]
            if window:
                yield window
                read += len(window)
                if read >= self.max_chars:
                    return

    def _boundary(self, text: str, at: int) -> int:
        """``at`` moved just past the first separator within ``snap_chars`` (``at`` itself if none)."""
        if at == 0:
            return 0
        found = _SEPARATOR.search(text, at, at + self.snap_chars)
        return found.end() if found else at


def spread_order(n: int) -> Iterator[int]:
    """``0 .. n-1``, each once: the first two (the head), then in bit-reversed order, so every prefix
    is spread over the range (0, 1, then n/2, n/4, 3n/4, n/8, ...).

    >>> list(spread_order(8))
    [0, 1, 4, 2, 6, 5, 3, 7]
    """
    yield from range(min(n, 2))
    bits = max(1, (n - 1).bit_length())
    for k in range(1 << bits):
        i = int(format(k, f"0{bits}b")[::-1], 2)
        if 2 <= i < n:
            yield i


def window_cost(window: str, tokens: list[str], dictionary: Container[str]) -> float:
    """Estimated tokenizer cost of ``window`` given the ``tokens`` it gave: every character, Chinese
    characters more, and Chinese characters outside dictionary words of two or more characters much
    more (jieba's HMM ran on them, or they were stop words and single characters)."""
    cjk = len(_CJK_CHAR.findall(window))
    if not cjk:
        return CHAR_COST * len(window)
    in_words = sum(len(t) for t in tokens if len(t) > 1 and t in dictionary and is_cjk_word(t))
    return CHAR_COST * len(window) + CJK_COST * cjk + LOOSE_CJK_COST * max(0, cjk - in_words)


def scan(
    text: str,
    tokens_of: Callable[[str], list[str]],
    *,
    budget: ScanBudget | None,
    dictionary: Container[str],
) -> Iterator[tuple[str, list[str]]]:
    """Each window ``budget`` reads of ``text`` with its tokens (``budget=None`` or a text ``budget``
    reads whole: the whole text, one piece), stopping once the estimated cost reaches
    ``budget.max_cost``."""
    if budget is None or budget.whole(text):  # one piece: no cost to keep
        if text:
            yield text, tokens_of(text)
        return
    spent = 0.0
    for window in budget.windows(text):
        tokens = tokens_of(window)
        yield window, tokens
        spent += window_cost(window, tokens, dictionary)
        if spent >= budget.max_cost:
            return
