"""Choose the cost terms by the protocol, fit them to every published source and write published_fit.json.

Run after changing the published data or the cost model: `python scripts/fit_published.py`.  The test
tests/test_published.py fails while the file is not what this writes.
"""

from __future__ import annotations

import json

from app.model.cost import fitting, published


def main() -> None:
    fit = fitting.fit_published()
    published.FIT.write_text(json.dumps(fit, indent=1) + "\n", encoding="utf-8")
    loso = fit["leave_one_source_out"]
    print(
        f"wrote {published.FIT}: terms {', '.join(fit['protocol']['chosen'])}; leave-one-source-out median "
        f"{loso['median_error']:.1%}, worst {loso['worst_error']:.1%} over {loso['points']} points"
    )


if __name__ == "__main__":
    main()
