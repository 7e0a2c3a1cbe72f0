"""Decide for my server: the section of the one-page version, on a page of its own until it is rebuilt on a view."""

from __future__ import annotations

from app.web.api.routes.decision import page_context
from app.web.pages.page import Page

PAGE = Page(
    name="decide",
    path="/decide",
    nav="Decide for my server",
    title="From serving metrics to a decision",
    question="What p does my server see, which draft source and k should I run, and do trees pay?",
    template="pages/legacy.html",
    controls=(),
    build=lambda reading: {},
    legacy_keys=(
        "dec_",
        "cal_",
        "src_",
        "tree_",
    ),
    legacy_context=page_context,
)
