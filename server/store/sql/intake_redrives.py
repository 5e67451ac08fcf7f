"""The statements of db/queries/intake_redrives.sql, as symbols.

Generated from db/queries/intake_redrives.sql by `python -m server.store.sqlgen`: do not edit.
"""

from __future__ import annotations

from server.store.queries import Query

# db/queries/intake_redrives.sql:6
INTAKE_REDRIVES_CLAIM = Query("intake_redrives_claim", lambda *, sources, batch_size: None)
"""Takes up to :batch_size due broker redrives for one attempt each, for an intake whose
sources are :sources: those whose exception's newest intake message (by received_at)
came from one of them, with that message (its source, origin, body and headers) and the
approved correction's changes. Also those whose exception has no intake message at all
(raised through the API, not by an intake): there is nothing to publish, and the caller
fails them to a person at once (source NULL). The apply worker never takes these
(redrive_deliveries_claim takes webhook redrives only), nor does an intake whose sources
do not include the message's.
"""
