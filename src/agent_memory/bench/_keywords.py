"""Keyword extraction time on large inputs (a memory of 100 KB, command output of megabytes): p50/p95
per kind of input.

Kinds, each ``size`` characters unless said otherwise:

- ``mixed``: synthetic zh+en memory text (the corpus of the other benchmarks), the realistic case;
- ``one_word``: a single word of 80,000 letters (a hash or a base64 blob) plus a little text;
- ``command_output``: 10 MB of program output as a ``command_output`` memory (its file-name rule ran
  in quadratic time before);
- ``random_cjk``: random characters of a small set of common Chinese ones (jieba finds short words);
- ``random_cjk_wide``: random characters of the whole CJK unified block, the worst case for jieba's
  HMM (no dictionary words at all);
- ``random_en``: random lower-case "words" of 1-10 letters;
- ``repeated``: one mixed sentence repeated (a log line, a pasted table).

Each sample is a fresh string (nothing is answered from a cache from one sample to the next); the
first extraction, which loads jieba's dictionary and OpenCC, is not timed. ``analysed_chars`` is how
many characters the tokenizer was given for the last sample (the bounded sample of
``agent_memory.text._scan``).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from ..text import KeywordExtractor, ensure_jieba
from ._retrieval import percentile
from ._synthetic import synthetic_memories

KINDS = ("mixed", "one_word", "command_output", "random_cjk", "random_cjk_wide", "random_en", "repeated")
_CJK = "数据库配置用户喜欢科幻电影端口服务器部署运行我们今天明天猫粮装修体检论文音乐会马拉松旅行计划"
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, slots=True)
class KeywordFigures:
    """Extraction time of one kind of input (milliseconds) and the keywords of the last sample."""

    kind: str
    chars: int
    samples: int
    p50_ms: float
    p95_ms: float
    max_ms: float
    keywords: tuple[str, ...]
    analysed_chars: int


def _mixed(size: int, seed: int) -> str:
    parts: list[str] = []
    total = 0
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for memory in synthetic_memories(size // 20 + 10, seed=seed, start=start):
        parts.append(memory.content)
        total += len(memory.content) + 1
        if total >= size:
            break
    return "\n".join(parts)[:size]


def sample_input(kind: str, *, size: int, seed: int) -> tuple[str, str]:
    """``(content, memory_type)`` of one generated input of ``kind``."""
    rng = random.Random(seed)
    if kind == "mixed":
        return _mixed(size, seed), "general"
    if kind == "one_word":
        word = "".join(rng.choice("abcdef0123456789") for _ in range(80_000))
        return f"hash {word} 已记录 {seed}", "general"
    if kind == "command_output":
        line = f"step {seed}: compute(x={rng.randint(0, 9)}) -> ok; wrote out/result_{seed}.json\n"
        return line * (10_000_000 // len(line)), "command_output"
    if kind == "random_cjk":
        return "".join(rng.choice(_CJK) for _ in range(size)), "general"
    if kind == "random_cjk_wide":
        return "".join(map(chr, (rng.randrange(0x4E00, 0x9FA6) for _ in range(size)))), "general"
    if kind == "random_en":
        words = ("".join(rng.choices(_LETTERS, k=rng.randint(1, 10))) for _ in range(size // 4 + 1))
        return " ".join(words)[:size], "general"
    if kind == "repeated":
        line = f"第 {seed} 次同步: 用户喜欢科幻电影, the backup job on server-{seed} finished ok.\n"
        return (line * (size // len(line) + 1))[:size], "general"
    raise ValueError(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")


def bench_keywords(*, samples: int = 20, size: int = 100_000, kinds: tuple[str, ...] = KINDS) -> list[KeywordFigures]:
    """Time ``KeywordExtractor.extract`` on ``samples`` fresh inputs of each kind."""
    ensure_jieba()
    extractor = KeywordExtractor()
    extractor.extract(content="预热 warm up", memory_type="general")
    figures = []
    for kind in kinds:
        times: list[float] = []
        keywords: tuple[str, ...] = ()
        for i in range(samples):
            content, memory_type = sample_input(kind, size=size, seed=i)
            started = time.perf_counter()
            found = extractor.extract(content=content, summary="", memory_type=memory_type)
            times.append((time.perf_counter() - started) * 1000)
            keywords = tuple(k.keyword[:40] for k in found)
        analysed = sum(len(w) for w in extractor.analysed_windows(content))
        figures.append(
            KeywordFigures(
                kind=kind,
                chars=len(content),
                samples=samples,
                p50_ms=percentile(times, 50),
                p95_ms=percentile(times, 95),
                max_ms=round(max(times), 3),
                keywords=keywords,
                analysed_chars=analysed,
            )
        )
    return figures
