"""A user's memory as one JSON-lines file: export it, import it into any database of either backend.

>>> counts = await export_user(system.layer, user_id="alice", out=open("alice.jsonl", "w"))  # doctest: +SKIP
>>> counts = await import_user(system.layer, lines=open("alice.jsonl"), user_id="alice2")  # doctest: +SKIP
"""

from ._jsonl import FORMAT_VERSION, OnConflict, export_user, import_user

__all__ = ["FORMAT_VERSION", "OnConflict", "export_user", "import_user"]
