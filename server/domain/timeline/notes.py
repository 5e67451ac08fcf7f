"""Notes: what anyone who can see an item writes into its timeline. Append-only, like the
rest of it; a note needs no lease. On an item under a privacy policy the body is stored
sealed under the subject's data key (server/domain/privacy/records.py), never as text."""

from __future__ import annotations

from server.domain.failures import InvalidInput, NotFound
from server.domain.model import Principal
from server.domain.parsing import parse_id
from server.domain.privacy.keys import Keyring
from server.domain.privacy.records import add_sealed_note
from server.domain.step_up import provenance
from server.domain.text import check_text
from server.domain.timeline.events import TimelineEvent
from server.store import sql
from server.store.database import Database


async def add_note(
    db: Database, principal: Principal, item_id: str, body: str, keyring: Keyring | None = None
) -> TimelineEvent | NotFound | InvalidInput:
    """Every role may note an item in a queue its token covers; any other item answers as
    one that does not exist. `keyring`: where the data key of a policy item's subject comes
    from (a note on such an item cannot be written without it)."""
    parsed = parse_id(item_id, "itemId")
    if isinstance(parsed, InvalidInput):
        return parsed
    if problem := check_text(body, "body", required=True):
        return problem
    row = await db.fetchrow(
        sql.timeline.ITEM_NOTE_ADD,
        item_id=parsed,
        queue_scope=principal.queue_scope(),
        **principal.actor(),
        **provenance(principal),
        body=body,
    )
    if row is not None:
        return TimelineEvent.from_row(row)
    # Refused by the fence, or an item whose notes are sealed (item_note_add never stores
    # their text): try the sealed way.
    if keyring is not None:
        sealed = await add_sealed_note(db, keyring, principal, parsed, body)
        if sealed is not None:
            return sealed
    # The fence refused: say why, from a read (this path only).
    found = await db.fetch(sql.items.ITEMS_GET_BY_IDS, ids=[parsed])
    if found and keyring is None and found[0]["policy_version"] is not None:
        raise RuntimeError("a note on an item under a privacy policy is sealed: pass the keyring")
    if found and principal.works_in(found[0]["queue"]) and found[0]["kind"] == "exception":
        return InvalidInput(
            f"item {parsed} stands for an exception: its history is the exception's events",
            "itemId",
        )
    return NotFound("item", str(parsed))
