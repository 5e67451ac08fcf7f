"""A notice: what waits, for whom, since when, and a link to the console, rendered as a
subject, plain text and HTML. It is built from an outbox event's data and the rule, never
from an item's payload: an entry has no field for one, so no value a privacy policy marks
personal can reach a message."""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from server.domain.integrations.notification_kinds import NotificationEvent


@dataclass(frozen=True)
class NoticeEntry:
    """One piece of waiting work."""

    event: NotificationEvent
    rule: str
    item_id: int
    # Who it waits for: the queue (or workflow) and, where one is known, the person.
    queue: str | None
    workflow: str | None
    waiting_for: str
    # Since when it waits (the due time passed, the escalation, the enqueue, the request).
    since: datetime
    # The console page of the item or exception; None when CASEWORK_PUBLIC_URL is unset.
    link: str | None
    exception_id: str | None = None
    external_key: str | None = None
    # The person it waits on, when one holds it (a lease, an assignment, an approver).
    assignee: str | None = None


@dataclass(frozen=True)
class Notice:
    """One message to one channel: a single entry, or a digest of several."""

    subject: str
    text: str
    entries: tuple[NoticeEntry, ...]
    # The same as `text`, as an HTML fragment (the e-mail's second part).
    html: str = ""
    # The moment "how long ago" was counted from.
    rendered_at: datetime | None = None


def console_link(public_url: str | None, *, item_id: int, exception_id: str | None) -> str | None:
    """The console page of an exception, or else of the item (the console's hash routes)."""
    if not public_url:
        return None
    if exception_id is not None:
        return f"{public_url}/console/#/exceptions/{exception_id}"
    return f"{public_url}/console/#/item/{item_id}"


# --- rendering ---

# What happened, as the end of a sentence whose subject is the work ("item 42 in payments").
EVENT_WORDS: dict[NotificationEvent, str] = {
    NotificationEvent.OVERDUE: "is overdue",
    NotificationEvent.ESCALATED: "was escalated",
    NotificationEvent.UNCLAIMED: "waits unclaimed",
    NotificationEvent.NEEDS_APPROVAL: "needs an approval",
    NotificationEvent.APPLICATION_FAILED: "could not be applied",
}
# The moment `since` is, in words ("overdue since ...").
SINCE_WORDS: dict[NotificationEvent, str] = {
    NotificationEvent.OVERDUE: "Overdue since",
    NotificationEvent.ESCALATED: "Escalated at",
    NotificationEvent.UNCLAIMED: "Unclaimed since",
    NotificationEvent.NEEDS_APPROVAL: "Waiting since",
    NotificationEvent.APPLICATION_FAILED: "Failed at",
}
# A digest's message shows at most this many entries; the rest are counted.
DIGEST_MAX_ENTRIES = 200


def work_name(entry: NoticeEntry) -> str:
    """The work in words: `exception 9f2c... of workflow invoices (item 42, key INV-7)` or
    `item 42 (key ORD-7) in queue payments`."""
    details = [f"key {entry.external_key}"] if entry.external_key else []
    if entry.exception_id is not None:
        details.insert(0, f"item {entry.item_id}")
        where = f" of workflow {entry.workflow}" if entry.workflow else ""
        return f"exception {entry.exception_id}{where} ({', '.join(details)})"
    where = f" in queue {entry.queue}" if entry.queue else ""
    key = f" ({details[0]})" if details else ""
    return f"item {entry.item_id}{key}{where}"


def group_name(entry: NoticeEntry) -> str:
    """What a digest groups by: the queue, else the workflow."""
    if entry.queue:
        return f"queue {entry.queue}"
    if entry.workflow:
        return f"workflow {entry.workflow}"
    return "no queue"


def who(entry: NoticeEntry) -> str:
    return entry.waiting_for + (f" (held by {entry.assignee})" if entry.assignee else "")


def utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def ago(since: datetime, now: datetime) -> str:
    """How long ago, in words: `3 min ago`, `2 h 5 min ago`, `4 d 3 h ago`; `just now`
    under a minute."""
    minutes = int((now - since).total_seconds() // 60)
    if minutes < 1:
        return "just now"
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h ago" if hours else f"{days} d ago"
    if hours:
        return f"{hours} h {minutes} min ago" if minutes else f"{hours} h ago"
    return f"{minutes} min ago"


def when(entry: NoticeEntry, now: datetime) -> str:
    return f"{utc_text(entry.since)} ({ago(entry.since, now)})"


def grouped(entries: Iterable[NoticeEntry]) -> list[tuple[str, list[NoticeEntry]]]:
    """Entries by group name (sorted), each group oldest first."""
    groups: dict[str, list[NoticeEntry]] = {}
    for entry in entries:
        groups.setdefault(group_name(entry), []).append(entry)
    return [
        (name, sorted(groups[name], key=lambda entry: (entry.since, entry.item_id)))
        for name in sorted(groups)
    ]


def render_notice(entries: tuple[NoticeEntry, ...], *, now: datetime | None = None) -> Notice:
    """One entry is a message of its own; several are a digest, grouped by queue (or
    workflow) with a count each. Only the entries' own fields are shown."""
    if not entries:
        raise ValueError("a notice needs at least one entry")
    moment = now or datetime.now(UTC)
    if len(entries) == 1:
        return _render_one(entries[0], moment)
    return _render_digest(entries, moment)


def _render_one(entry: NoticeEntry, now: datetime) -> Notice:
    headline = f"{work_name(entry)} {EVENT_WORDS[entry.event]}"
    fields = [
        ("Waits for", who(entry)),
        (SINCE_WORDS[entry.event], when(entry, now)),
        ("Rule", entry.rule),
    ]
    lines = [capitalised(headline) + "."]
    lines += [f"{label}: {value}" for label, value in fields]
    lines.append(f"Open: {entry.link}" if entry.link else "Open: (no console address configured)")
    rows = "".join(
        f"<tr><th align='left'>{html.escape(label)}</th><td>{html.escape(value)}</td></tr>"
        for label, value in fields
    )
    body = f"<p>{html.escape(capitalised(headline))}.</p><table>{rows}</table>" + (
        f"<p><a href='{html.escape(entry.link, quote=True)}'>Open in Casework</a></p>"
        if entry.link
        else ""
    )
    return Notice(
        subject=one_line(f"Casework: {headline}"),
        text="\n".join(lines),
        entries=(entry,),
        html=body,
        rendered_at=now,
    )


def digest_line(entry: NoticeEntry, now: datetime) -> str:
    """One entry of a digest, without the group it is listed under."""
    what = work_name(entry)
    # The group heading names the queue (or workflow): the line does not repeat it.
    if entry.queue:
        what = what.removesuffix(f" in queue {entry.queue}")
    elif entry.workflow:
        what = what.replace(f" of workflow {entry.workflow}", "", 1)
    return f"{what} {EVENT_WORDS[entry.event]}, waits for {who(entry)} since {when(entry, now)}"


def _render_digest(entries: tuple[NoticeEntry, ...], now: datetime) -> Notice:
    groups = grouped(entries)
    subject = (
        f"Casework: {len(entries)} waiting in {len(groups)} "
        + ("place" if len(groups) == 1 else "places")
        + (f" ({groups[0][0]})" if len(groups) == 1 else "")
    )
    text = [f"{len(entries)} waiting, as of {utc_text(now)}."]
    parts = [f"<p>{len(entries)} waiting, as of {html.escape(utc_text(now))}.</p>"]
    shown = 0
    for name, members in groups:
        text += ["", f"{capitalised(name)} ({len(members)})"]
        items = []
        for entry in members:
            if shown == DIGEST_MAX_ENTRIES:
                break
            shown += 1
            line = digest_line(entry, now)
            text.append(f"- {line}" + (f"\n  {entry.link}" if entry.link else ""))
            escaped = html.escape(line)
            items.append(
                f"<li><a href='{html.escape(entry.link, quote=True)}'>{escaped}</a></li>"
                if entry.link
                else f"<li>{escaped}</li>"
            )
        parts.append(
            f"<h3>{html.escape(capitalised(name))} ({len(members)})</h3><ul>{''.join(items)}</ul>"
        )
    if shown < len(entries):
        more = f"... and {len(entries) - shown} more: see the console."
        text += ["", more]
        parts.append(f"<p>{html.escape(more)}</p>")
    return Notice(
        subject=one_line(subject),
        text="\n".join(text),
        entries=entries,
        html="".join(parts),
        rendered_at=now,
    )


def one_line(text: str) -> str:
    """A subject is one line (an e-mail header cannot hold a line break), whatever a queue's
    or rule's name holds."""
    return " ".join(text.split())


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]
