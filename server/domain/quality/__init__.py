"""Checks on decisions after the fact: second review (four eyes before the effect), QA
sampling, and audit packs (everything recorded about an item, hashed)."""
