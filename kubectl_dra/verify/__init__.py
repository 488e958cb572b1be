"""Expected vs observed cgroup values: tolerances, causes, and the NodeEnforcementReport."""
