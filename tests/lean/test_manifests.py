"""The gate runs on the built-in manifests' documents: they must exist, load, and hold every
document the console sends. Until the manifests ship this fails; it is never skipped."""

from __future__ import annotations

from server.graphql.documents import manifest
from tests.lean.documents import console_texts, manifest_files, trusted_documents


def test_the_built_in_manifests_hold_the_console_documents() -> None:
    assert manifest_files(), f"no built-in manifests in {manifest.BUILT_IN}"
    assert hasattr(manifest, "load_manifests"), "server.graphql.documents.manifest.load_manifests"
    trusted = {document.text.strip() for document in trusted_documents()}
    missing = sorted(name for name, text in console_texts().items() if text.strip() not in trusted)
    assert not missing, f"console documents not in the manifests: {missing}"


def test_the_console_sends_documents_the_differential_test_can_read() -> None:
    texts = console_texts()
    assert {"ClaimNext", "SubmitDecision", "Me", "QueueBacklog"} <= set(texts)
    assert all("${" not in text for text in texts.values())
