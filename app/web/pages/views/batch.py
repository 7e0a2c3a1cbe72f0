"""Batch size and hardware: the section of the one-page version, on a page of its own until it is rebuilt on a view."""

from __future__ import annotations

from app.web.api.routes.regimes import page_context
from app.web.pages.page import Page

PAGE = Page(
    name="batch",
    path="/batch",
    nav="Batch size and hardware",
    title="When verification stops being free: batch size and hardware",
    question="At which batch size does speculation stop paying on my hardware, and which k should run at each batch?",
    template="pages/legacy.html",
    controls=(),
    build=lambda reading: {},
    legacy_keys=("rg_",),
    legacy_context=page_context,
)
