# specdec-lab: the same install path as `make run` (a venv, dependencies from constraints.txt, and Plotly.js's
# partial bundle built from package-lock.json's plotly.js).
FROM node:22-slim AS plotly
WORKDIR /build
COPY package.json package-lock.json .npmrc ./
# npm's postinstall builds the bundle and its brotli (scripts/plotly_bundle.mjs).
COPY scripts/plotly_bundle.mjs scripts/precompress.mjs ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=error

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/app/.venv/bin:$PATH

RUN useradd --create-home --uid 10001 specdec
WORKDIR /app

COPY pyproject.toml constraints.txt README.md ./
COPY app ./app
COPY templates ./templates
COPY static ./static
COPY --from=plotly /build/node_modules/.plotly-partial ./node_modules/.plotly-partial
RUN python -m venv /app/.venv \
    && /app/.venv/bin/python -m pip install --no-cache-dir -c constraints.txt -e . \
    && chown -R 10001:10001 /app

USER 10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import urllib.request, sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status == 200 else 1)"]
CMD ["uvicorn", "app.web.main:app", "--host", "0.0.0.0", "--port", "8000", "--workers", "2"]
