"""Finding cases: look-ups by the integrator's key, searches across queues, and their export.

Every search here reads within the caller's queues (what lies outside reads as missing), is
served by an index, and scans at most `SCAN_LIMIT` rows: a search that would read more is
refused with the filters that would narrow it (`SearchTooBroad`), never run slowly.
"""
