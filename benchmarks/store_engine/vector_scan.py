"""Exact nearest memories without a vector index: one user's stored vectors (512-dimensional float32 blobs,
as ``agent_memory_search_index.embedding`` holds them) read from the store and scored, at several sizes.

- ``sqlite3``: the rows read through the standard library, cosine in numpy (the vectors are unit length).
- ``postgresql``: the same over ``bytea`` through psycopg (``--postgres``: a server URL; a database is
  created and dropped).
- ``apsw`` and ``pysqlite3`` (when installed, e.g. in a scratch virtual environment with ``sqlite-vec``):
  whether they load the ``sqlite-vec`` extension, and ``vec_distance_cosine`` over the blob column of the
  same file (a brute-force scan inside SQLite, no vec0 table).

The file holds the user's rows among other users' rows (a quarter as many), keyed by user first. Times
are medians of ``--rounds`` warm queries (file in the page cache), each a new random query vector.

    nice .venv/bin/python benchmarks/store_engine/vector_scan.py --sizes 10000,100000 \\
        --postgres postgresql://postgres@127.0.0.1:5432/postgres
    nice /tmp/scratch-venv/bin/python benchmarks/store_engine/vector_scan.py --sizes 10000,100000 --only-extensions
"""

from __future__ import annotations

import argparse
import importlib
import json
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

DIM = 512
TOP = 50


def _vectors(n: int, seed: int) -> npt.NDArray[np.float32]:
    m = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _rows(n: int) -> list[tuple[str, str, bytes]]:
    rows = [("u-big", str(uuid.UUID(int=i)), v.tobytes()) for i, v in enumerate(_vectors(n, 1))]
    rows += [(f"u-{i % 97}", str(uuid.UUID(int=n + i)), v.tobytes()) for i, v in enumerate(_vectors(n // 4, 2))]
    return rows


def _write_sqlite(path: Path, rows: list[tuple[str, str, bytes]]) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE idx (user_id TEXT, memory_id TEXT, embedding BLOB, PRIMARY KEY (user_id, memory_id))")
    con.executemany("INSERT INTO idx VALUES (?, ?, ?)", rows)
    con.commit()
    con.close()


def _numpy_top(ids: list[str], blobs: list[bytes], q: npt.NDArray[np.float32]) -> list[str]:
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), DIM)
    scores = matrix @ q
    best = np.argpartition(-scores, TOP)[:TOP]
    return [ids[i] for i in best[np.argsort(-scores[best])]]


def _timed(fn: Callable[[npt.NDArray[np.float32]], list[str]], rounds: int) -> tuple[float, list[str]]:
    times, last = [], []
    for r in range(rounds):
        q = _vectors(1, 100 + r)[0]
        started = time.perf_counter()
        last = fn(q)
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1), last


def sqlite_numpy(path: Path, rounds: int) -> dict[str, Any]:
    con = sqlite3.connect(path)

    def run(q: npt.NDArray[np.float32]) -> list[str]:
        rows = con.execute("SELECT memory_id, embedding FROM idx WHERE user_id = 'u-big'").fetchall()
        return _numpy_top([r[0] for r in rows], [r[1] for r in rows], q)

    ms, _ = _timed(run, rounds)
    started = time.perf_counter()
    con.execute("SELECT memory_id, embedding FROM idx WHERE user_id = 'u-big'").fetchall()
    read_ms = (time.perf_counter() - started) * 1000
    return {"engine": "sqlite3+numpy", "ms_p50": ms, "read_rows_ms": round(read_ms, 1),
            "load_extension": hasattr(sqlite3.Connection, "enable_load_extension")}  # fmt: skip


def postgres_numpy(url: str, rows: list[tuple[str, str, bytes]], rounds: int) -> dict[str, Any]:
    import psycopg

    name = f"vector_scan_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
        vector = admin.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    try:
        with psycopg.connect(url.rsplit("/", 1)[0] + "/" + name) as con:
            con.execute(
                "CREATE TABLE idx (user_id text, memory_id uuid, embedding bytea, PRIMARY KEY (user_id, memory_id))"
            )
            with con.cursor() as cur, cur.copy("COPY idx FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            con.commit()

            def run(q: npt.NDArray[np.float32]) -> list[str]:
                got = con.execute("SELECT memory_id, embedding FROM idx WHERE user_id = 'u-big'").fetchall()
                return _numpy_top([str(r[0]) for r in got], [bytes(r[1]) for r in got], q)

            ms, _ = _timed(run, rounds)
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name}")
    return {"engine": "postgresql+numpy", "ms_p50": ms, "pgvector_available": bool(vector and vector[0])}


def extension(
    module: str, path: Path, rounds: int, check: Callable[[npt.NDArray[np.float32]], list[str]]
) -> dict[str, Any]:
    """``vec_distance_cosine`` over the blob column through ``apsw`` or ``pysqlite3``."""
    try:
        import sqlite_vec

        lib = importlib.import_module("pysqlite3.dbapi2" if module == "pysqlite3" else module)
    except ImportError as exc:
        return {"engine": f"{module}+sqlite-vec", "error": f"not installed: {exc}"}
    try:
        con = lib.Connection(str(path)) if module == "apsw" else lib.connect(str(path))
        if module == "apsw":
            con.enable_load_extension(True)
            con.load_extension(sqlite_vec.loadable_path())
        else:
            con.enable_load_extension(True)
            sqlite_vec.load(con)
        version = next(iter(con.execute("SELECT vec_version()")))[0]
    except Exception as exc:  # what failed is the finding
        return {"engine": f"{module}+sqlite-vec", "error": f"{type(exc).__name__}: {exc}"}

    def run(q: npt.NDArray[np.float32]) -> list[str]:
        sql = ("SELECT memory_id FROM idx WHERE user_id = 'u-big' "
               "ORDER BY vec_distance_cosine(embedding, ?) LIMIT ?")  # fmt: skip
        return [r[0] for r in con.execute(sql, (q.tobytes(), TOP))]

    ms, last = _timed(run, rounds)
    q = _vectors(1, 100 + rounds - 1)[0]
    same = len(set(last) & set(check(q))) / TOP
    return {"engine": f"{module}+sqlite-vec {version}", "ms_p50": ms, "top50_same_as_numpy": round(same, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--postgres", help="a PostgreSQL URL (a scratch database is created and dropped)")
    parser.add_argument("--only-extensions", action="store_true", help="apsw / pysqlite3 + sqlite-vec only")
    args = parser.parse_args()
    for n in (int(s) for s in args.sizes.split(",")):
        rows = _rows(n)
        with tempfile.TemporaryDirectory(prefix="vector-scan-") as folder:
            path = Path(folder) / "store.db"
            _write_sqlite(path, rows)
            con = sqlite3.connect(path)
            data = con.execute("SELECT memory_id, embedding FROM idx WHERE user_id = 'u-big'").fetchall()
            ids, blobs = [r[0] for r in data], [r[1] for r in data]

            def check(q: npt.NDArray[np.float32], ids: list[str] = ids, blobs: list[bytes] = blobs) -> list[str]:
                return _numpy_top(ids, blobs, q)

            results = [] if args.only_extensions else [sqlite_numpy(path, args.rounds)]
            if args.postgres and not args.only_extensions:
                results.append(postgres_numpy(args.postgres, rows, args.rounds))
            results += [extension(m, path, args.rounds, check) for m in ("apsw", "pysqlite3")]
            for result in results:
                print(json.dumps({"memories": n, **result}), flush=True)


if __name__ == "__main__":
    main()
