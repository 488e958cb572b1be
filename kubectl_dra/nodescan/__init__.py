"""The one node scan: this node's pods and Node (from the API or a snapshot), its cgroup v2 tree,
the kubelet's files and its DRA state, judged into one NodeEnforcementReport.

``dra-node-agent run`` (the service), ``dra-node-agent scan --once`` and ``kubectl dra verify
--cgroup-root`` all run :class:`kubectl_dra.nodescan.node.NodeScan`, so the three say the same for
the same node. The readers here take their host paths as arguments (``/host/...`` in the DaemonSet,
a directory tree in tests) and read only the files a scan compares.
"""
