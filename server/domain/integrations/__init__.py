"""Integrations: webhook endpoints, the event outbox and its deliveries (issue 27)."""
