"""The review loop: queues and their catalogues, enqueueing, claims and leases, decisions
pinned to their evidence, due times, the reads behind live updates, and carrying decisions out."""
