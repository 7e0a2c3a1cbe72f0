"""The exact rule for 1,000,000 trials over a 1,000-token vocabulary against numpy's bare draws.

Bound: at most 2x the time numpy needs for 1,000,000 categorical samples from q
(Generator.choice with p=q) plus 1,000,000 uniforms, measured in the same process.
"""

from __future__ import annotations

import numpy as np

from app.model.arithmetic.sampling import make_pair, speculative_sample
from benchmarks.timing import best_time

TRIALS = 1_000_000
VOCAB = 1_000
REPEATS = 9
BOUND = 2.0


def main() -> None:
    pair = make_pair(VOCAB, 1.0, 1.0, 1.0, seed=0)
    rng = np.random.default_rng(0)

    def bare() -> None:
        rng.choice(VOCAB, size=TRIALS, p=pair.draft)
        rng.random(TRIALS)

    bare_seconds = best_time(bare, REPEATS)
    rule_seconds = best_time(lambda: speculative_sample(pair, TRIALS, rng), REPEATS)
    ratio = rule_seconds / bare_seconds
    print(
        f"exact rule: {rule_seconds * 1e3:.1f} ms for {TRIALS:,} trials over {VOCAB:,} tokens "
        f"(acceptance {pair.overlap:.3f}); numpy categorical + uniforms {bare_seconds * 1e3:.1f} ms (bound {BOUND}x)"
    )
    print(f"RATIO exact_rule_1M_vocab1000 {rule_seconds:.6f} {bare_seconds:.6f} {ratio:.3f}")


if __name__ == "__main__":
    main()
