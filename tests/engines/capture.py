"""Capture a real llama-server's reports into tests/engines/captured/ (see the README there).

    python -m tests.engines.capture BUILD             # BUILD: one of tests.live_engine.BUILDS (b11312, b11434)
    python -m tests.engines.capture BUILD rejected    # the run whose drafts are partly rejected

Starts the build `make engine` made (tests/live_engine.py) as
`llama-server -m target-f16.gguf --spec-type draft-simple -md draft-q4_0.gguf --spec-draft-n-max 4 -lv 4`
(with --metrics and the rest of `llama_server`'s flags), sends the run's two prompts, each as
`complete(PROMPT, n_predict=40)`, and writes the server's whole log (llamacpp-BUILD[-RUN]-lv4.log), `GET /metrics`
after both (llamacpp-BUILD[-RUN]-metrics.prom) and both responses as a JSON list (llamacpp-BUILD[-RUN]-responses.json).
The only edit: the cache directory in the paths of the log and the responses is written `$SPECDEC_ENGINE_CACHE/`.

The runs (RUNS):
- the first (no RUN): REPEATING_PROMPT, whose output repeats the prompt (every draft accepted), and NOVEL_PROMPT;
- `rejected`: PROSE_PROMPT, a story the q4_0 draft only partly agrees with (drafts partly rejected, fewer accepted
  at each later position), and COUNT_PROMPT, counting on (nearly every draft accepted): both requests draft.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests import live_engine

CAPTURED = Path(__file__).parent / "captured"
N_MAX = 4
N_PREDICT = 40
DRAFT = "requantized"  # the draft of the convention kept here (the truncated one accepts nothing)
PROSE_PROMPT = "Once upon a time, in a small village by the sea, there lived"
RUNS = {
    "": (live_engine.REPEATING_PROMPT, live_engine.NOVEL_PROMPT),
    "rejected": (PROSE_PROMPT, live_engine.COUNT_PROMPT),
}


def stem(build: str, run: str = "") -> str:
    """The captured files' common name: llamacpp-BUILD or llamacpp-BUILD-RUN."""
    return f"llamacpp-{build}" + (f"-{run}" if run else "")


def capture(build: str, run: str = "", into: Path = CAPTURED) -> list[Path]:
    with live_engine.using(build) as built:
        flags = ["--spec-type", "draft-simple", "-md", built.drafts[DRAFT], "--spec-draft-n-max", str(N_MAX)]
        with live_engine.llama_server([*flags, "-lv", "4"]) as server:
            responses = [server.complete(prompt, n_predict=N_PREDICT) for prompt in RUNS[run]]
            scrape = server.metrics()
            log = server.log()
    cache = str(Path(built.target).parent.parent) + "/"
    name = stem(build, run)
    written = {
        f"{name}-lv4.log": log.replace(cache, "$SPECDEC_ENGINE_CACHE/"),
        f"{name}-metrics.prom": scrape,
        f"{name}-responses.json": json.dumps(responses, indent=1).replace(cache, "$SPECDEC_ENGINE_CACHE/") + "\n",
    }
    paths = []
    for file_name, text in written.items():
        path = into / file_name
        path.write_text(text)
        paths.append(path)
    return paths


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if (
        not 1 <= len(arguments) <= 2
        or arguments[0] not in live_engine.BUILDS
        or arguments[1:2] not in ([], ["rejected"])
    ):
        sys.exit(
            f"usage: python -m tests.engines.capture BUILD [rejected]  (BUILD one of {', '.join(live_engine.BUILDS)})"
        )
    for path in capture(arguments[0], arguments[1] if len(arguments) == 2 else ""):
        print(path)
