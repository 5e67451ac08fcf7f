"""The GraphQL face of integrations: webhook endpoints, their deliveries, replays."""
