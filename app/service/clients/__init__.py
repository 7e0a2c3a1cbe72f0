"""Clients of live servers: llama-servers driven by measure, and a Prometheus watched over a fleet."""
