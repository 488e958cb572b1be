"""kubectl-dra: make Kubernetes Dynamic Resource Allocation debuggable."""

__version__ = "0.3.0"
