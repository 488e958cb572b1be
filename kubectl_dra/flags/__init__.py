"""Command-line flags both programs share (kubectl-dra and dra-node-agent): connection and node flags."""
