"""Names of the constraints the domain tells apart when a write is refused.

`IntegrityViolation.constraint` carries what PostgreSQL reports, so these must match the
names in db/migrations. Where a migration leaves the name to PostgreSQL, it is the
generated `<table>_<column>_key` / `<table>_pkey`; renaming a table or column renames it.
"""

from __future__ import annotations

# 0001_review_loop.sql, `lease_token uuid UNIQUE` (generated name): one verdict per lease.
REVIEW_DECISIONS_LEASE_TOKEN = "review_decisions_lease_token_key"
# 0001_review_loop.sql, `supersedes bigint UNIQUE` (generated name): one overturn per decision.
REVIEW_DECISIONS_SUPERSEDES = "review_decisions_supersedes_key"
# 0005_exceptions.sql, exception_corrections `PRIMARY KEY (workflow, source_record_id,
# version)` (generated name): one correction per version of a record.
EXCEPTION_CORRECTIONS_PKEY = "exception_corrections_pkey"
# 0005_exceptions.sql, `CREATE UNIQUE INDEX exceptions_open_once` (named there): one open
# exception per workflow, record and reason.
EXCEPTIONS_OPEN_ONCE = "exceptions_open_once"
