"""Nodes: what a node publishes, what is allocated on it, and what the autoscaler predicted."""
