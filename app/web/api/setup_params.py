"""Query parameters of the roofline setup (presets, formats, overrides), shared by every router that prices a step,
generated from their declarations in app.service.setup_inputs."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from app.service import setup_inputs
from app.service.regimes import BuiltSetup
from app.web.api.inputs import dependency

Setup = Annotated[BuiltSetup, Depends(dependency(setup_inputs.ROOFLINE, setup_inputs.built))]


# Rules between the setup's parameters, listed in the description of every operation that takes a setup.
RULES = "\n\nRules between parameters (a 422 names the parameter):\n\n"


def _named(field: str) -> str:
    return ", ".join(f"`{prefix}_{field}`" for prefix in ("model", "draft"))


SETUP_RULES = (
    f"- {_named('active_params_b')}, {_named('total_params_b')}: active_params_b is at most total_params_b, and "
    "at least total_params_b x experts_per_token / experts (each token uses its share of the routed experts);\n"
    f"- {_named('experts_per_token')}, {_named('experts')}: experts_per_token is at most experts;\n"
    "- `model`, `draft`: the preset with its edited fields must describe a valid model (the same rules when "
    "the edit is blamed on the preset). A 422 names a field of the rule that the request changed;\n"
    "- `fit_steps`, `fit_error`: both or neither (a step fit's size and out-of-sample error, which its `query` "
    "writes with the fitted terms); a 422 names the one missing."
)
