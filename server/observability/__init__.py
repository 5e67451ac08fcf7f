"""What an operator watches: Prometheus metrics, log lines, and optional traces.

A leaf: it imports no other part of the server, so that every layer (the store's SQL spans,
the events' listener gauges, the GraphQL layer's counters) may use it.
"""
