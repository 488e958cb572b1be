"""Command-line flags both programs share (kubectl-dra and dra-node-agent): connection, node, output
and host-path flags."""
