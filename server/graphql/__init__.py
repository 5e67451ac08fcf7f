"""The GraphQL layer: thin. A resolver parses, calls the domain, and maps the result."""
