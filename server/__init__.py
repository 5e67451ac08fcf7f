"""Casework: hands review items to people and records what they decided."""
