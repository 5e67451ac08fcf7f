"""Identity on the GraphQL side: how an actor authenticated (Authentication) and revoking a
person (revokeUser)."""
