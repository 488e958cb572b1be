"""What the kubelet and the OCI runtime write into cgroup v2 for a pod (docs/kubernetes/kubelet-cgroups.md)."""
