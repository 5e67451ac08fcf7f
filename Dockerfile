# Casework API image. It expects an external PostgreSQL: pass DATABASE_URL (the owner role,
# which runs migrations at start-up) and, if casework_app needs a password,
# CASEWORK_APP_DATABASE_URL. The embedded PostgreSQL is for laptops, not containers.

FROM python:3.11-slim AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# The same path as in the final stage: a venv's scripts hard-code it in their shebangs.
RUN python -m venv /opt/venv
WORKDIR /src
COPY pyproject.toml README.md ./
COPY server ./server
RUN /opt/venv/bin/pip install .

FROM python:3.11-slim
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    CASEWORK_DB_DIR=/app/db
RUN useradd --system --uid 10001 --user-group --no-create-home --home-dir /app casework
COPY --from=builder /opt/venv /opt/venv
# Migrations and named queries are read at run time; they are not part of the wheel.
COPY db /app/db
WORKDIR /app
USER casework
EXPOSE 8000
# /readyz: 503 (urlopen raises) while the database or the event listener is down.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=3)"]
CMD ["casework", "serve", "--host", "0.0.0.0"]
