"""What the availability harnesses share: Debian's PostgreSQL 15 binaries, and running server
processes as the `postgres` OS user (PostgreSQL refuses to run as root) in directories that
user owns under /tmp."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

PG_BIN = Path(os.environ.get("CASEWORK_PG_BIN", "/usr/lib/postgresql/15/bin"))
OS_USER = "postgres"


def missing(*programs: str) -> str | None:
    """Why these programs cannot run here (a sentence), or None when they can."""
    absent = [name for name in programs if shutil.which(name) is None]
    if not (PG_BIN / "postgres").exists():
        absent.append(str(PG_BIN / "postgres"))
    if absent:
        return f"not installed: {', '.join(absent)} (Debian: patroni etcd-server postgresql-15)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(OS_USER)
        except KeyError:
            return f"running as root and there is no {OS_USER!r} OS user to run PostgreSQL as"
    return None


def require(*programs: str) -> None:
    """Skips the test when the programs are missing; fails it under CI, which installs them."""
    reason = missing(*programs)
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(reason + "; .ci/run installs them (CI never skips these tests)")
    pytest.skip(reason)


def _os_user() -> pwd.struct_passwd | None:
    """The user to run server processes as: `postgres` when this process is root."""
    return pwd.getpwnam(OS_USER) if os.geteuid() == 0 else None


def as_server_user(env: dict[str, str] | None = None) -> dict[str, Any]:
    """subprocess.Popen keyword arguments that run the command as the server user, in a
    session of its own (Ctrl-C at a terminal reaches the harness, which stops it in order)."""
    environment = dict(env if env is not None else os.environ)
    kwargs: dict[str, Any] = {"start_new_session": True, "env": environment}
    user = _os_user()
    if user is not None:
        kwargs.update(user=user.pw_uid, group=user.pw_gid, extra_groups=[])
        environment["HOME"] = user.pw_dir
        environment["USER"] = environment["LOGNAME"] = user.pw_name
    return kwargs


def owned_directory(prefix: str) -> Path:
    """A new directory under /tmp that the server user owns (mode 0700)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    user = _os_user()
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)
    return path


def make_owned(path: Path) -> Path:
    """Creates `path` (a directory, mode 0700) owned by the server user."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    user = _os_user()
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)
    return path


def write_owned(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    user = _os_user()
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)
    return path


def run_as_server_user(*command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """A short command (pg_ctl, say) as the server user; raises with its output on failure."""
    kwargs = as_server_user()
    kwargs.pop("start_new_session")
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False, cwd="/tmp", **kwargs
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} exited {result.returncode}: {result.stdout}{result.stderr}"
        )
    return result


def postmaster_pid(data_dir: Path) -> int | None:
    """The pid in the data directory's postmaster.pid, if there is one."""
    try:
        first = (data_dir / "postmaster.pid").read_text().splitlines()[0]
    except (FileNotFoundError, IndexError):
        return None
    return int(first)


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) is not alive.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"
