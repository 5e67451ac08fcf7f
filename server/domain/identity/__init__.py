"""Who is calling: bearer tokens, and resolving them to principals with a short cache."""
