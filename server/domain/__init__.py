"""The rules of Casework: claims, leases, decisions. Imports no web framework."""
