"""Tokenisation for search: jieba for Chinese, stemmed words for English, on folded text.

>>> Tokenizer().tokens("我之前的ＭｙＳＱＬ数据库配置 was painted")
['之前', 'mysql', '数据库', '配置', 'paint']
>>> Tokenizer().tokens("東京的Café") == Tokenizer().tokens("东京的cafe")
True

Folding (:func:`~agent_memory.text.fold`: full/half width, traditional -> simplified Chinese, case,
accents) runs first, in this one place, for memories and queries alike.
"""

from __future__ import annotations

import logging
import marshal
import re
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jieba
import Stemmer

from . import _stopwords
from ._idf import char_idf
from ._normalize import FOLD_VERSION, fold

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: A run of Chinese (or Japanese kana) characters, or a run of letters and digits.
_RUN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_IS_CJK = re.compile(rf"[{_CJK}]")
#: The letter runs and digit runs inside a word that mixes them ("abc123" -> "abc", "123").
_PARTS = re.compile(r"\d+|[^\W\d_]+")

_init_lock = threading.Lock()
_initialised = False


def ensure_jieba() -> None:
    """Load jieba's dictionary once (it ships with the package, nothing is downloaded).

    jieba keeps its prefix dictionary (about 500,000 words) in a cache file that its own loader reads
    with ``marshal.load`` on the open file, piece by piece: the largest part of a new process's first
    search. :func:`_load_cache` reads the same file in one piece, which is quicker; when
    the cache is missing or unreadable, or jieba was configured with another dictionary, jieba's own
    loader runs (it also writes the cache for the next process).
    """
    global _initialised
    if _initialised:
        return
    with _init_lock:
        if not _initialised:
            jieba.setLogLevel(logging.WARNING)
            if not _load_cache(jieba.dt):
                jieba.initialize()
            _initialised = True


def _load_cache(dt: jieba.Tokenizer) -> bool:
    """Adopt jieba's cache of its default dictionary the way ``Tokenizer.initialize`` does (it trusts
    that cache without a date check too), reading the file whole; ``False`` leaves the work to jieba."""
    if dt.initialized:
        return True
    if dt.dictionary is not jieba.DEFAULT_DICT or dt.cache_file or dt.tmp_dir:
        return False
    try:
        freq, total = marshal.loads((Path(tempfile.gettempdir()) / "jieba.cache").read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return False
    if not isinstance(freq, dict) or not freq or not isinstance(total, int):
        return False
    with dt.lock:
        if not dt.initialized:
            dt.FREQ, dt.total = freq, total
            dt.initialized = True
    return True


@dataclass(frozen=True, slots=True)
class Tokenizer:
    """Turns text into search terms; the same pipeline runs on memories and on queries.

    Steps: folding (:func:`~agent_memory.text.fold`: full/half width, traditional -> simplified
    Chinese, case, accents), split into Chinese runs and letter/digit runs, jieba segmentation of
    Chinese runs, English Snowball stemming, stop words of both languages dropped. ``name`` changes
    whenever the output would (it includes the folding rule's version), so stored tokens made by an
    older pipeline are recomputed. :meth:`index_tokens` (the stored side) also keeps the letter and
    digit parts of a word that mixes them.
    """

    stem: bool = True
    stop_words: bool = True
    #: jieba search mode adds the shorter words inside long ones (数据库 -> 数据, 据库, 数据库); precise
    #: mode keeps whole words only. Precise mode ranks better on the benchmarks (the inner words add
    #: noise), and the keyword score's prefix tier still lets 数据 find 数据库.
    search_mode: bool = False
    #: Single Chinese characters (mostly particles and verbs such as 去, 是, 有) are dropped unless they
    #: are rare enough to carry meaning (猫, 茶): jieba's IDF of the character must reach this value.
    single_char_min_idf: float = 5.5

    @property
    def name(self) -> str:
        """Identifies this pipeline in stored analyses."""
        mode = "search" if self.search_mode else "precise"
        flags = f"{'-stem' if self.stem else ''}{'-stop' if self.stop_words else ''}"
        return f"jieba-{mode}{flags}-c{self.single_char_min_idf:g}-{FOLD_VERSION}-v11"

    def tokens(self, text: str) -> list[str]:
        """Search terms of ``text`` in reading order (repeats kept: they count as term frequency)."""
        return list(_tokens(text, self.stem, self.stop_words, self.search_mode, self.single_char_min_idf))

    def index_tokens(self, text: str) -> list[str]:
        """The terms stored for a memory: :meth:`tokens`, each word that mixes letters and digits
        followed by its letter and digit parts of two or more characters.

        >>> Tokenizer().index_tokens("型号ＡＢＣ１２３")
        ['型号', 'abc123', 'abc', '123']

        So a query for a shorter part ("ABC", too short for the prefix tier) finds the memory. Only the
        stored side gets the parts: a query "abc123" looks for that word, not for every "123".
        """
        return list(_tokens(text, self.stem, self.stop_words, self.search_mode, self.single_char_min_idf, parts=True))

    def unique_tokens(self, text: str) -> list[str]:
        """Distinct search terms of ``text`` in first-seen order."""
        return list(
            dict.fromkeys(_tokens(text, self.stem, self.stop_words, self.search_mode, self.single_char_min_idf))
        )


_stemmer_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    stemmer = getattr(_stemmer_local, "stemmer", None)
    if stemmer is None:
        stemmer = _stemmer_local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def clear_token_caches() -> None:
    """Forget the segmentations and token lists kept for recently seen texts, so a measurement of
    tokenising a corpus pays for every text, however often it has been read before in the process."""
    _segments.cache_clear()
    _tokens.cache_clear()
    _cut.cache_clear()


def is_cjk_word(word: str) -> bool:
    """True when the word starts with a Chinese character."""
    return bool(_IS_CJK.match(word))


@lru_cache(maxsize=32_768)
def _segments(text: str, search_mode: bool) -> tuple[tuple[str, bool], ...]:
    """``(word, is_chinese)`` pairs of folded text: jieba words of Chinese runs, other runs whole.

    Cached apart from the filtering. The keyword extractor reads the normal words and the search
    tokenizer the search words of the same memory: both start from one jieba cut of each piece
    (:func:`_cut`), which is most of the cost.
    """
    ensure_jieba()
    out: list[tuple[str, bool]] = []
    for run in _RUN.findall(fold(text)):
        if _IS_CJK.match(run):
            words = (
                word
                for piece in _pieces(run)
                for part in _final_particle_split(piece)
                for word in (_cut_for_search(part) if search_mode else _cut(part))
            )
            for word in words:
                if word.strip():
                    for part in _without_particle(word):
                        # a question or function word is not a compound: 啥时候 does not give 时候
                        whole = part in _stopwords.CHINESE
                        out.extend((w, True) for w in ((part,) if whole else _decompose(part, search_mode)))
        else:
            out.append((run, False))
    return tuple(out)


@lru_cache(maxsize=32_768)
def _cut(part: str) -> tuple[str, ...]:
    """jieba's words of a Chinese piece (with its HMM for words outside the dictionary)."""
    return tuple(jieba.cut(part, HMM=True))


def _cut_for_search(part: str) -> Iterator[str]:
    """``jieba.cut_for_search(part)``, made from the cached :func:`_cut` as jieba makes it from its cut:
    before each word longer than two characters, its two-character parts in the dictionary, and before
    one longer than three, its three-character parts too."""
    freq = jieba.dt.FREQ
    for word in _cut(part):
        if len(word) > 2:
            yield from (word[i : i + 2] for i in range(len(word) - 1) if freq.get(word[i : i + 2]))
        if len(word) > 3:
            yield from (word[i : i + 3] for i in range(len(word) - 2) if freq.get(word[i : i + 3]))
        yield word


#: jieba's time grows with the square of a run's length (20,000 characters without punctuation: 1 s);
#: longer runs are cut into pieces of this size. Real sentences are far shorter, so only abnormal
#: text (a pasted character run, a dump) is cut, at the cost of a word split at a piece boundary.
MAX_RUN_CHARS = 256


def _pieces(run: str) -> list[str]:
    return (
        [run[i : i + MAX_RUN_CHARS] for i in range(0, len(run), MAX_RUN_CHARS)] if len(run) > MAX_RUN_CHARS else [run]
    )


#: Sentence-final particles jieba sometimes glues to the word before them (推荐个电影吧 -> 电影吧).
_PARTICLES = frozenset("吧呢吗啊呀嘛哦啦哈呗")


#: Two-character particles that end a sentence ("我上司叫啥来着？": the phrase of someone recalling a thing).
#: jieba's HMM glues their first character to the word before them: 多高来着 -> 多/高来/着, 多少钱来着 ->
#: 多少/钱来/着, 在哪来着 -> 在/哪来/着, losing 高 and 钱 to words no memory holds.
_FINAL_PARTICLES = ("来着",)


def _final_particle_split(run: str) -> tuple[str, ...]:
    """A Chinese run that ends in a particle of :data:`_FINAL_PARTICLES` (then, perhaps, one-character
    particles: 来着呢) as the text before it and the particles, segmented apart; any other run whole.

    Only at the end of a run (the text up to a punctuation mark or a non-Chinese character): inside one,
    the two characters may belong to other words (他来着急了: 来 / 着急).

    >>> _final_particle_split("我同事有多高来着")
    ('我同事有多高', '来着')
    >>> _final_particle_split("他来着急了")
    ('他来着急了',)
    """
    end = len(run)
    while end > 0 and run[end - 1] in _PARTICLES:
        end -= 1
    for particle in _FINAL_PARTICLES:
        cut = end - len(particle)
        if cut > 0 and run.startswith(particle, cut):
            return run[:cut], run[cut:]
    return (run,)


def _without_particle(word: str) -> tuple[str, ...]:
    """A word with a trailing particle split off when what is left is a dictionary word of two or
    more characters ("电影吧" -> "电影", "吧"); any other word as it is."""
    if len(word) >= 3 and word[-1] in _PARTICLES and jieba.dt.FREQ.get(word[:-1], 0) > 0:
        return word[:-1], word[-1]
    return (word,)


#: A dictionary word used less often than this (jieba's corpus counts) is a rare compound: its frequent
#: inner words are indexed too, so 部手机 (33) also gives 手机 (4,789) and 科幻电影 (3) gives 科幻, 电影.
RARE_WORD_FREQ = 100
#: An inner word counts only when it is this many times more frequent than the compound: then the
#: compound is a specialisation of it (部手机 33 / 手机 4,789), not a word of its own that merely
#: contains it (马拉松 80 / 马拉 116).
INNER_WORD_RATIO = 10
#: Longer "words" are not compounds but runs jieba could not split (汉汉汉...): looking for inner words
#: in them would cost the cube of their length.
MAX_COMPOUND_CHARS = 12
#: Pronouns and demonstratives jieba's HMM glues to the next character into words it does not know (我用).
_GLUE_HEADS = frozenset("我你他她它咱您这那每某")


def _decompose(word: str, search_mode: bool) -> tuple[str, ...]:
    """``word`` and, for a rare or unknown compound, its frequent inner dictionary words.

    Precise segmentation keeps whole words (search mode's inner words of common words such as
    数据库 -> 据库 add noise), but jieba also joins a measure word or pronoun to a noun (这部手机 ->
    这/部手机, 我用的 -> 我用/的) and keeps rare compounds whole (科幻电影): without their parts a
    memory about 手机 or 电影 is never found by those words. An unknown two-character word that starts
    with a pronoun is split into its characters (the single-character filter then drops them).
    """
    if search_mode or len(word) < 2 or len(word) > MAX_COMPOUND_CHARS:
        return (word,)
    freq = jieba.dt.FREQ
    count = freq.get(word, 0)
    if len(word) == 2:
        return tuple(word) if not count and word[0] in _GLUE_HEADS else (word,)
    if count >= RARE_WORD_FREQ:
        return (word,)
    floor = max(RARE_WORD_FREQ, INNER_WORD_RATIO * count)  # 马拉松 (80) is not 马拉 (116) + 松
    spans = _inner_spans(word, floor)
    cuts = _tiling(len(word), spans)
    inner = (word[a:b] for a, b in spans if not any(a < cut < b for cut in cuts))
    return (word, *dict.fromkeys(inner))


#: The longest piece of a compound looked up in the dictionary: a compound split here has at most
#: :data:`MAX_COMPOUND_CHARS` characters; the bound keeps a long string's look-ups linear in its length.
MAX_PIECE_CHARS = MAX_COMPOUND_CHARS - 1


def _inner_spans(word: str, floor: float) -> list[tuple[int, int]]:
    """``(start, end)`` of the dictionary words (count at least ``floor``) of 2 to
    :data:`MAX_PIECE_CHARS` characters inside ``word``, shorter than ``word`` itself; longest first."""
    freq = jieba.dt.FREQ
    n = len(word)
    return [
        (i, i + size)
        for size in range(min(n - 1, MAX_PIECE_CHARS), 1, -1)
        for i in range(n - size + 1)
        if freq.get(word[i : i + size], 0) >= floor
    ]


def dictionary_cuts(word: str) -> tuple[int, ...]:
    """Where a Chinese compound splits into the fewest words of jieba's dictionary (two or more
    characters each), or ``()`` when no such words make it up end to end.

    >>> dictionary_cuts("今天天气")
    (2,)

    A piece of the compound that runs across a cut (天天 in 今天天气) is not one of its words. Raises
    ``TypeError`` for anything but a str.
    """
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__}")
    ensure_jieba()
    return _tiling(len(word), _inner_spans(word, 1))


def _tiling(length: int, spans: Sequence[tuple[int, int]]) -> tuple[int, ...]:
    """The inner cuts of the fewest ``spans`` that cover ``0..length`` end to end, or ``()`` if none do.

    A word that runs across such a cut is not part of the compound: 今天天气 is 今天 + 天气, and the 天天
    in its middle would make a memory about the weather match "天天加班".

    >>> _tiling(4, [(0, 2), (1, 3), (2, 4)])
    (2,)
    >>> _tiling(3, [(0, 2), (1, 3)])
    ()
    """
    starts: dict[int, list[int]] = {}
    for a, b in spans:
        starts.setdefault(b, []).append(a)
    fewest: dict[int, tuple[int, ...]] = {0: ()}
    for end in sorted(starts):
        options = [fewest[a] + (a,) for a in starts[end] if a in fewest]
        if options:
            fewest[end] = min(options, key=len)
    return tuple(cut for cut in fewest.get(length, ()) if cut > 0)


#: What a question asks about, as the word a statement of it holds: "我同事有多高？" asks for the 身高 of
#: "我同事身高162cm", "我妈几岁了" for the 岁 of "我妈今年58岁". The question words themselves are stop words
#: or single characters (多 / 高), so without this the question would be only about 同事, and any memory
#: of a word near 同事 would answer it in full. Keyed by jieba's words of the question, in order (``""``
#: first: the word alone); a closed class of the grammar, like the stop words, not a list of topics.
ASKED_ATTRIBUTES: dict[tuple[str, str], str] = {
    ("多", "高"): "身高",
    ("多", "重"): "体重",
    ("", "几岁"): "岁",
    ("多少", "岁"): "岁",
    ("", "多少岁"): "岁",
    ("多大", "年纪"): "岁",
    ("多大", "岁数"): "岁",
}


@lru_cache(maxsize=32_768)
def _tokens(
    text: str, stem: bool, stop_words: bool, search_mode: bool, single_min_idf: float, parts: bool = False
) -> tuple[str, ...]:
    idf = char_idf()
    out: list[str] = []
    stemmer = _stemmer() if stem else None
    before = ""  # the Chinese word before this one ("" after anything else)
    for word, chinese in _segments(text, search_mode):
        if chinese:
            asked = ASKED_ATTRIBUTES.get((before, word)) or ASKED_ATTRIBUTES.get(("", word))
            before = word
            if not (stop_words and word in _stopwords.CHINESE) and (
                len(word) > 1 or idf.get(word, 0.0) >= single_min_idf
            ):
                out.append(word)
            if asked:
                out.append(asked)
            continue
        before = ""
        if not (stop_words and word in _stopwords.ENGLISH):
            out.append(stemmer.stemWord(word) if stemmer is not None else word)
        if parts and not word.isdigit() and not word.isalpha():
            pieces = _PARTS.findall(word)
            if len(pieces) > 1:
                for piece in pieces:
                    if len(piece) >= 2 and not (stop_words and piece in _stopwords.ENGLISH):
                        out.append(stemmer.stemWord(piece) if stemmer is not None and not piece.isdigit() else piece)
    return tuple(out)
