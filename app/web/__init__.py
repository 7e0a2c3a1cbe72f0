"""The web layer: app factory, API routes, pages and their views, schemas, security and assets."""
