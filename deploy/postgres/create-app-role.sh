#!/bin/sh
# First start of the database only (docker-entrypoint-initdb.d): the service role, with a
# password. The first migration finds it and grants it what it may do; nothing else.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -v app_password="$CASEWORK_APP_PASSWORD" <<'SQL'
CREATE ROLE casework_app LOGIN PASSWORD :'app_password';
SQL
