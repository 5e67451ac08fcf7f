"""HTTP routes beside the GraphQL endpoint that identity needs (back-channel logout)."""
