"""Measures for managers: figures computed from the tables, true across any number of
processes. `figures` holds the shapes shared by review queues and exception workflows."""
