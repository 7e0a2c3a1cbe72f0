"""Fixtures for tests and demonstrations: samples the product reads, written the way the engines write them.

Nothing in the product imports this package (import-linter holds it)."""
