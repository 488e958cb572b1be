"""Pydantic views of the Kubernetes objects kubectl-dra reads (tolerant of unknown fields)."""
