"""``agent-memory bench ...``: benchmarks that print one JSON object.

Only typer is imported here: each command imports the benchmarks when it runs (``agent-memory
--help`` starts fast). :func:`bench_app` makes the command group; the ``agent-memory`` command passes
its own runner (an error in two lines: what went wrong, what to do).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import typer

if TYPE_CHECKING:
    from ..search import SearchMode


#: Turns an async command into the function typer calls (runs it, reports its errors).
Runner = Callable[[Callable[..., Coroutine[Any, Any, Any]]], Callable[..., Any]]

BackendChoice = Literal["sqlite", "postgresql", "both"]

PG_ADMIN_HELP = "Where a temporary PostgreSQL database is created (default: postgres@127.0.0.1:5432)"


def _admin_url(given: str | None) -> str:
    from . import DEFAULT_PG_ADMIN_URL

    return given or DEFAULT_PG_ADMIN_URL


def _check_mode(mode: str) -> SearchMode:
    """``mode``, a search mode (a ValueError for any other word)."""
    from ..search import SEARCH_MODES, is_search_mode

    if not is_search_mode(mode):
        raise ValueError(f"--mode must be one of {', '.join(SEARCH_MODES)}")
    return mode


async def ingest_cmd(
    memories: int = typer.Option(10_000, "--memories", "-n", min=1, max=1_000_000, help="Memories to write"),
    batch: int = typer.Option(500, "--batch", min=1, max=10_000, help="Memories per transaction"),
    rounds: int = typer.Option(3, "--rounds", min=1, max=20, help="Rounds, alternated with the FTS5 baseline"),
    backend: str = typer.Option("both", "--backend", help="sqlite, postgresql or both"),
    pg_admin_url: str | None = typer.Option(None, "--pg-admin-url", help=PG_ADMIN_HELP),
    analysis: bool = typer.Option(
        True, "--analysis/--raw", help="Analyse as the library does (terms, keywords, topics), or write raw rows"
    ),
    embedder: str | None = typer.Option(
        None,
        "--embedder",
        help="Also store this embedder's vectors as the library does (e.g. use-m3: a bulk write leaves them to "
        "the background pass, which is timed, with a query's embedding); unset: no vectors",
    ),
    corpus: str = typer.Option(
        "varied",
        "--corpus",
        help="varied (texts that share few pieces, as chat does) or templated (the latency benchmark's corpus, "
        "whose repeated pieces the tokenizer's caches answer after the first time)",
    ),
) -> None:
    """Write N synthetic zh+en memories into fresh databases and print rows/s per backend, beside SQLite FTS5
    fed by the project's tokenizer on the same texts in the same run (``ratio_to_fts5``)."""
    from . import CORPORA, bench_ingest, temporary_postgres, temporary_sqlite

    if backend not in ("sqlite", "postgresql", "both"):
        raise ValueError("--backend must be sqlite, postgresql or both")
    model = _named_embedder(embedder) if embedder is not None else None
    if embedder is not None and model is None:
        raise ValueError("--embedder hashing stores no vectors: name a stored embedder such as use-m3")
    if corpus not in CORPORA:
        raise ValueError(f"--corpus must be one of {', '.join(CORPORA)}")
    options: dict[str, Any] = {
        "corpus": corpus,
        "memories": memories,
        "batch": batch,
        "rounds": rounds,
        "analysis": analysis,
        "embedder": model,
    }
    results = {}
    if backend in ("sqlite", "both"):
        async with temporary_sqlite() as url:
            results["sqlite"] = dataclasses.asdict(await bench_ingest(url, **options))
    if backend in ("postgresql", "both"):
        async with temporary_postgres(_admin_url(pg_admin_url)) as url:
            results["postgresql"] = dataclasses.asdict(await bench_ingest(url, **options))
    emit_json({"bench": "ingest", "memories": memories, "batch": batch, "corpus": corpus, "results": results})


SEMANTIC_SHARE_OPTION = typer.Option(
    None,
    "--semantic-share",
    min=0.0,
    max=1.0,
    help="The most of the text score embedding similarity gives a memory whose words give less (default: 0.3 "
    "with a stored embedder, 0 with hashing, as the library when MEMORY_SEARCH_SEMANTIC_SHARE is not set)",
)
EMBEDDER_OPTION = typer.Option(
    "auto",
    "--embedder",
    help="auto (default, as the library: use-m3, else wordvec-zh when installed, else hashing), hashing "
    "(no model), wordvec-zh (packaged Chinese word vectors), use-m3 (packaged multilingual sentence encoder), "
    "openai (the MEMORY_SEARCH_EMBEDDING_* endpoint) or minilm (packaged all-MiniLM-L6-v2; the "
    "sentence-transformers extra)",
)
WORD_NEIGHBOURS_OPTION = typer.Option(
    True,
    "--word-neighbours/--no-word-neighbours",
    help="Expand Chinese query words with their nearest words in the packaged word vectors (as the library)",
)


def _named_embedder(name: str) -> Any:
    """The embedder ``--embedder`` names (``None`` for hashing; ``embedder_named`` refuses another name)."""
    from ..search import embedder_named
    from ..settings import load_settings

    # openai: the endpoint of the MEMORY_SEARCH_EMBEDDING_* settings, as the library reads them
    return embedder_named(
        name, endpoint=load_settings(memory_search_embedder=name).embedding_endpoint() if name == "openai" else None
    )


async def retrieval_cmd(
    dataset: str = typer.Option(..., "--dataset", help="locomo, memdaily or generic"),
    data: str = typer.Option(..., "--data", help="The data file or folder (see README for downloads)"),
    mode: str = typer.Option("hybrid", "--mode", help="hybrid, keyword or semantic"),
    backend: str = typer.Option("sqlite", "--backend", help="sqlite, postgresql or both (both: top-5 compared)"),
    semantic_share: float | None = SEMANTIC_SHARE_OPTION,
    embedder: str = EMBEDDER_OPTION,
    word_neighbours: bool = WORD_NEIGHBOURS_OPTION,
    pg_admin_url: str | None = typer.Option(None, "--pg-admin-url", help=PG_ADMIN_HELP),
) -> None:
    """Recall of the search against an in-run BM25 baseline on a public data set (one JSON object)."""
    from . import (
        EngineRun,
        bm25_baseline,
        engine_label,
        engine_settings,
        load_dataset,
        report,
        run_engine,
        temporary_postgres,
        temporary_sqlite,
        top_k_agreement,
    )

    checked = _check_mode(mode)
    if backend not in ("sqlite", "postgresql", "both"):
        raise ValueError("--backend must be sqlite, postgresql or both")
    ds = load_dataset(dataset, data)
    depth = max(max(ds.ks), 10)
    baseline = bm25_baseline(ds, depth)
    runs: list[EngineRun] = []

    async def one(url: str) -> EngineRun:
        settings = engine_settings(
            url, embedder=embedder, semantic_share=semantic_share, word_neighbours=word_neighbours
        )
        return await run_engine(ds, url, mode=checked, depth=depth, settings=settings)

    if backend in ("sqlite", "both"):
        async with temporary_sqlite() as url:
            runs.append(await one(url))
    if backend in ("postgresql", "both"):
        async with temporary_postgres(_admin_url(pg_admin_url)) as url:
            runs.append(await one(url))
    result = report(ds, mode, runs[0], baseline)
    result["embedder"], result["semantic_share"] = engine_label(runs[0].engine), runs[0].engine.semantic_share
    result["word_neighbours"] = runs[0].word_neighbours  # in effect: off when the vectors are not installed
    if len(runs) == 2:
        result["postgresql_latency_ms"] = report(ds, mode, runs[1], baseline)["latency_ms"]
        result["backends_top5"] = top_k_agreement(runs[0], runs[1], 5)
    emit_json(result)


async def latency_cmd(
    memories: list[int] = typer.Option([10_000], "--memories", "-n", min=1, max=1_000_000, help="Corpus size (repeat)"),
    queries: int = typer.Option(200, "--queries", min=10, max=10_000, help="Timed searches"),
    backend: str = typer.Option("both", "--backend", help="sqlite, postgresql or both"),
    mode: str = typer.Option("hybrid", "--mode", help="hybrid, keyword or semantic"),
    cold: bool = typer.Option(True, "--cold/--no-cold", help="Also time the first search of a fresh process"),
    cold_runs: int = typer.Option(3, "--cold-runs", min=1, max=15, help="Fresh processes per cold figure (median)"),
    users: int = typer.Option(0, "--users", min=0, max=100_000, help="Instead: N users, first search per user"),
    per_user: int = typer.Option(100, "--per-user", min=1, max=100_000, help="Memories per user with --users"),
    cache_mb: float | None = typer.Option(None, "--cache-mb", min=0.001, help="Index cache cap with --users (MB)"),
    pg_admin_url: str | None = typer.Option(None, "--pg-admin-url", help=PG_ADMIN_HELP),
) -> None:
    """Warm search p50/p95, ingest rate and the first search of a fresh process (cold_first_search_ms) on a
    synthetic zh+en corpus; with --users N, the first search of each of N users (built, then loaded)."""
    import tempfile

    from . import bench_latency, temporary_postgres, temporary_sqlite
    from ._latency_users import bench_users

    if backend not in ("sqlite", "postgresql", "both"):
        raise ValueError("--backend must be sqlite, postgresql or both")
    chosen = _check_mode(mode)

    async def one(url: str, size: int) -> dict[str, object]:
        with tempfile.TemporaryDirectory(prefix="agent-memory-snapshots-") as folder:
            if users:
                return dataclasses.asdict(
                    await bench_users(
                        url, users=users, memories=per_user, snapshot_dir=folder, mode=chosen, cache_mb=cache_mb
                    )
                )
            return dataclasses.asdict(
                await bench_latency(
                    url,
                    memories=size,
                    queries=queries,
                    mode=chosen,
                    snapshot_dir=folder,
                    cold=cold,
                    cold_runs=cold_runs,
                )
            )

    results = []
    for size in memories if not users else [users * per_user]:
        if backend in ("sqlite", "both"):
            async with temporary_sqlite() as url:
                results.append(await one(url, size))
        if backend in ("postgresql", "both"):
            async with temporary_postgres(_admin_url(pg_admin_url)) as url:
                results.append(await one(url, size))
    emit_json({"bench": "latency_users" if users else "latency", "results": results})


async def recall_cmd(
    dataset: str = typer.Option(..., "--dataset", help="locomo, memdaily or generic"),
    data: str = typer.Option(..., "--data", help="The data file or folder (see README for downloads)"),
    latency_memories: int = typer.Option(
        10_000, "--latency-memories", min=0, max=200_000, help="Also time recalls over N synthetic memories (0: skip)"
    ),
    semantic_share: float | None = SEMANTIC_SHARE_OPTION,
    embedder: str = EMBEDDER_OPTION,
) -> None:
    """The full offline recall agent against the engine alone and BM25 (SQLite; one JSON object)."""
    from . import bm25_baseline, engine_label, engine_settings, load_dataset, temporary_sqlite
    from ._recall import recall_latency, recall_report, run_recall

    ds = load_dataset(dataset, data)
    depth = max(max(ds.ks), 10)
    baseline = bm25_baseline(ds, depth)
    async with temporary_sqlite() as url:
        recalled = await run_recall(
            ds, url, depth=depth, settings=engine_settings(url, embedder=embedder, semantic_share=semantic_share)
        )
        result = recall_report(ds, recalled, baseline)
    result["embedder"], result["semantic_share"] = engine_label(recalled.engine), recalled.engine.semantic_share
    if latency_memories:
        async with temporary_sqlite() as url:
            settings = engine_settings(url, embedder=embedder, semantic_share=semantic_share)
            result["latency_at_scale_ms"] = await recall_latency(url, memories=latency_memories, settings=settings)
    emit_json(result)


async def archive_cmd(
    rounds: int = typer.Option(10, "--rounds", min=2, max=100, help="Conversation rounds"),
    result_chars: int = typer.Option(50_000, "--result-chars", min=1_000, max=1_000_000, help="Tool result size"),
    reload_round: int = typer.Option(6, "--reload-round", min=2, help="Round that reloads an archived result"),
    threshold: int = typer.Option(10_000, "--threshold", min=100, help="Archive results longer than this"),
) -> None:
    """The tool-result archive's token scenario: full accumulation against the archive (one JSON object)."""
    from . import temporary_sqlite
    from ._archive import bench_archive

    async with temporary_sqlite() as url:
        emit_json(
            await bench_archive(
                url, rounds=rounds, result_chars=result_chars, reload_round=reload_round, threshold=threshold
            )
        )


def keywords_cmd(
    samples: int = typer.Option(20, "--samples", min=1, max=1000, help="Inputs per kind"),
    size: int = typer.Option(100_000, "--size", min=1_000, max=10_000_000, help="Characters per input"),
) -> None:
    """Keyword extraction time on 100 KB inputs (mixed text, one 80,000-char word, 10 MB command output,
    random Chinese of common and of all characters, random English, repeated text; target <= 50 ms):
    p50/p95 per kind and the characters analysed (one JSON object)."""
    from ._keywords import bench_keywords

    figures = bench_keywords(samples=samples, size=size)
    emit_json({"bench": "keywords", "results": [dataclasses.asdict(f) for f in figures]})


async def writers_cmd(
    writers: int = typer.Option(32, "--writers", min=1, max=1000, help="Concurrent writer tasks"),
    ops: int = typer.Option(50, "--ops", min=1, max=100_000, help="Memories each writer adds"),
    backend: str = typer.Option("both", "--backend", help="sqlite, postgresql or both"),
    analyze: bool = typer.Option(True, "--analyze/--no-analyze", help="Run keyword and token analysis per write"),
    separate_engines: bool = typer.Option(False, "--separate-engines", help="One data layer per writer"),
    pg_admin_url: str | None = typer.Option(None, "--pg-admin-url", help=PG_ADMIN_HELP),
) -> None:
    """Concurrent writers in one process: acknowledged against stored writes and p50/p95/max latency."""
    from . import bench_writers, temporary_postgres, temporary_sqlite

    if backend not in ("sqlite", "postgresql", "both"):
        raise ValueError("--backend must be sqlite, postgresql or both")
    options: dict[str, Any] = {"writers": writers, "ops": ops, "analyze": analyze, "separate_engines": separate_engines}
    results = {}
    if backend in ("sqlite", "both"):
        async with temporary_sqlite() as url:
            results["sqlite"] = dataclasses.asdict(await bench_writers(url, **options))
    if backend in ("postgresql", "both"):
        async with temporary_postgres(_admin_url(pg_admin_url)) as url:
            results["postgresql"] = dataclasses.asdict(await bench_writers(url, **options))
    emit_json({"bench": "writers", **options, "results": results})


async def e2e_cmd(
    dataset: str = typer.Option(..., "--dataset", help="locomo or memdaily"),
    data: str = typer.Option(..., "--data", help="The data file or folder (see README for downloads)"),
) -> None:
    """Chats in, memories formed offline, each question answered by the evidence recall (SQLite)."""
    from . import bm25_baseline, load_dataset, temporary_sqlite
    from ._e2e import e2e_report, run_e2e

    if dataset not in ("locomo", "memdaily"):
        raise ValueError("--dataset must be locomo or memdaily")
    ds = load_dataset(dataset, data)
    baseline = bm25_baseline(ds, max(max(ds.ks), 10))
    async with temporary_sqlite() as url:
        emit_json(e2e_report(ds, await run_e2e(ds, url), baseline))


async def conflicts_cmd(
    data: str | None = typer.Option(
        None, "--data", help="A conflict set in the packaged format (JSONL); default: the packaged set"
    ),
) -> None:
    """Adjudication accuracy on the conflict set (zh/en: changes of state, changed preferences, negation,
    quoted or hypothetical speech, questions, someone else's news, assistant paraphrase), in all and by
    language, reason and kind."""
    from ..formation import load_conflict_set, score_conflicts

    emit_json({"bench": "conflicts", **score_conflicts(load_conflict_set(data))})


async def load_cmd(
    processes: int = typer.Option(2, "--processes", "-P", min=1, max=64, help="OS processes"),
    writers: int = typer.Option(8, "--writers", "-W", min=0, max=256, help="Writer tasks per process"),
    searchers: int = typer.Option(4, "--searchers", "-S", min=0, max=256, help="Searcher tasks per process"),
    seconds: float = typer.Option(20.0, "--seconds", min=0.1, max=600.0, help="How long the load runs (<= 600)"),
    backend: str = typer.Option("both", "--backend", help="sqlite, postgresql or both"),
    pg_admin_url: str | None = typer.Option(None, "--pg-admin-url", help=PG_ADMIN_HELP),
) -> None:
    """Writers and searchers in several processes on one database for a bounded time: acknowledged
    against stored writes, write and search latency p50/p95/max, errors by type (one JSON object)."""
    from . import temporary_postgres, temporary_sqlite
    from ._load import bench_load, check_bounds

    if backend not in ("sqlite", "postgresql", "both"):
        raise ValueError("--backend must be sqlite, postgresql or both")
    check_bounds(processes=processes, writers=writers, searchers=searchers, seconds=seconds)
    options: dict[str, Any] = {"processes": processes, "writers": writers, "searchers": searchers, "seconds": seconds}
    results = {}
    if backend in ("sqlite", "both"):
        async with temporary_sqlite() as url:
            results["sqlite"] = await bench_load(url, **options)
    if backend in ("postgresql", "both"):
        async with temporary_postgres(_admin_url(pg_admin_url)) as url:
            results["postgresql"] = await bench_load(url, **options)
    lost = sum(r["lost"] for r in results.values())
    emit_json({"bench": "load", **options, "lost": lost, "results": results})


def _check_profile(profile: str | None) -> None:
    """A ``--profile`` file must be in a folder that exists (checked before a benchmark's minutes run)."""
    if profile is not None and not Path(profile).expanduser().resolve().parent.is_dir():
        raise ValueError(f"--profile {profile}: its folder does not exist; give a file in an existing folder")


async def after_write_cmd(
    memories: list[int] = typer.Option(
        [600], "--memories", "-n", min=2, max=200_000, help="The user's memories (repeat)"
    ),
    rounds: int = typer.Option(30, "--rounds", min=1, max=1_000, help="Rounds: A writes, B searches"),
    backend: str = typer.Option("both", "--backend", help="sqlite, postgresql or both"),
    profile: str | None = typer.Option(
        None, "--profile", help="B saves cProfile statistics of its after-write searches here"
    ),
    pg_admin_url: str | None = typer.Option(None, "--pg-admin-url", help=PG_ADMIN_HELP),
) -> None:
    """Two processes on one database: B's search right after A's write beside B's search with no write
    between (medians, ratio) and whether B saw every write (one JSON object)."""
    from . import temporary_postgres, temporary_sqlite
    from ._after_write import bench_after_write

    if backend not in ("sqlite", "postgresql", "both"):
        raise ValueError("--backend must be sqlite, postgresql or both")
    _check_profile(profile)
    results = []
    for size in memories:
        if backend in ("sqlite", "both"):
            async with temporary_sqlite() as url:
                results.append(await bench_after_write(url, memories=size, rounds=rounds, profile=profile))
        if backend in ("postgresql", "both"):
            async with temporary_postgres(_admin_url(pg_admin_url)) as url:
                results.append(await bench_after_write(url, memories=size, rounds=rounds, profile=profile))
    emit_json({"bench": "after_write", "results": [dataclasses.asdict(r) for r in results]})


async def turns_cmd(
    users: int = typer.Option(50, "--users", "-n", min=1, max=500, help="Users chatting at once, one friend each"),
    turns: int = typer.Option(8, "--turns", min=1, max=100, help="Timed turns per user"),
    recall: bool = typer.Option(True, "--recall/--no-recall", help="The recall before every reply (启用记忆召回)"),
) -> None:
    """The web chat's turns in this process, without HTTP, on a new SQLite file (offline responder):
    CPU per turn, turns/s and p50/p95 turn latency (one JSON object)."""
    from ._turns import bench_turns

    figures = await bench_turns(users=users, turns=turns, recall=recall)
    emit_json({"bench": "turns", **dataclasses.asdict(figures)})


async def serve_cmd(
    streams: int = typer.Option(50, "--streams", "-n", min=1, max=200, help="Concurrent chat streams (users)"),
    turns: int = typer.Option(4, "--turns", min=1, max=100, help="Timed turns per stream"),
    think_ms: int = typer.Option(0, "--think-ms", min=0, max=60_000, help="A user's pause between turns (0: none)"),
    max_seconds: float = typer.Option(120.0, "--max-seconds", min=1.0, max=600.0, help="No turn starts after this"),
    workers: int = typer.Option(1, "--workers", min=1, max=32, help="Worker processes of the server"),
) -> None:
    """N concurrent chat streams against `agent-memory serve` (offline responder) over loopback on a new
    SQLite file: turns/s and p50/p95 turn latency (one JSON object)."""
    from ._serve import bench_serve

    figures = await bench_serve(
        streams=streams, turns=turns, think_ms=think_ms, max_seconds=max_seconds, workers=workers
    )
    emit_json({"bench": "serve", **dataclasses.asdict(figures)})


def emit_json(data: Any) -> None:
    """Print one JSON object on stdout (plain text, so scripts can parse it)."""
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))


#: The commands by name, in the order ``--help`` lists them.
_COMMANDS: dict[str, Callable[..., Any]] = {
    "ingest": ingest_cmd,
    "retrieval": retrieval_cmd,
    "latency": latency_cmd,
    "recall": recall_cmd,
    "archive": archive_cmd,
    "keywords": keywords_cmd,
    "writers": writers_cmd,
    "e2e": e2e_cmd,
    "conflicts": conflicts_cmd,
    "load": load_cmd,
    "after-write": after_write_cmd,
    "turns": turns_cmd,
    "serve": serve_cmd,
}


def bench_app(*, run: Runner) -> typer.Typer:
    """The ``bench`` command group; ``run`` runs each async command (the ``agent-memory`` command passes
    the one that prints an error in two lines)."""
    app = typer.Typer(help="Benchmarks; each prints one JSON object on stdout.", no_args_is_help=True)
    for name, command in _COMMANDS.items():
        app.command(name)(run(command) if inspect.iscoroutinefunction(command) else command)
    return app
