"""A small OpenAI-compatible ``/v1/embeddings`` server on loopback for tests: toy vectors, and switches
that make it fail (HTTP 500) or hold a request until released (a time-out)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIM = 8


def toy_vector(text: str, model: str = "toy") -> list[float]:
    """Character counts folded into DIM buckets (stable across runs); another model permutes them."""
    out = [0.0] * DIM
    shift = sum(map(ord, model)) % DIM
    for ch in text.lower():
        out[(ord(ch) + shift) % DIM] += 1.0
    return out


@dataclass
class EmbeddingServer:
    """What the server was asked and how it answers."""

    url: str = ""
    inputs: list[str] = field(default_factory=list)
    failing: bool = False
    #: the Authorization header of the last request ("" for none)
    authorization: str = ""
    #: texts whose requests fail (the others are served)
    refused: set[str] = field(default_factory=set)
    #: while set, a request waits until it is released (or the server stops)
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


@contextmanager
def embedding_server() -> Iterator[EmbeddingServer]:
    state = EmbeddingServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.authorization = self.headers.get("Authorization", "")
            if state.held.is_set():
                state.release.wait(30)
            asked = body["input"] if isinstance(body["input"], list) else [body["input"]]
            if state.failing or state.refused & set(asked):
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            state.inputs.extend(texts)
            data = [
                {"object": "embedding", "index": i, "embedding": toy_vector(t, body["model"])}
                for i, t in enumerate(texts)
            ]
            payload = json.dumps(
                {
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_port}/v1"
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
