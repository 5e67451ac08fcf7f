# Casework API image. It expects an external PostgreSQL, and by default serves without the
# owner's credentials: run `casework migrate` once per release with DATABASE_URL (the owner),
# then any number of containers with CASEWORK_APP_DATABASE_URL (the casework_app role) alone.
# The embedded PostgreSQL (the `embedded` extra) is for laptops and is not installed here.

# python:3.11-slim-bookworm, pinned by the digest of its multi-platform index, so that a
# rebuild gets the same base. To move to a newer one: `docker buildx imagetools inspect
# python:3.11-slim-bookworm` prints the current digest.
ARG BASE_IMAGE=python:3.11-slim-bookworm@sha256:420310dd2ff7895895f0f1f9d15cae5a95dabceb8f1d6b9a23ef33c2c1c542c3

FROM ${BASE_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# The same path as in the final stage: a venv's scripts hard-code it in their shebangs.
RUN python -m venv /opt/venv
WORKDIR /src
# Exactly the locked versions, each checked against its hash, and nothing they did not list
# (requirements.lock: see docs/operations.md for how it is made and checked).
COPY requirements.lock ./
RUN /opt/venv/bin/pip install --require-hashes --no-deps -r requirements.lock
COPY pyproject.toml README.md ./
COPY server ./server
# The project alone; `pip check` fails the build if the lock does not satisfy pyproject.toml.
RUN /opt/venv/bin/pip install --no-deps . && /opt/venv/bin/pip check

FROM ${BASE_IMAGE}
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
# As the service role alone; it refuses to start while a migration is pending.
CMD ["casework", "serve", "--host", "0.0.0.0", "--no-migrate"]
