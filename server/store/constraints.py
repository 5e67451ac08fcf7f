"""Names of the constraints the domain tells apart when a write is refused.

`IntegrityViolation.constraint` carries what PostgreSQL reports, so these must match the
names in db/migrations. Each is written out in a migration (0007 renamed the ones PostgreSQL
had generated from a table and column), so a reader of the schema sees what the code tells
apart. Each comment starts with the table the name is on;
tests/migrations/test_constraint_names.py checks both against a migrated database.
"""

from __future__ import annotations

# review_decisions: `lease_token uuid UNIQUE` (0001, named in 0007): one verdict per lease.
REVIEW_DECISIONS_ONE_PER_LEASE = "review_decisions_one_per_lease"
# review_decisions: `supersedes bigint UNIQUE` (0001, named in 0007): a decision is
# overturned at most once.
REVIEW_DECISIONS_ONE_OVERTURN_EACH = "review_decisions_one_overturn_each"
# exception_corrections: `PRIMARY KEY (workflow, source_record_id, version)` (0005, named
# in 0007): one correction per version of a record.
EXCEPTION_CORRECTIONS_ONE_PER_VERSION = "exception_corrections_one_per_version"
# exceptions: `CREATE UNIQUE INDEX exceptions_open_once` (0005): one open exception per
# workflow, record and reason.
EXCEPTIONS_OPEN_ONCE = "exceptions_open_once"
