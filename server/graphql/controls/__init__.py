"""The GraphQL face of the claim controls: assignment, lease revocation, holds, bulk actions."""
