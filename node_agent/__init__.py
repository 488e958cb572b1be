"""dra-node-agent: reads what a node enforces in cgroup v2 and compares it with the prediction."""
