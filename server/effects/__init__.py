"""Effects: how a recorded decision is carried out in the system that owns its subject."""
