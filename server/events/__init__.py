"""Live updates: the listener, the hub that fans events out, and the lease-expiry timer."""
