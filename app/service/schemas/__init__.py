"""Pydantic response models of the API."""
