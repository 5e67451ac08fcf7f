"""The GraphQL face of the measures: queue and workflow dashboards."""
