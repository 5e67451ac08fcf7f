"""Real clusters for the availability tests: a failover manager, a streaming replica and a
pooler, each started on loopback ports from Debian's packages (docs/operations.md)."""
