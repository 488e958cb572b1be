"""Pods: the DRA amounts a pod carries and the cgroup values that should enforce them."""
