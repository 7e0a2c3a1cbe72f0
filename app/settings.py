"""Every setting of the service, read once from the environment (prefix SPECDEC_)."""

from __future__ import annotations

from functools import cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SPECDEC_")

    frame_ancestors: list[str] = Field(
        default_factory=lambda: ["*"],
        description=(
            "Origins allowed to embed the page in an iframe (CSP frame-ancestors). "
            'JSON list, e.g. ["https://lab.example.org"]; ["*"] allows any page.'
        ),
    )
    cors_origins: list[str] = Field(
        default_factory=lambda: ["*"],
        description="Origins allowed to call the GET API from a browser (CORS). JSON list; [] disables CORS.",
    )
    max_query_length: int = Field(
        default=4096, description="Longest query string accepted, in characters; longer gets 414."
    )


@cache
def get_settings() -> Settings:
    return Settings()
