"""Exactness and real text: the section of the one-page version, on a page of its own until it is rebuilt on a view."""

from __future__ import annotations

from app.web.api.routes.sampling import page_context
from app.web.pages.page import Page

PAGE = Page(
    name="exact",
    path="/exact",
    nav="Exactness and real text",
    title="Exactness and real acceptance",
    question="Is the output exactly the target's, and how does acceptance behave on real text?",
    template="pages/legacy.html",
    controls=(),
    build=lambda reading: {},
    legacy_keys=(
        "xvocab",
        "xtt",
        "xdt",
        "xdist",
        "xtrials",
        "xseed",
        "chk",
        "ngk",
        "ngtemp",
        "ngdraft",
        "ngtarget",
        "ngseed",
        "rhop",
        "rhok",
        "rho",
    ),
    legacy_context=page_context,
)
