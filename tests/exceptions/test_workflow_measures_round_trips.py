"""A dashboard of every workflow's measures costs the same SQL round trips for 2 workflows
as for 20: the DataLoaders batch each figure group over all of them."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from server.store.database import Database
from server.store.queries import Query
from tests.api.conftest import GraphQL
from tests.exceptions.conftest import People

DASHBOARD = """
{
  workflows {
    name reasons { code }
    measures {
      open unclaimedNew unclaimedOverdue raised arrivalsPerDay
      ageByReason { reasonCode consequence open oldestAgeSeconds p50AgeSeconds }
      repeats { reasonCode raised recurrences sourcesWithRepeats repeatShare }
      redrives { requested succeeded failed successRate }
      closures { corrected rejected duplicate obsolete total }
      reopened reopenRate
      approvalSeconds { samples p50 p99 }
      handlingSeconds { samples p50 p99 }
      approverHandlingSeconds { samples p50 }
      capacity(availableReviewerMinutesPerDay: 240) { demandMinutesPerDay enough }
      approvalCapacity { demandMinutesPerDay enough }
    }
  }
}
"""

# Workflows numbered from `first`, each with its own team and approval queue, a reason, and
# an exception raised twice (one recurrence) and another raised once.
WORKFLOWS = """
WITH numbers AS (SELECT n FROM generate_series($1::int, $2::int) AS n),
teams AS (
    INSERT INTO queues (name, holder_role)
    SELECT 'wf' || n || '-' || q.suffix, q.holder
    FROM numbers, (VALUES ('ops', 'reviewer'), ('leads', 'reviewer'),
                          ('approvals', 'approver')) AS q (suffix, holder)
),
flows AS (
    INSERT INTO workflows (name, approval_queue)
    SELECT 'wf' || n, 'wf' || n || '-approvals' FROM numbers
)
INSERT INTO exception_reasons (workflow, code, label, owner_role, escalation_role,
                               allowed_actions, due_low_seconds, due_medium_seconds,
                               due_high_seconds, due_critical_seconds)
SELECT 'wf' || n, 'entity_mismatch', 'Entity mismatch', 'wf' || n || '-ops',
       'wf' || n || '-leads', ARRAY['close_exception'], 259200, 86400, 14400, 3600
FROM numbers
"""

RAISES = """
SELECT casework_raise_exception('wf' || n, 'REC-' || r, 'entity_mismatch', 'generated',
                                NULL, '{}', '{}', '{}', 'low', 'erp', 'integration', NULL)
FROM generate_series($1::int, $2::int) AS n, (VALUES (1), (1), (2)) AS raises (r)
"""


async def add_workflows(owner: asyncpg.Connection, first: int, last: int) -> None:
    await owner.execute(WORKFLOWS, first, last)
    await owner.execute(RAISES, first, last)


async def round_trips(gql: GraphQL, token: str, monkeypatch: pytest.MonkeyPatch) -> int:
    calls: list[str] = []
    original_fetch, original_fetchrow = Database.fetch, Database.fetchrow

    async def counting_fetch(self: Database, query: Query[...], **kwargs: Any) -> Any:
        calls.append(query.name)
        return await original_fetch(self, query, **kwargs)

    async def counting_fetchrow(self: Database, query: Query[...], **kwargs: Any) -> Any:
        calls.append(query.name)
        return await original_fetchrow(self, query, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(Database, "fetch", counting_fetch)
        patch.setattr(Database, "fetchrow", counting_fetchrow)
        body = await gql(token, DASHBOARD)
    assert "errors" not in body, body
    return len(calls)


async def test_many_workflows_cost_the_round_trips_of_a_few(
    gql: GraphQL, people: People, owner_conn: asyncpg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    # apply_decision, the migration's own workflow, is listed too: 1 + 1 and 1 + 19.
    await add_workflows(owner_conn, 1, 1)
    # The first request of a token also looks the token up; later ones find it cached.
    await round_trips(gql, people.manager, monkeypatch)
    few = await round_trips(gql, people.manager, monkeypatch)
    await add_workflows(owner_conn, 2, 19)
    many = await round_trips(gql, people.manager, monkeypatch)

    body = await gql(people.manager, DASHBOARD)
    listed = body["data"]["workflows"]
    assert len(listed) == 20
    wf7 = next(w for w in listed if w["name"] == "wf7")["measures"]
    # The figures are each workflow's own, not the batch's.
    assert (wf7["open"], wf7["raised"]) == (2, 2)
    assert wf7["repeats"] == [
        {
            "reasonCode": "entity_mismatch",
            "raised": 2,
            "recurrences": 1,
            "sourcesWithRepeats": 1,
            "repeatShare": pytest.approx(1 / 3),
        }
    ]

    assert few == many
    # The workflows, their reasons (once: the scope check's read serves `reasons`), and one
    # statement per figure group: now, ages, activity, repeats.
    assert many == 6
