"""`casework intake`: drains brokers' dead-letter queues into owned exceptions (or review
items), parks what cannot be mapped, and publishes approved redrives back to where the
message failed. A side room like `casework mcp`: it calls the domain, never GraphQL."""
