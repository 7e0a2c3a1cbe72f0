"""One module per page: its controls and the builder of its view."""
