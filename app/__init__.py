"""specdec-lab: the arithmetic of speculative decoding, as a page and a JSON API."""

__version__ = "0.1.0"
