from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from app.web.core.config import Settings

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


@pytest.mark.parametrize("name", sorted(Settings.model_fields))
def test_every_setting_is_documented_in_the_readme(name: str) -> None:
    variable = f"SPECDEC_{name.upper()}"
    assert f"`{variable}`" in README, f"{variable} is not in the README's settings table"
    assert Settings.model_fields[name].description


def test_origin_lists_from_json_or_commas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECDEC_FRAME_ANCESTORS", "https://a.example, https://b.example:8443")
    monkeypatch.setenv("SPECDEC_CORS_ORIGINS", '["https://c.example"]')
    settings = Settings()
    assert settings.frame_ancestors == ["https://a.example", "https://b.example:8443"]
    assert settings.cors_origins == ["https://c.example"]


def test_header_injection_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECDEC_FRAME_ANCESTORS", "https://a.example; script-src *")
    with pytest.raises(ValidationError, match="frame-ancestors"):
        Settings()
