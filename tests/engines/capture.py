"""Capture a real llama-server's reports into tests/engines/captured/ (see the README there).

    python -m tests.engines.capture BUILD    # BUILD: one of tests.live_engine.BUILDS (b11312, b11434)

Starts the build `make engine` made (tests/live_engine.py) as
`llama-server -m target-f16.gguf --spec-type draft-simple -md draft-q4_0.gguf --spec-draft-n-max 4 -lv 4`
(with --metrics and the rest of `llama_server`'s flags),
sends `complete(REPEATING_PROMPT, n_predict=40)` and `complete(NOVEL_PROMPT, n_predict=40)`, and writes the
server's whole log (llamacpp-BUILD-lv4.log), `GET /metrics` after both (llamacpp-BUILD-metrics.prom) and both
responses as a JSON list (llamacpp-BUILD-responses.json). The only edit: the cache directory in the paths of the
log and the responses is written `$SPECDEC_ENGINE_CACHE/`.
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


def capture(build: str, into: Path = CAPTURED) -> list[Path]:
    with live_engine.using(build) as built:
        flags = ["--spec-type", "draft-simple", "-md", built.drafts[DRAFT], "--spec-draft-n-max", str(N_MAX)]
        with live_engine.llama_server([*flags, "-lv", "4"]) as server:
            responses = [
                server.complete(prompt, n_predict=N_PREDICT)
                for prompt in (live_engine.REPEATING_PROMPT, live_engine.NOVEL_PROMPT)
            ]
            scrape = server.metrics()
            log = server.log()
    cache = str(Path(built.target).parent.parent) + "/"
    written = {
        f"llamacpp-{build}-lv4.log": log.replace(cache, "$SPECDEC_ENGINE_CACHE/"),
        f"llamacpp-{build}-metrics.prom": scrape,
        f"llamacpp-{build}-responses.json": json.dumps(responses, indent=1).replace(cache, "$SPECDEC_ENGINE_CACHE/")
        + "\n",
    }
    paths = []
    for name, text in written.items():
        path = into / name
        path.write_text(text)
        paths.append(path)
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in live_engine.BUILDS:
        sys.exit(f"usage: python -m tests.engines.capture BUILD  (one of {', '.join(live_engine.BUILDS)})")
    for path in capture(sys.argv[1]):
        print(path)
