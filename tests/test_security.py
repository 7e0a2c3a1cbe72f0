"""Headers that keep the page from being turned against its visitors; framing and CORS settings; no reflection."""

from __future__ import annotations

import copy
import html
import re

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.web.core.assets import asset_url
from app.web.core.config import Settings
from app.web.core.security import content_security_policy
from app.web.main import create_app

LAB = "https://lab.example.org"
EVIL = "https://evil.example"
SCRIPT_PAYLOAD = "<script>alert(1)</script>"
ATTRIBUTE_PAYLOAD = '"><img src=x onerror=alert(1)>'


def directives(policy: str) -> dict[str, list[str]]:
    parsed: dict[str, list[str]] = {}
    for part in policy.split(";"):
        words = part.split()
        if words:
            assert words[0] not in parsed, f"directive {words[0]} given twice"
            parsed[words[0]] = words[1:]
    return parsed


def client_with(**settings: object) -> TestClient:
    return TestClient(create_app(Settings(**settings)))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def default_client() -> TestClient:
    return client_with()


def sample_urls() -> list[str]:
    return [
        "/",
        "/embed?k=4&p=0.8&c=0.1",
        "/docs",
        "/openapi.json",
        "/healthz",
        "/api/v1/speedup?p=0.8&k=5&c=0",
        "/api/v1/speedup?p=2",  # 422
        "/api/v1/speedup?p=0.5&p=0.6",  # repeated: 422 from the middleware
        "/api/v1/speedup?pad=" + "x" * 5000,  # 414 from the middleware
        "/no-such-page",  # 404
        asset_url("js/demo.js"),
        asset_url("css/site.css"),
        asset_url("vendor/plotly.min.js"),
    ]


@pytest.mark.parametrize("url", sample_urls(), ids=lambda url: url[:48])
def test_every_response_carries_the_security_headers(default_client: TestClient, url: str) -> None:
    response = default_client.get(url)
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "strict-origin-when-cross-origin"
    assert "camera=()" in response.headers["permissions-policy"]
    policy = directives(response.headers["content-security-policy"])
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]
    assert policy["frame-ancestors"] == ["*"]


def test_policy_forbids_inline_script_eval_and_every_external_origin() -> None:
    policy = directives(content_security_policy(["*"]))
    for name, sources in policy.items():
        assert "'unsafe-eval'" not in sources, name
        if name == "frame-ancestors":
            continue
        for source in sources:
            assert source in {"'self'", "'none'", "'unsafe-inline'", "data:", "blob:"}, f"{name} allows {source}"
        if name in {"script-src", "default-src", "connect-src"}:
            assert "'unsafe-inline'" not in sources
            assert not {"data:", "blob:"} & set(sources), name


def test_default_allows_any_embedding_page(default_client: TestClient) -> None:
    response = default_client.get("/embed")
    assert directives(response.headers["content-security-policy"])["frame-ancestors"] == ["*"]
    assert "x-frame-options" not in response.headers


def test_configured_frame_ancestors_restrict_framing() -> None:
    restricted = client_with(frame_ancestors=[LAB, "https://*.example.net"])
    for url in ("/", "/embed", "/api/v1/speedup"):
        policy = directives(restricted.get(url).headers["content-security-policy"])
        assert policy["frame-ancestors"] == [LAB, "https://*.example.net"]
    forbidden = client_with(frame_ancestors=[]).get("/embed")
    assert directives(forbidden.headers["content-security-policy"])["frame-ancestors"] == ["'none'"]
    assert forbidden.headers["x-frame-options"] == "DENY"


def test_frame_ancestors_and_cors_origins_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECDEC_FRAME_ANCESTORS", f'["{LAB}"]')
    monkeypatch.setenv("SPECDEC_CORS_ORIGINS", f"{LAB}, http://127.0.0.1:8080")
    settings = Settings()
    assert settings.frame_ancestors == [LAB]
    assert settings.cors_origins == [LAB, "http://127.0.0.1:8080"]
    response = TestClient(create_app(settings)).get("/embed")
    assert directives(response.headers["content-security-policy"])["frame-ancestors"] == [LAB]


@pytest.mark.parametrize(
    "value",
    [
        f"{LAB}; script-src *",  # would smuggle a directive into the header
        "'unsafe-inline'",
        "https://lab.example.org\r\nSet-Cookie: a=b",
        "javascript:alert(1)//x y",
    ],
)
def test_settings_refuse_values_that_would_break_out_of_the_header(value: str) -> None:
    with pytest.raises(ValidationError):
        Settings(frame_ancestors=[value])
    with pytest.raises(ValidationError):
        Settings(cors_origins=[value])


def test_cors_default_lets_any_origin_read_the_get_api(default_client: TestClient) -> None:
    response = default_client.get("/api/v1/speedup", headers={"Origin": EVIL})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in response.headers


def test_cors_restricted_to_configured_origins() -> None:
    restricted = client_with(cors_origins=[LAB])
    allowed = restricted.get("/api/v1/speedup", headers={"Origin": LAB})
    assert allowed.headers["access-control-allow-origin"] == LAB
    denied = restricted.get("/api/v1/speedup", headers={"Origin": EVIL})
    assert denied.status_code == 200  # the answer is public; the browser just may not hand it to evil's script
    assert "access-control-allow-origin" not in denied.headers
    preflight_allowed = restricted.options(
        "/api/v1/speedup", headers={"Origin": LAB, "Access-Control-Request-Method": "GET"}
    )
    assert preflight_allowed.status_code == 200
    assert preflight_allowed.headers["access-control-allow-origin"] == LAB
    preflight_denied = restricted.options(
        "/api/v1/speedup", headers={"Origin": EVIL, "Access-Control-Request-Method": "GET"}
    )
    assert preflight_denied.status_code == 400
    assert "access-control-allow-origin" not in preflight_denied.headers


def test_cors_off_when_no_origins_configured() -> None:
    response = client_with(cors_origins=[]).get("/api/v1/speedup", headers={"Origin": LAB})
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers


HOSTILE_QUERIES = [
    f"k={SCRIPT_PAYLOAD}",
    f"p={ATTRIBUTE_PAYLOAD}",
    f"c={ATTRIBUTE_PAYLOAD}&k={SCRIPT_PAYLOAD}",
    f"embed={SCRIPT_PAYLOAD}",
    f"unknown={SCRIPT_PAYLOAD}&seed={ATTRIBUTE_PAYLOAD}",
    "k=</script><script>alert(1)</script>",
    "p=0.5</script>",
]


@pytest.mark.parametrize("path", ["/", "/embed"])
@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_url_state_is_never_reflected_raw(default_client: TestClient, path: str, query: str) -> None:
    response = default_client.get(path, params=dict(part.split("=", 1) for part in query.split("&")))
    assert response.status_code == 200
    body = response.text
    for payload in (SCRIPT_PAYLOAD, ATTRIBUTE_PAYLOAD, "<img", "onerror", "alert(1)", "</script><script>"):
        assert payload not in body
    # Invalid state falls back to the validated defaults, shown as plain numbers.
    assert re.search(r'<input type="range" id="k"[^>]*value="\d+"', body)
    assert re.search(r'<input type="range" id="p"[^>]*value="[0-9.]+"', body)


def test_valid_url_state_is_rendered_as_validated_numbers(default_client: TestClient) -> None:
    body = default_client.get("/", params={"k": "4", "p": "0.8", "c": "0.1"}).text
    assert re.search(r'id="k"[^>]*value="4"', body)
    assert re.search(r'id="p"[^>]*value="0.8"', body)
    clamped = default_client.get("/", params={"k": "1e9", "p": "-3"}).text
    assert re.search(r'id="k"[^>]*value="16"', clamped)
    assert re.search(r'id="p"[^>]*value="0.0"', clamped)


@pytest.mark.parametrize("url", ["/", "/embed", "/docs", "/?k=3&p=0.9"])
def test_pages_have_no_inline_script_handler_or_external_resource(default_client: TestClient, url: str) -> None:
    body = default_client.get(url).text
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", body, flags=re.S)
    assert scripts
    for attributes, content in scripts:
        if 'type="application/json"' in attributes:
            assert "<" not in content, "JSON islands must escape <"
            continue
        assert re.search(r'src="/static/[0-9a-f]+/', attributes), f"script without a same-origin src: {attributes}"
        assert content.strip() == "", "inline script"
    tags = re.findall(r"<[a-zA-Z][^>]*>", body)
    for tag in tags:
        assert not re.search(r"\son[a-z]+\s*=", tag), f"inline event handler: {tag}"
        assert "javascript:" not in tag.lower()
        for attribute in re.findall(r'\b(?:src|srcset|poster|data)="([^"]*)"', tag):
            assert not re.match(r"(?:[a-z]+:)?//", html.unescape(attribute)), f"external resource: {tag}"
        if re.match(r"<link\b", tag) and 'rel="stylesheet"' in tag:
            assert re.search(r'href="/static/', tag), f"external stylesheet: {tag}"


def test_query_limits_are_documented_for_every_operation() -> None:
    from app.web.core.security import document_query_limits
    from app.web.main import app

    original = app.openapi()
    before = copy.deepcopy(original)
    documented = document_query_limits(original, 4096)
    assert original == before, "the app's own schema is left alone"
    for path, operations in documented["paths"].items():
        for operation in operations.values():
            responses = operation["responses"]
            assert "4096" in responses["414"]["description"]
            if path.startswith("/api/"):
                assert "422" in responses
            assert "200" in responses or "202" in responses  # 202: a job accepted (POST /api/v1/measure)
    assert document_query_limits(documented, 4096) == documented  # idempotent


def test_documented_414_matches_what_the_middleware_sends(default_client: TestClient) -> None:
    response = default_client.get("/api/v1/speedup?pad=" + "x" * 5000)
    assert response.status_code == 414
    detail = response.json()["detail"]
    assert detail[0]["loc"] == ["query"] and "4096" in detail[0]["msg"] and detail[0]["type"]
