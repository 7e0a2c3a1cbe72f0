"""Fit the cost terms to the fitting part of the published points (split by source) and write published_fit.json.

Run after changing the published data or the cost model: `python scripts/fit_published.py`.  The test
tests/test_published.py fails while the file is not what this writes.
"""

from __future__ import annotations

import json

from app.model import published


def main() -> None:
    fit = published.fit_published()
    published.FIT.write_text(json.dumps(fit, indent=1) + "\n", encoding="utf-8")
    held = fit["held_out"]
    print(f"wrote {published.FIT}: held-out median {held['median_error']:.1%}, worst {held['worst_error']:.1%}")


if __name__ == "__main__":
    main()
