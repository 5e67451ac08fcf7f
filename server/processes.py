"""`casework serve --workers N`: N processes serving one listening socket.

The parent binds the port, migrates, seeds and starts (or joins) the embedded PostgreSQL
once; then uvicorn's own supervisor (uvicorn.supervisors.Multiprocess) starts N spawned
processes that accept on that socket. Each builds the application from `ServedApp`, so
each has its own pool, its own listener connection, its own expiry timer and, unless
--no-worker, its own apply worker; they reach the database through the DSN the parent
resolved and never start a server of their own.

What the supervisor does, and so what serve does (uvicorn 0.30 and later):

- SIGTERM or SIGINT to the parent: it sends SIGTERM to every process and waits for each;
  a process shuts down as one process does (connections closed, lifespan ended: the apply
  worker finishes its attempts in flight, the pool closes). Then the parent returns and
  the embedded PostgreSQL, if it started it, stops with it.
- A process that dies, or does not answer the parent's ping within 5 s, is killed and
  replaced, unless it exited with uvicorn's startup-failure status (its lifespan failed:
  the database refused it, say): then every other process is stopped too and serve exits 1,
  since a replacement would fail the same way.
- SIGHUP replaces the processes one by one; SIGTTIN and SIGTTOU add or remove one.

Metrics: every process keeps its counters in files of one directory that the parent
creates empty and deletes at exit (prometheus-client's multiprocess mode, chosen by
PROMETHEUS_MULTIPROC_DIR before the first metric exists); /metrics on any process serves
their merge. A replaced process's gauges leave the merge here (mark_process_dead), since
uvicorn's supervisor does not know about them; its counters stay, so sums never go down.

Written on uvicorn's supervisor rather than as our own: it already passes the socket to
spawned processes, pings them, replaces dead ones and forwards signals.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.multiprocess import mark_process_dead
from starlette.applications import Starlette
from uvicorn import Config
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import Multiprocess

# prometheus-client reads it when its first metric is built: in a spawned process that is
# after the environment it inherits is in place.
METRICS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


@dataclass(frozen=True)
class ServedApp:
    """The application factory each serving process calls (pickled to it by the spawn)."""

    app_dsn: str
    dev: bool
    run_worker: bool
    metrics_dir: Path

    def __call__(self) -> Starlette:
        from prometheus_client import values

        from server.app import create_app
        from server.cli.serve import configure_observability
        from server.config import Settings

        settings = Settings.from_env()
        configure_observability(settings, with_pid=True)
        # dictConfig resets the loggers below "uvicorn", undoing uvicorn's access_log=False
        # (one process configures logging before uvicorn does): the access line is ours.
        access = logging.getLogger("uvicorn.access")
        access.handlers, access.propagate = [], False
        if not getattr(values.ValueClass, "_multiprocess", False):
            # Counters would stay in this process, and /metrics would read none of them.
            raise RuntimeError(
                f"prometheus-client was imported before {METRICS_DIR_VARIABLE} was set"
            )
        return create_app(
            self.app_dsn,
            dev=self.dev,
            settings=settings,
            run_worker=self.run_worker,
            merged_metrics_dir=self.metrics_dir,
        )


class Supervisor(Multiprocess):
    """uvicorn's supervisor; a process it replaces or retires leaves the gauges' merge."""

    def __init__(self, config: Config, sockets: list[socket.socket], metrics_dir: Path) -> None:
        super().__init__(config, sockets)
        self._metrics_dir = metrics_dir

    def keep_subprocess_alive(self) -> None:
        with self._forgetting_the_gone():
            super().keep_subprocess_alive()

    def handle_signals(self) -> None:
        # SIGHUP and SIGTTOU retire processes too.
        with self._forgetting_the_gone():
            super().handle_signals()

    @contextlib.contextmanager
    def _forgetting_the_gone(self) -> Iterator[None]:
        before = self._pids()
        try:
            yield
        finally:
            for pid in before - self._pids():
                mark_process_dead(pid, str(self._metrics_dir))  # type: ignore[no-untyped-call]

    def _pids(self) -> set[int]:
        return {process.pid for process in self.processes if process.pid is not None}

    @property
    def failed_to_start(self) -> bool:
        return any(process.exitcode == STARTUP_FAILURE for process in self.processes)


def serve_processes(config: Config, listening: socket.socket, app: ServedApp) -> bool:
    """Runs config.workers processes on `listening` until a signal or a failed start;
    False when a process could not start."""
    supervisor = Supervisor(config, [listening], app.metrics_dir)
    supervisor.run()
    return not supervisor.failed_to_start


def metrics_directory() -> tempfile.TemporaryDirectory[str]:
    """An empty directory for the processes' metric files, named in the environment the
    processes inherit; files left by an earlier run would be counted again."""
    directory = tempfile.TemporaryDirectory(prefix="casework-metrics-")
    os.environ[METRICS_DIR_VARIABLE] = directory.name
    return directory
