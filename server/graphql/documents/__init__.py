"""Trusted documents: the GraphQL documents a deployment knows in advance.

The console's operations and the clients' are fixed texts. They are listed in manifests
(`manifests/*.json`, and any file named by CASEWORK_TRUSTED_DOCUMENTS), parsed and
validated once at start-up, and may be asked for by id (`documentId: "sha256:<hex>"`,
or Apollo's `extensions.persistedQuery.sha256Hash`) instead of by text. With
CASEWORK_DOCUMENTS=trusted nothing else is accepted.
"""
