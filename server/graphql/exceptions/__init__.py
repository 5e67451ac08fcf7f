"""The GraphQL face of the exceptions package: types, queries, mutations, subscriptions."""
