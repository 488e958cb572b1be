"""Turning command results into text: tables, trees, JSON/YAML documents, names."""
