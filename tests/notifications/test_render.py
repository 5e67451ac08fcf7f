"""A notice says what waits (the event in words; the item, its key, the exception), for whom
(the queue or role, the person holding it), since when (UTC, and how long ago) and links to
the console; a digest lists entries grouped by queue with a count. An entry holds no
payload field, so none can be rendered."""

from __future__ import annotations

import dataclasses
import html
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from server.domain.integrations.notification_kinds import NotificationEvent
from server.effects.notice import DIGEST_MAX_ENTRIES, EVENT_WORDS, SINCE_WORDS, ago
from server.effects.notify import NoticeEntry, console_link, render_notice
from server.effects.notify_bodies import (
    SLACK_MAX_BLOCKS,
    SLACK_SECTION_LIMIT,
    slack_body,
    teams_body,
)

NOW = datetime(2026, 12, 6, 20, 0, tzinfo=UTC)
PUBLIC = "https://casework.example.test"


def entry(**overrides: object) -> NoticeEntry:
    values: dict[str, object] = {
        "event": NotificationEvent.OVERDUE,
        "rule": "overdue-payments",
        "item_id": 42,
        "queue": "payments",
        "workflow": None,
        "waiting_for": "payments reviewers",
        "since": NOW - timedelta(hours=2, minutes=5),
        "link": console_link(PUBLIC, item_id=42, exception_id=None),
        "external_key": "ORD-7",
    }
    values.update(overrides)
    return NoticeEntry(**values)  # type: ignore[arg-type]


def test_an_entry_holds_no_payload_field() -> None:
    """What a notice may carry, listed: a new field is a decision to make here, not a
    payload value slipping into every message."""
    assert [field.name for field in dataclasses.fields(NoticeEntry)] == [
        "event",
        "rule",
        "item_id",
        "queue",
        "workflow",
        "waiting_for",
        "since",
        "link",
        "exception_id",
        "external_key",
        "assignee",
    ]


def test_one_entry_says_what_for_whom_since_when_and_links() -> None:
    notice = render_notice((entry(assignee="alice"),), now=NOW)

    assert notice.subject == "Casework: item 42 (key ORD-7) in queue payments is overdue"
    assert notice.text.splitlines() == [
        "Item 42 (key ORD-7) in queue payments is overdue.",
        "Waits for: payments reviewers (held by alice)",
        "Overdue since: 2026-12-06 17:55 UTC (2 h 5 min ago)",
        "Rule: overdue-payments",
        f"Open: {PUBLIC}/console/#/item/42",
    ]
    assert f"<a href='{PUBLIC}/console/#/item/42'>" in notice.html
    assert notice.entries == (entry(assignee="alice"),)


def test_an_exception_is_named_with_its_workflow_and_item() -> None:
    exception_id = "0b5d3c1e-7a53-4c55-9d5e-7d7b2d2c0a11"
    one = entry(
        event=NotificationEvent.NEEDS_APPROVAL,
        queue=None,
        workflow="invoices",
        waiting_for="invoices approvers",
        exception_id=exception_id,
        external_key="INV-9",
        link=console_link(PUBLIC, item_id=42, exception_id=exception_id),
    )
    notice = render_notice((one,), now=NOW)

    assert notice.subject == (
        f"Casework: exception {exception_id} of workflow invoices (item 42, key INV-9)"
        " needs an approval"
    )
    assert f"{PUBLIC}/console/#/exceptions/{exception_id}" in notice.text
    assert "Waiting since: 2026-12-06 17:55 UTC" in notice.text


@pytest.mark.parametrize("event", list(NotificationEvent))
def test_every_event_has_its_words(event: NotificationEvent) -> None:
    notice = render_notice((entry(event=event),), now=NOW)

    assert notice.subject.endswith(EVENT_WORDS[event])
    assert f"{SINCE_WORDS[event]}: 2026-12-06 17:55 UTC" in notice.text


def test_since_is_shown_in_utc_whatever_its_zone() -> None:
    paris = timezone(timedelta(hours=1))
    notice = render_notice((entry(since=datetime(2026, 12, 6, 19, 30, tzinfo=paris)),), now=NOW)

    assert "Overdue since: 2026-12-06 18:30 UTC (1 h 30 min ago)" in notice.text


@pytest.mark.parametrize(
    ("waited", "words"),
    [
        (timedelta(seconds=30), "just now"),
        (timedelta(minutes=1), "1 min ago"),
        (timedelta(minutes=59, seconds=59), "59 min ago"),
        (timedelta(hours=3), "3 h ago"),
        (timedelta(days=2), "2 d ago"),
        (timedelta(days=4, hours=3, minutes=20), "4 d 3 h ago"),
    ],
)
def test_how_long_ago(waited: timedelta, words: str) -> None:
    assert ago(NOW - waited, NOW) == words


def test_without_a_public_url_the_notice_says_there_is_no_link() -> None:
    assert console_link(None, item_id=42, exception_id=None) is None
    notice = render_notice((entry(link=None),), now=NOW)

    assert "Open: (no console address configured)" in notice.text
    assert "href" not in notice.html


def test_a_digest_groups_by_queue_with_counts_oldest_first() -> None:
    entries = (
        entry(item_id=1, since=NOW - timedelta(minutes=10), external_key=None),
        entry(item_id=2, queue="claims", since=NOW - timedelta(hours=1)),
        entry(item_id=3, since=NOW - timedelta(hours=5), event=NotificationEvent.UNCLAIMED),
        entry(
            item_id=4,
            queue=None,
            workflow="invoices",
            exception_id="e-4",
            event=NotificationEvent.APPLICATION_FAILED,
        ),
    )
    notice = render_notice(entries, now=NOW)

    assert notice.subject == "Casework: 4 waiting in 3 places"
    lines = notice.text.splitlines()
    headings = [line for line in lines if line.endswith(")") and not line.startswith(("-", " "))]
    assert headings == ["Queue claims (1)", "Queue payments (2)", "Workflow invoices (1)"]
    payments = lines[lines.index("Queue payments (2)") + 1 :]
    assert payments[0].startswith("- item 3 (key ORD-7) waits unclaimed, waits for payments")
    assert payments[2].startswith("- item 1 is overdue, waits for payments reviewers since")
    assert "- exception e-4 (item 4, key ORD-7) could not be applied" in notice.text
    assert notice.entries == entries
    assert notice.html.count("<li><a href=") == 4


def test_a_digest_in_one_queue_names_it() -> None:
    notice = render_notice((entry(item_id=1), entry(item_id=2)), now=NOW)

    assert notice.subject == "Casework: 2 waiting in 1 place (queue payments)"


def test_a_long_digest_is_cut_and_says_how_many_more() -> None:
    entries = tuple(entry(item_id=n) for n in range(DIGEST_MAX_ENTRIES + 30))
    notice = render_notice(entries, now=NOW)

    assert notice.text.count("\n- item ") == DIGEST_MAX_ENTRIES
    assert notice.text.endswith("... and 30 more: see the console.")
    assert f"Queue payments ({DIGEST_MAX_ENTRIES + 30})" in notice.text


def test_an_empty_notice_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one entry"):
        render_notice((), now=NOW)


def test_names_are_escaped_for_html_and_slack() -> None:
    hostile = "<b>ops & co</b>"
    notice = render_notice((entry(queue=hostile, waiting_for=hostile),), now=NOW)

    assert hostile not in notice.html
    assert html.escape(hostile) in notice.html
    assert hostile in notice.text
    slack = json.dumps(slack_body(notice)["blocks"][1:])
    assert "<b>" not in slack
    assert "&lt;b&gt;ops &amp; co&lt;/b&gt;" in slack


def test_a_busy_digest_fits_slacks_limits_and_links_each_line() -> None:
    entries = tuple(
        entry(
            item_id=n,
            queue=f"queue-{n % 70}",
            link=console_link(PUBLIC, item_id=n, exception_id=None),
        )
        for n in range(700)
    )
    notice = render_notice(entries, now=NOW)
    blocks = slack_body(notice)["blocks"]

    assert len(blocks) <= SLACK_MAX_BLOCKS
    sections = [block["text"]["text"] for block in blocks if block["type"] == "section"]
    assert all(len(text) <= SLACK_SECTION_LIMIT for text in sections)
    assert f"<{PUBLIC}/console/#/item/0|" in sections[0]
    assert "see the console" in sections[-1]


def test_a_teams_digest_lists_groups_with_links() -> None:
    notice = render_notice((entry(item_id=1), entry(item_id=2, queue="claims")), now=NOW)
    card = teams_body(notice)["attachments"][0]["content"]
    texts = [block["text"] for block in card["body"]]

    assert texts[0] == notice.subject
    assert "Queue claims (1)" in texts
    assert "Queue payments (1)" in texts
    assert any(f"]({PUBLIC}/console/#/item/42)" in text for text in texts)
    assert "actions" not in card


def test_a_subject_is_one_line_whatever_the_names_hold() -> None:
    notice = render_notice((entry(queue="pay\r\nBcc: someone@example.test"),), now=NOW)

    assert notice.subject == (
        "Casework: item 42 (key ORD-7) in queue pay Bcc: someone@example.test is overdue"
    )
