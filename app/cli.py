"""The `specdec-lab` command: serve the app, or print the model's tables in a terminal."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

Handler = Callable[[argparse.Namespace], int]


def add_serve_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("serve", help="serve the page and the API with uvicorn")
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WORKERS", "1")))
    parser.set_defaults(handler=run_serve)


def run_serve(arguments: argparse.Namespace) -> int:
    import uvicorn

    uvicorn.run("app.main:app", host=arguments.host, port=arguments.port, workers=arguments.workers)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specdec-lab", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_serve_command(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    handler: Handler = arguments.handler
    return handler(arguments)


if __name__ == "__main__":
    sys.exit(main())
