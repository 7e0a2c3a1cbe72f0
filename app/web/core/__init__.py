"""Settings, security headers, compression, static assets and error responses."""
