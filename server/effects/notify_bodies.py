"""The bodies Slack's and Teams' incoming webhooks render well, one POST each."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from server.effects.notice import (
    DIGEST_MAX_ENTRIES,
    EVENT_WORDS,
    SINCE_WORDS,
    Notice,
    NoticeEntry,
    capitalised,
    digest_line,
    grouped,
    when,
    who,
    work_name,
)

# Slack: a section's text holds at most 3000 characters, a message at most 50 blocks.
SLACK_SECTION_LIMIT = 3000
SLACK_MAX_BLOCKS = 50


def slack_escape(text: str) -> str:
    """Slack's mrkdwn reads &, < and > as markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack_line(entry: NoticeEntry, text: str) -> str:
    escaped = slack_escape(text)
    return f"<{entry.link}|{escaped}>" if entry.link else escaped


def slack_body(notice: Notice) -> dict[str, Any]:
    """An incoming-webhook message: `text` (the notification's and any old client's
    fallback) and blocks: a header, a section per entry or group, a button to the console."""
    now = notice.rendered_at or datetime.now(UTC)
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": notice.subject[:150]}}
    ]
    if len(notice.entries) == 1:
        entry = notice.entries[0]
        headline = f"{work_name(entry)} {EVENT_WORDS[entry.event]}"
        fields = [
            f"*Waits for*\n{slack_escape(who(entry))}",
            f"*{SINCE_WORDS[entry.event]}*\n{slack_escape(when(entry, now))}",
            f"*Rule*\n{slack_escape(entry.rule)}",
        ]
        blocks.append(
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": slack_escape(capitalised(headline))},
                "fields": [{"type": "mrkdwn", "text": field} for field in fields],
            }
        )
        if entry.link:
            blocks.append(
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "text": {"type": "plain_text", "text": "Open in Casework"},
                            "url": entry.link,
                        }
                    ],
                }
            )
    else:
        for name, members in grouped(notice.entries):
            if len(blocks) == SLACK_MAX_BLOCKS - 1:
                blocks.append(_slack_text("_More waits than one message holds: see the console._"))
                break
            lines = [f"*{slack_escape(capitalised(name))}* ({len(members)})"]
            for entry in members:
                line = "• " + _slack_line(entry, digest_line(entry, now))
                if sum(len(part) + 1 for part in lines) + len(line) > SLACK_SECTION_LIMIT - 40:
                    lines.append(f"_... and {len(members) - len(lines) + 1} more_")
                    break
                lines.append(line)
            blocks.append(_slack_text("\n".join(lines)))
    return {"text": notice.text, "blocks": blocks}


def _slack_text(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def teams_body(notice: Notice) -> dict[str, Any]:
    """A Teams incoming webhook (a Workflows "when a webhook request is received" flow, or
    a connector): a message carrying one Adaptive Card, with a fact set per entry or group
    and a button to the console."""
    now = notice.rendered_at or datetime.now(UTC)
    body: list[dict[str, Any]] = [
        {
            "type": "TextBlock",
            "text": notice.subject,
            "weight": "Bolder",
            "size": "Medium",
            "wrap": True,
        }
    ]
    actions: list[dict[str, Any]] = []
    if len(notice.entries) == 1:
        entry = notice.entries[0]
        body.append(
            {
                "type": "TextBlock",
                "wrap": True,
                "text": capitalised(f"{work_name(entry)} {EVENT_WORDS[entry.event]}."),
            }
        )
        body.append(
            {
                "type": "FactSet",
                "facts": [
                    {"title": "Waits for", "value": who(entry)},
                    {"title": SINCE_WORDS[entry.event], "value": when(entry, now)},
                    {"title": "Rule", "value": entry.rule},
                ],
            }
        )
        if entry.link:
            actions.append(
                {"type": "Action.OpenUrl", "title": "Open in Casework", "url": entry.link}
            )
    else:
        shown = 0
        for name, members in grouped(notice.entries):
            body.append(
                {
                    "type": "TextBlock",
                    "weight": "Bolder",
                    "wrap": True,
                    "spacing": "Medium",
                    "text": f"{capitalised(name)} ({len(members)})",
                }
            )
            lines = []
            for entry in members[: max(0, DIGEST_MAX_ENTRIES - shown)]:
                line = digest_line(entry, now)
                lines.append(f"- [{line}]({entry.link})" if entry.link else f"- {line}")
            shown += len(lines)
            if lines:
                body.append({"type": "TextBlock", "wrap": True, "text": "\n".join(lines)})
        if shown < len(notice.entries):
            body.append(
                {
                    "type": "TextBlock",
                    "wrap": True,
                    "text": f"... and {len(notice.entries) - shown} more: see the console.",
                }
            )
    card: dict[str, Any] = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
    }
    if actions:
        card["actions"] = actions
    return {
        "type": "message",
        "summary": notice.subject,
        "text": notice.text,
        "attachments": [
            {
                "contentType": "application/vnd.microsoft.card.adaptive",
                "contentUrl": None,
                "content": card,
            }
        ],
    }
