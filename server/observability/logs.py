"""Log lines: one format for the whole process, set up with the standard dictConfig.

Every line has a time, a level and a logger; lines a request causes carry its request id,
and the worker's lines about a decision carry the decision id (see context.py).

    CASEWORK_LOG_FORMAT=text|json   text for people, json for a log pipeline (one object
                                    per line, keys time, level, logger, message and, when
                                    known, request_id, decision_id, and the fields below)
    CASEWORK_LOG_LEVEL=INFO         the level of Casework's own loggers and uvicorn's

Other libraries log at WARNING and above. Under `casework serve --workers N` (N > 1) the
processes share one stderr, so every line also carries the pid of the process that wrote it
(`pid=…` in text, a `pid` key in JSON). A line may carry structured fields in
`extra={"fields": {...}}`: JSON lines include them as keys, text lines as they are written
in the message (the access line, for one, says them in words too).
"""

from __future__ import annotations

import enum
import json
import logging
import logging.config
from datetime import UTC, datetime
from typing import Any

from server.observability.context import DECISION_ID, REQUEST_ID


class LogFormat(enum.StrEnum):
    TEXT = "text"
    JSON = "json"


# The loggers that follow CASEWORK_LOG_LEVEL; everything else logs from WARNING up.
OWN_LOGGERS = ("casework", "uvicorn", "uvicorn.error")


class ContextFilter(logging.Filter):
    """Puts the request id and the decision id of the running context on every record
    (unless the call gave them), so formatters need not look them up."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = REQUEST_ID.get()
        if getattr(record, "decision_id", None) is None:
            record.decision_id = DECISION_ID.get()
        return True


def _time(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


class TextFormatter(logging.Formatter):
    """`2026-01-31T12:00:00.123+00:00 INFO casework.worker [request=… decision=12] text`."""

    def __init__(self, *, with_pid: bool = False) -> None:
        super().__init__()
        self._with_pid = with_pid

    def format(self, record: logging.LogRecord) -> str:
        ids = [
            f"{name}={value}"
            for name, value in (
                ("pid", record.process if self._with_pid else None),
                ("request", getattr(record, "request_id", None)),
                ("decision", getattr(record, "decision_id", None)),
            )
            if value is not None
        ]
        line = f"{_time(record)} {record.levelname} {record.name} "
        if ids:
            line += f"[{' '.join(ids)}] "
        line += record.getMessage()
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line.

    Written here rather than taken from python-json-logger: the object is five keys and
    the `fields` of a call, which is this class; the library's strengths (renaming keys,
    picking every LogRecord attribute, custom encoders) would be options to configure
    away, and one more dependency to keep current.
    """

    def __init__(self, *, with_pid: bool = False) -> None:
        super().__init__()
        self._with_pid = with_pid

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _time(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if self._with_pid:
            line["pid"] = record.process
        for key in ("request_id", "decision_id"):
            value = getattr(record, key, None)
            if value is not None:
                line[key] = value
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update({key: value for key, value in fields.items() if key not in line})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def logging_config(log_format: LogFormat, level: str, *, with_pid: bool = False) -> dict[str, Any]:
    """The dictConfig of a Casework process: one handler on stderr, on the root logger.

    with_pid: each line names its process (several processes write to one stderr)."""
    formatter = TextFormatter if log_format is LogFormat.TEXT else JsonFormatter
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": ContextFilter}},
        "formatters": {"casework": {"()": formatter, "with_pid": with_pid}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "casework",
                "filters": ["context"],
            }
        },
        "root": {"level": "WARNING", "handlers": ["stderr"]},
        "loggers": {name: {"level": level} for name in OWN_LOGGERS},
    }


def configure_logging(log_format: LogFormat, level: str, *, with_pid: bool = False) -> None:
    logging.config.dictConfig(logging_config(log_format, level, with_pid=with_pid))
