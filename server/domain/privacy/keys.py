"""Envelope encryption's keys: a data key per subject, wrapped by a key-encryption key (KEK).

The database holds only wrapped data keys; the KEK stays with a `KeyProvider`: the local key
file by default (`CASEWORK_KEY_FILE`), or a KMS or Vault behind the same three methods.
Rotation wraps every data key again under the provider's active KEK; the data is untouched.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from server.store import sql
from server.store.database import Database

DATA_KEY_BYTES = 32
NONCE_BYTES = 12
# Unwrapped data keys a process keeps, so that reading a page of items unwraps each subject's
# key once. An erasure evicts its subject here; another process's copy is useless once the
# ciphertexts are cleared, which happens in the same transaction as the shredding.
CACHED_DATA_KEYS = 4096


class KeyError_(Exception):
    """A key file or provider that cannot work: the operator's to fix, said in one line."""


class UnwrapFailed(Exception):
    """A wrapped data key that the named KEK does not open: other bytes, or another KEK.
    Every provider raises this, whatever its own library raises."""


class KeyProvider(Protocol):
    """Wraps and unwraps data keys under a key-encryption key the database never sees."""

    @property
    def active_kek_id(self) -> str: ...

    async def wrap(self, subject_ref: str, data_key: bytes) -> tuple[str, bytes]:
        """(the KEK's id, the wrapped key) under the active KEK."""
        ...

    async def unwrap(self, kek_id: str, subject_ref: str, wrapped: bytes) -> bytes:
        """The data key; raises UnwrapFailed when the KEK does not open these bytes."""
        ...


def _wrapping_aad(subject_ref: str) -> bytes:
    # A wrapped key moved to another subject's row does not unwrap.
    return b"casework/data-key/v1\0" + subject_ref.encode()


class LocalKeyFile:
    """KEKs in a JSON file: `{"active": id, "keys": {id: base64 of 32 bytes, ...}}`.

    Older keys stay in the file until `casework privacy rotate-keys` has re-wrapped every
    data key under the active one; then they may be removed.

    A running process notices a rotation by another (the file replaced): it reads the file
    again before wrapping a new data key, and when it meets a KEK it does not know."""

    def __init__(
        self, path: Path, keks: dict[str, bytes], active: str, stamp: tuple[int, int] | None = None
    ) -> None:
        self.path = path
        self._keks = keks
        self._active = active
        self._stamp = stamp if stamp is not None else _file_stamp(path)

    @classmethod
    def load(cls, path: Path, *, create: bool = False) -> LocalKeyFile:
        if not path.exists():
            if not create:
                raise KeyError_(f"key file {path} does not exist")
            return cls.create(path)
        stamp = _file_stamp(path)  # before reading: a file replaced meanwhile is read again
        try:
            document = json.loads(path.read_text())
            keks = {kid: base64.b64decode(value) for kid, value in document["keys"].items()}
            active = document["active"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise KeyError_(
                f"key file {path} is not {{'active': id, 'keys': {{id: base64}}}}: {error}"
            ) from None
        if active not in keks:
            raise KeyError_(f"key file {path}: the active key {active!r} is not in `keys`")
        if any(len(key) != DATA_KEY_BYTES for key in keks.values()):
            raise KeyError_(f"key file {path}: every key must be {DATA_KEY_BYTES} bytes")
        return cls(path, keks, active, stamp)

    def refresh(self) -> None:
        """Reads the file again if it was replaced since (a rotation elsewhere). One stat
        when it was not; a file that cannot be read now keeps the keys read before."""
        stamp = _file_stamp(self.path)
        if stamp == self._stamp or stamp is None:
            return
        try:
            fresh = LocalKeyFile.load(self.path)
        except KeyError_:
            return
        # A key read before stays usable: a value sealed under it opens until this process
        # ends, even if the file no longer has it.
        self._keks = {**self._keks, **fresh._keks}
        self._active = fresh._active
        self._stamp = fresh._stamp

    @classmethod
    def create(cls, path: Path, kek_id: str = "k1") -> LocalKeyFile:
        """A new file with one random KEK, readable by its owner only. Never replaces a file:
        processes starting together all end up with the one that was made first."""
        path.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_bytes(DATA_KEY_BYTES)
        made = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        write_key_file(made, {kek_id: key}, kek_id)
        try:
            os.link(made, path)
        except FileExistsError:
            pass
        finally:
            made.unlink()
        return cls.load(path)

    def with_new_active(self, kek_id: str) -> LocalKeyFile:
        """Adds a KEK and makes it the active one (the file is rewritten, with the keys it
        has now: read again first, so that a key another process added is kept)."""
        self.refresh()
        if kek_id in self._keks:
            raise KeyError_(f"key file {self.path} already has a key {kek_id!r}")
        keks = {**self._keks, kek_id: secrets.token_bytes(DATA_KEY_BYTES)}
        write_key_file(self.path, keks, kek_id)
        return LocalKeyFile(self.path, keks, kek_id)

    @property
    def active_kek_id(self) -> str:
        return self._active

    @property
    def kek_ids(self) -> tuple[str, ...]:
        return tuple(self._keks)

    def next_kek_id(self) -> str:
        """`k<n>`, one past the highest such id in the file."""
        numbers = [int(kid[1:]) for kid in self._keks if kid[:1] == "k" and kid[1:].isdigit()]
        return f"k{max(numbers, default=0) + 1}"

    async def wrap(self, subject_ref: str, data_key: bytes) -> tuple[str, bytes]:
        self.refresh()
        nonce = os.urandom(NONCE_BYTES)
        sealed = AESGCM(self._keks[self._active]).encrypt(
            nonce, data_key, _wrapping_aad(subject_ref)
        )
        return self._active, nonce + sealed

    async def unwrap(self, kek_id: str, subject_ref: str, wrapped: bytes) -> bytes:
        kek = self._keks.get(kek_id)
        if kek is None:
            self.refresh()
            kek = self._keks.get(kek_id)
        if kek is None:
            raise KeyError_(f"key file {self.path} has no key {kek_id!r}")
        try:
            return AESGCM(kek).decrypt(
                wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:], _wrapping_aad(subject_ref)
            )
        except InvalidTag:
            raise UnwrapFailed(kek_id) from None


def _file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns


def write_key_file(path: Path, keks: dict[str, bytes], active: str) -> None:
    document = {
        "active": active,
        "keys": {kid: base64.b64encode(key).decode() for kid, key in keks.items()},
    }
    temporary = path.with_suffix(path.suffix + ".new")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(document, handle, indent=2)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


@dataclass(frozen=True)
class DataKey:
    subject_ref: str
    version: int
    key: bytes


class Keyring:
    """A subject's data key: made on first need, unwrapped once per process, forgotten on
    erasure."""

    def __init__(self, provider: KeyProvider | Callable[[], KeyProvider]) -> None:
        self._provider = provider
        self._cache: OrderedDict[tuple[str, int], bytes] = OrderedDict()

    @classmethod
    def from_key_file(cls, path: Path) -> Keyring:
        """The local key file, read (or made) when a policy first needs a key, so that a
        deployment without a policy never writes one."""
        return cls(lambda: LocalKeyFile.load(path, create=True))

    @property
    def provider(self) -> KeyProvider:
        if callable(self._provider):
            self._provider = self._provider()
        return self._provider

    async def current(self, conn: Database, subject_ref: str) -> DataKey:
        """The key new values of this subject are sealed with, made if it has none that is
        not shredded. Safe under concurrent first enqueues: one key wins, all use it."""
        row = await conn.fetchrow(sql.privacy.SUBJECT_KEY_GET_CURRENT, subject_ref=subject_ref)
        if row is None:
            fresh = secrets.token_bytes(DATA_KEY_BYTES)
            kek_id, wrapped = await self.provider.wrap(subject_ref, fresh)
            await conn.fetch(sql.privacy.SUBJECT_ENSURE, subject_ref=subject_ref)
            row = await conn.fetchrow(
                sql.privacy.SUBJECT_KEY_INSERT,
                subject_ref=subject_ref,
                kek_id=kek_id,
                wrapped_key=wrapped,
            )
            if row is None:  # another transaction made it first
                row = await conn.fetchrow(
                    sql.privacy.SUBJECT_KEY_GET_CURRENT, subject_ref=subject_ref
                )
            assert row is not None
        return await self._unwrapped(
            subject_ref, row["key_version"], row["kek_id"], row["wrapped_key"]
        )

    async def version(self, conn: Database, subject_ref: str, version: int) -> DataKey | None:
        """A key by version, or None once shredded."""
        cached = self._cache.get((subject_ref, version))
        if cached is not None:
            self._cache.move_to_end((subject_ref, version))
            return DataKey(subject_ref, version, cached)
        row = await conn.fetchrow(
            sql.privacy.SUBJECT_KEY_GET, subject_ref=subject_ref, key_version=version
        )
        if row is None or row["wrapped_key"] is None:
            return None
        return await self._unwrapped(subject_ref, version, row["kek_id"], row["wrapped_key"])

    async def unwrapped(
        self, subject_ref: str, version: int, kek_id: str, wrapped: bytes
    ) -> DataKey:
        """A key whose wrapped form the caller read with its own rows (a page of fields
        reads its subjects' keys in the same statement)."""
        return await self._unwrapped(subject_ref, version, kek_id, wrapped)

    async def _unwrapped(
        self, subject_ref: str, version: int, kek_id: str, wrapped: bytes
    ) -> DataKey:
        cached = self._cache.get((subject_ref, version))
        if cached is None:
            cached = await self.provider.unwrap(kek_id, subject_ref, bytes(wrapped))
            self._cache[(subject_ref, version)] = cached
            while len(self._cache) > CACHED_DATA_KEYS:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end((subject_ref, version))
        return DataKey(subject_ref, version, cached)

    def forget(self, subject_ref: str) -> None:
        for cached in [k for k in self._cache if k[0] == subject_ref]:
            del self._cache[cached]
