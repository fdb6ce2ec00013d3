"""``python -m agent_memory.settings.reference [--write PATH | --check PATH]``: the settings reference.

Without options it prints the reference; ``--write`` writes it to a file, and ``--check`` exits with 1
(saying so) when the file differs from what the settings class gives.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._reference import settings_reference


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent_memory.settings.reference", description=__doc__)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", type=Path, metavar="PATH", help="write the reference to PATH")
    group.add_argument("--check", type=Path, metavar="PATH", help="exit 1 when PATH is out of date")
    args = parser.parse_args(argv)
    text = settings_reference()
    if args.write is not None:
        args.write.write_text(text, encoding="utf-8")
        return 0
    if args.check is not None:
        current = args.check.read_text(encoding="utf-8") if args.check.is_file() else ""
        if current != text:
            print(
                f"{args.check} is out of date: run python -m agent_memory.settings.reference --write {args.check}",
                file=sys.stderr,
            )
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
