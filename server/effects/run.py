"""One attempt at an effect; returns the note to record with the application."""

from __future__ import annotations

from server.domain.model import EffectKind
from server.domain.review.apply import DueApplication
from server.effects.handlers import load_handler
from server.effects.http import Session
from server.effects.webhook import post_webhook

NO_EFFECT = "no effect"


async def perform(client: Session, due: DueApplication) -> str:
    if due.effect_kind is EffectKind.WEBHOOK:
        return await post_webhook(client, due)
    if due.effect_kind is EffectKind.HANDLER:
        assert due.effect_target is not None
        note = await load_handler(due.effect_target)(due.payload())
        return note or f"handler {due.effect_target} done"
    return NO_EFFECT
