"""Every report format the calibration reads, damaged the ways a paste or a scrape is: a number made negative, huge,
NaN or infinite, a line lost, repeated or cut short, two lines swapped, a label's value changed.  Whatever the damage,
POST /api/v1/calibrate and the /decide page's view answer 200 or a 4xx that names the input, never a 5xx.

Seeded, so that a failure names its format and seed and reproduces; bounded, so that it runs in seconds."""

from __future__ import annotations

import random
import re

import pytest
from fastapi.testclient import TestClient

from app.model.live.engine_metrics import REPORT_FORMATS
from tests.samples import engine_reports

MUTATIONS_PER_FORMAT = 25
NUMBER = re.compile(r"(?<![A-Za-z_])-?\d+(\.\d+)?(e[+-]?\d+)?")
BAD_NUMBERS = ("-1", "0", "1e308", "NaN", "+Inf", "-Inf", "3.5", "99999999999", "1e-300")


def damaged(text: str, rnd: random.Random) -> str:
    lines = text.splitlines()
    for _ in range(rnd.randint(1, 3)):
        if not lines:
            break
        index = rnd.randrange(len(lines))
        kind = rnd.choice(("number", "number", "lose", "repeat", "swap", "cut", "label"))
        if kind == "number":
            found = list(NUMBER.finditer(lines[index]))
            if found:
                match = rnd.choice(found)
                line = lines[index]
                lines[index] = line[: match.start()] + rnd.choice(BAD_NUMBERS) + line[match.end() :]
        elif kind == "lose":
            del lines[index]
        elif kind == "repeat":
            lines.insert(index, lines[index])
        elif kind == "swap":
            other = rnd.randrange(len(lines))
            lines[index], lines[other] = lines[other], lines[index]
        elif kind == "cut":
            lines[index] = lines[index][: rnd.randrange(len(lines[index]) + 1)]
        else:
            lines[index] = lines[index].replace('="', '="x', 1)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("format_name", REPORT_FORMATS)
def test_a_damaged_report_is_answered_never_with_a_server_error(client: TestClient, format_name: str) -> None:
    rnd = random.Random(format_name)
    answered = set()
    lines = 0
    for seed in range(MUTATIONS_PER_FORMAT):
        report = engine_reports.example_report(format_name, 0.7, 4, 2_000, seed, classes=1 + seed % 2)
        text = damaged(report, rnd)
        lines = max(lines, len(report.splitlines()))
        direct = client.post("/api/v1/calibrate", content=text.encode(), headers={"content-type": "text/plain"})
        page = client.post("/api/v1/views/decide", json={"metrics": text})
        for response in (direct, page):
            assert response.status_code < 500, (format_name, seed, response.text[:300], text[:2000])
            if response.status_code != 200:
                detail = response.json()["detail"]
                assert detail and all(item.get("msg") for item in detail), (format_name, seed, detail)
            answered.add(response.status_code)
    if lines > 3:  # some damage leaves a report of many lines readable: the test exercises both paths there
        assert 200 in answered, format_name
