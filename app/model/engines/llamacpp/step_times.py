"""llama.cpp's step times: llama-server writes no file of them; ``specdec-lab measure --batch`` times its
passes and writes the CSV :mod:`app.model.live.step_fit` reads, so there is no format of its own here."""

from __future__ import annotations

from app.model.engines import step_times

STEP_TIMES: tuple[step_times.StepTimeFormat, ...] = ()
