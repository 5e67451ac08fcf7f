"""PostgreSQL access: connections, named queries, migrations and the embedded server."""
