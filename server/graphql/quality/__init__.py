"""The GraphQL face of second review, QA and audit packs."""
