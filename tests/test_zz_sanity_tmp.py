import schemathesis
from fastapi import FastAPI, Query
from hypothesis import settings, HealthCheck
from pydantic import BaseModel
from tests.test_fuzz_api import _normalise_tuples

class Out(BaseModel):
    pair: tuple[float, float]
    x: int

bad = FastAPI()
@bad.get("/x", response_model=Out)
def x(n: int = Query(0, ge=0, le=10)):
    if n == 7:
        return {"pair": (1.0, 2.0), "x": 1/0}
    return {"pair": (1.0, 2.0), "x": n}

raw = _normalise_tuples(bad.openapi())
schema = schemathesis.openapi.from_dict(raw); schema.app = bad

@schema.parametrize()
@settings(max_examples=30, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
def test_x(case):
    case.call_and_validate()
