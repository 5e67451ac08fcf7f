"""Sealing one field's value, and its salted digest: the two things stored per field.

- The value is sealed with AES-GCM under the subject's data key, with the item, the path and
  the key's version as associated data: a ciphertext copied to another item or path, or
  kept under another version, does not open.
- Its digest is SHA-256(salt ‖ path ‖ 0x00 ‖ canonical JSON of the value), with a 16-byte
  salt derived from the data key. Once the salt is destroyed, guessing the value does not
  reproduce the digest; while it is kept (or handed to an auditor), the digest verifies.
- A policy item's evidence hash is SHA-256 of the canonical JSON of
  {"fields": {path: digest, ...}, "policy_version": n}: what a decision pins, and what still
  verifies when some fields are erased, from the digests that remain.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from server.domain.review.evidence import canonical_json

SALT_BYTES = 16
NONCE_BYTES = 12


def associated_data(item_id: int, path: str, key_version: int) -> bytes:
    return f"casework/field/v1\0{item_id}\0{path}\0{key_version}".encode()


def seal(
    key: bytes, *, item_id: int, path: str, key_version: int, value: Any
) -> tuple[bytes, bytes]:
    """(nonce, ciphertext) of the value's canonical JSON."""
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(key).encrypt(
        nonce, canonical_json(value), associated_data(item_id, path, key_version)
    )
    return nonce, sealed


def open_sealed(
    key: bytes, *, item_id: int, path: str, key_version: int, nonce: bytes, ciphertext: bytes
) -> Any:
    """The value; raises cryptography's InvalidTag for a wrong key, item, path or version."""
    plain = AESGCM(key).decrypt(
        bytes(nonce), bytes(ciphertext), associated_data(item_id, path, key_version)
    )
    return json.loads(plain)


def field_salt(key: bytes, *, queue: str, external_key: str, path: str) -> bytes:
    """The same item, path and key give the same salt, so enqueueing the same payload again
    gives the same digests (and no false `evidenceUpdated`)."""
    scope = f"casework/salt/v1\0{queue}\0{external_key}\0{path}".encode()
    return hmac.new(key, scope, hashlib.sha256).digest()[:SALT_BYTES]


def field_digest(salt: bytes, path: str, value: Any) -> str:
    return hashlib.sha256(bytes(salt) + path.encode() + b"\0" + canonical_json(value)).hexdigest()


def policy_evidence_hash(policy_version: int, digests: Mapping[str, str]) -> str:
    document = {"fields": dict(sorted(digests.items())), "policy_version": policy_version}
    return hashlib.sha256(canonical_json(document)).hexdigest()
