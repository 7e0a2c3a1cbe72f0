"""From requests to response models, shared by the API and the command line."""
