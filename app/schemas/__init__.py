"""Pydantic response models, one module per API family."""
