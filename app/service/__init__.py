"""The application layer: one plan per request (plan.py), built once and rendered by the API, the pages and the
command line; the response models (schemas/); and the clients that talk to live engines and Prometheus (clients/).

It imports the model and nothing from the web layer or the command line.
"""
