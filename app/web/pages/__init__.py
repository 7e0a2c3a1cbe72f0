"""The HTML pages: one per question, each built from one view."""
