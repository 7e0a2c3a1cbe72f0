"""Every setting of the service, read once from the environment (prefix SPECDEC_)."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from starlette.requests import Request

# A CSP source expression for frame-ancestors / an origin for CORS: '*', a scheme ("https:"), or
# scheme://host[:port] with an optional leading "*." wildcard. Nothing that could end the header value.
_SOURCE = re.compile(r"^(\*|'self'|'none'|[a-z][a-z0-9+.-]*:|[a-z][a-z0-9+.-]*://(\*\.)?[a-z0-9.-]+(:(\d{1,5}|\*))?)$")
_ORIGIN = re.compile(r"^(\*|[a-z][a-z0-9+.-]*://[a-z0-9.-]+(:\d{1,5})?)$")


def _origin_list(value: object) -> object:
    """A JSON list, or origins separated by commas or spaces: `https://a.org, https://b.org`."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        return json.loads(text)
    return [item for item in re.split(r"[\s,]+", text) if item]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SPECDEC_")

    frame_ancestors: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["*"],
        description=(
            "Origins allowed to embed the page in an iframe (CSP frame-ancestors). "
            'JSON list or comma-separated, e.g. ["https://lab.example.org"]; ["*"] allows any page, '
            "[] forbids framing."
        ),
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["*"],
        description=(
            "Origins allowed to call the GET API from a browser (CORS). JSON list or comma-separated; [] disables CORS."
        ),
    )
    allow_fetch: bool = Field(
        default=False,
        description=(
            "Let POST /api/v1/calibrate fetch a url= given by the caller (http(s) only, 5 s, 1 MB). Off by default so "
            "that a public deployment cannot be used to probe a private network."
        ),
    )
    allow_measure: bool = Field(
        default=False,
        description=(
            "Let POST /api/v1/measure (and the /decide page) drive the inference servers a caller names: a batch "
            "sweep of requests, one at a time per worker. Off by default: it sends load to any host given."
        ),
    )
    max_query_length: int = Field(
        default=4096, ge=64, le=65536, description="Longest query string accepted, in characters; longer gets 414."
    )
    heavy_concurrency: int = Field(
        default=8,
        ge=1,
        le=1024,
        description=(
            "Heavy requests (simulate, run, exact-rule, chain, ngram, bursty, trees, calibrate, regimes) one worker "
            "accepts at once (run by at most as many processes as there are cores); more at the same time get 503 "
            "with Retry-After at once instead of queueing."
        ),
    )

    @field_validator("frame_ancestors", "cors_origins", mode="before")
    @classmethod
    def _parse_origin_lists(cls, value: object) -> object:
        return _origin_list(value)

    @field_validator("frame_ancestors")
    @classmethod
    def _check_frame_ancestors(cls, value: list[str]) -> list[str]:
        for source in value:
            if not _SOURCE.match(source.lower().rstrip("/") or "/"):
                raise ValueError(f"{source!r} is not a CSP frame-ancestors source such as https://lab.example.org")
        return [source.rstrip("/") for source in value]

    @field_validator("cors_origins")
    @classmethod
    def _check_cors_origins(cls, value: list[str]) -> list[str]:
        for origin in value:
            if not _ORIGIN.match(origin.lower().rstrip("/")):
                raise ValueError(f"{origin!r} is not an origin such as https://lab.example.org (scheme://host[:port])")
        return [origin.rstrip("/") for origin in value]


@cache
def get_settings() -> Settings:
    return Settings()


def app_settings(request: Request) -> Settings:
    """The settings the app was made with (``create_app``'s), else those of the environment."""
    settings = getattr(request.app.state, "settings", None)
    return settings if isinstance(settings, Settings) else get_settings()
