"""The trusted-documents settings (CASEWORK_DOCUMENTS, CASEWORK_TRUSTED_DOCUMENTS,
CASEWORK_LEAN_PATH), read by server/config.py; docs/security.md, "Trusted documents"."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


class DocumentMode(enum.StrEnum):
    """CASEWORK_DOCUMENTS: which GraphQL documents a request may send."""

    # Any document text, and trusted documents by id (development, GraphiQL, --dev).
    ANY = "any"
    # Only the manifests' documents, by id or by their exact text (production).
    TRUSTED = "trusted"


@dataclass(frozen=True)
class DocumentSettings:
    # CASEWORK_DOCUMENTS: "any" document text, or only the "trusted" ones (production).
    mode: DocumentMode = DocumentMode.ANY
    # CASEWORK_TRUSTED_DOCUMENTS=path[,path]: an operator's manifests, beside the built-in
    # ones (the console's and the clients').
    manifests: tuple[Path, ...] = ()
    # CASEWORK_LEAN_PATH=0: every request takes the general path (the kill switch).
    lean_path: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DocumentSettings:
        """Raises ValueError with one line naming the variable."""
        mode = (env.get("CASEWORK_DOCUMENTS") or "any").strip().lower()
        if mode not in tuple(DocumentMode):
            raise ValueError(
                f"CASEWORK_DOCUMENTS={mode!r}: expected one of {', '.join(DocumentMode)}"
            )
        lean = (env.get("CASEWORK_LEAN_PATH") or "1").strip().lower()
        if lean not in ("1", "0", "true", "false", "yes", "no"):
            raise ValueError(f"CASEWORK_LEAN_PATH={lean!r}: expected 1 or 0")
        return cls(
            mode=DocumentMode(mode),
            manifests=tuple(
                Path(part.strip()).resolve()
                for part in (env.get("CASEWORK_TRUSTED_DOCUMENTS") or "").split(",")
                if part.strip()
            ),
            lean_path=lean in ("1", "true", "yes"),
        )
