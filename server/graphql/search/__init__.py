"""Finding cases: `items`, `decisions`, `itemByExternalKey` (server/domain/search/)."""
