"""Training the n-gram pair and a 1,000-token speculative generation, from a cold interpreter.

Bound: under one second on this machine's class of hardware. Each run is a fresh
process so that nothing is cached; the figure is the median of the runs, imports excluded
(they are reported separately).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

RUNS = 5
BOUND_SECONDS = 1.0
TOKENS = 1_000

CHILD = """
import json, time
start = time.perf_counter()
from app.model.arithmetic import ngram
imported = time.perf_counter()
ngram.train([{draft}, {target}])
trained = time.perf_counter()
run = ngram.run_pair(k=4, tokens={tokens}, seed=0, temperature=0.5, draft_order={draft}, target_order={target})
generated = time.perf_counter()
print(json.dumps({{"import": imported - start, "train": trained - imported, "generate": generated - trained,
                  "acceptance": run.acceptance, "tokens_per_cycle": run.mean_tokens_per_cycle}}))
"""


def measure(draft: int, target: int) -> dict[str, float]:
    code = CHILD.format(draft=draft, target=target, tokens=TOKENS)
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    result: dict[str, float] = json.loads(output)
    return result


def main() -> None:
    draft, target = 3, 6
    runs = [measure(draft, target) for _ in range(RUNS)]
    train = statistics.median(run["train"] for run in runs)
    generate = statistics.median(run["generate"] for run in runs)
    total = statistics.median(run["train"] + run["generate"] for run in runs)
    imports = statistics.median(run["import"] for run in runs)
    print(
        f"n-gram pair (orders {draft} and {target}): training {train * 1e3:.0f} ms, "
        f"{TOKENS:,}-token speculative generation {generate * 1e3:.0f} ms, imports {imports * 1e3:.0f} ms; "
        f"acceptance {runs[0]['acceptance']:.3f}, tokens per cycle {runs[0]['tokens_per_cycle']:.2f} "
        f"(bound {BOUND_SECONDS:.1f} s)"
    )
    print(f"RATIO ngram_train_and_generate_1000 {total:.6f} {BOUND_SECONDS:.6f} {total / BOUND_SECONDS:.3f}")


if __name__ == "__main__":
    main()
