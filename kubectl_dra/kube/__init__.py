"""Talking to Kubernetes: kubeconfig and in-cluster configuration, API reads, snapshot files."""
