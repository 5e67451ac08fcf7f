"""The plain+notify path: the review queue's cycle as plain statements over asyncpg.

What a user writes against review_queue.sql's tables without functions: per cycle two
statements, each its own transaction, each sending its NOTIFY from inside (so the hint
goes out on commit, as Casework's do):

- the claim (plain_claim.sql): UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED
  LIMIT 1) RETURNING, with pg_notify over the returned row;
- the decision (plain_decide.sql): the fenced UPDATE and the INSERT of the decision row in
  one statement (one transaction), with pg_notify over the inserted row.

No PL/pgSQL, no JSON built by the database: the payload (the keys Casework's hints carry)
is the client's text with the row's ids appended. asyncpg prepares each statement once
per connection. The listener and the counts are the raw+notify path's (peer_raw.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg
import benchlib
import peer_raw

# $1 queue, $2 actor, $3 channel, $4 the payload's head (the item's id is appended).
CLAIM = Path(__file__).with_name("plain_claim.sql").read_text()
# $1 item, $2 lease token, $3 verdict, $4 actor, $5 channel, $6 the payload's head (the
# item's and the decision's ids are appended).
DECIDE = Path(__file__).with_name("plain_decide.sql").read_text()


def payload_heads(queue: str) -> tuple[str, str]:
    """The claim's and the decision's payload up to the ids the database appends:
    Casework's keys (k, q, from, i, then d)."""
    quoted = json.dumps(queue)
    return (
        f'{{"k":"claimed","q":{quoted},"from":{quoted},"i":',
        f'{{"k":"decided","q":{quoted},"from":{quoted},"i":',
    )


def plain_worker(pool: asyncpg.Pool) -> benchlib.Worker:
    claimed_head, decided_head = payload_heads(benchlib.QUEUE)

    async def work(index: int, tickets: benchlib.Tickets | None, count: int) -> int:
        actor = peer_raw.reviewer_name(index)
        done = 0
        while tickets.take() if tickets else done < count:
            claim = await pool.fetchrow(
                CLAIM, benchlib.QUEUE, actor, peer_raw.CHANNEL, claimed_head
            )
            if claim is None:
                raise RuntimeError("claim found nothing; is --items large enough?")
            decided = await pool.fetchrow(
                DECIDE,
                claim["id"],
                claim["lease_token"],
                peer_raw.VERDICT,
                actor,
                peer_raw.CHANNEL,
                decided_head,
            )
            if decided is None:
                raise RuntimeError(f"decision on item {claim['id']} was refused")
            done += 1
        return done

    return work


async def measure(
    server: str, database: str, concurrency: int, cycles: int, warmup: int
) -> tuple[benchlib.Measurement, int | None]:
    """One cell, and the number of hints the listener received."""
    return await peer_raw.measure(
        server, database, concurrency, cycles, warmup, notify=True, worker_for=plain_worker
    )
