"""The GraphQL face of the review loop: its object types, queries, mutations and subscriptions."""
