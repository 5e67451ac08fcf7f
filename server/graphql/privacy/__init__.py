"""The GraphQL face of personal data: payload policies, retention classes, and more."""
