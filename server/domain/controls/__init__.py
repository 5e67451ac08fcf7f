"""A manager's and a reviewer's hand on waiting work: assignments, holds and bulk actions."""
