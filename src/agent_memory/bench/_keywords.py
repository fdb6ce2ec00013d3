"""Keyword extraction time on large inputs (issue 13, F1/F2): p50/p95 per kind of input.

Kinds, each ``size`` characters unless said otherwise:

- ``mixed``: synthetic zh+en memory text (the corpus of the other benchmarks), the realistic case;
- ``one_word``: a single word of 80,000 letters (a hash or a base64 blob) plus a little text;
- ``command_output``: 10 MB of program output as a ``command_output`` memory (its file-name rule ran
  in quadratic time before);
- ``random_cjk``: random Chinese characters, the worst case for jieba's HMM (no dictionary words).

Each sample is a fresh string (nothing is answered from a cache); the first extraction, which loads
jieba's dictionary, is not timed.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from ..text import KeywordExtractor, ensure_jieba
from ._retrieval import percentile
from ._synthetic import synthetic_memories

KINDS = ("mixed", "one_word", "command_output", "random_cjk")
_CJK = "数据库配置用户喜欢科幻电影端口服务器部署运行我们今天明天猫粮装修体检论文音乐会马拉松旅行计划"


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
        figures.append(
            KeywordFigures(
                kind=kind,
                chars=len(content),
                samples=samples,
                p50_ms=percentile(times, 50),
                p95_ms=percentile(times, 95),
                max_ms=round(max(times), 3),
                keywords=keywords,
            )
        )
    return figures
