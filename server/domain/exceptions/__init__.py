"""Exceptions: automated work that stalled and needs a person, owned until it is closed.

- `records`: the record, its states and the actions each state allows.
- `rules`: what may go into a record (references and facts, never secrets).
- `actions`: raise, attach evidence, correct, approve, reject, close, reopen.
- `refusals`: why an action was refused, read back after a fence said no.
- `reads`: pages, events and the event stream.
- `workflows`: the catalogue of workflows and their reasons.
- `redrives` and `redrive_delivery`: versioned redrive of the owning system's step.
- `overdue`: the escalation the review loop's claim triggers.
"""
