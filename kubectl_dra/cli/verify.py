"""``kubectl dra verify``: do the nodes enforce what the scheduler counted?"""

from __future__ import annotations

import click

from kubectl_dra.cli.options import check_label_selector
from kubectl_dra.flags.completion import object_names
from kubectl_dra.flags.connection import kube_options
from kubectl_dra.flags.host import cdi_dir_option, check_cgroup_root
from kubectl_dra.flags.names import typed_name
from kubectl_dra.flags.node import node_options
from kubectl_dra.flags.output import output_options
from kubectl_dra.flags.paths import DirectoryPath

VERIFY_EPILOG = ("Exit codes, the first that applies: 2 usage error (a bad flag value, a --cgroup-root that is no "
                 "cgroup v2 tree); 3 nothing to show (no reports, POD or node not found, POD on another node); 1 a "
                 "divergence was found (stale verdicts do not count; it outranks 4); 4 partial: some pods could not be "
                 "read, changed since the scan (stale), or run on nodes without a report; 0 every pod checked matches "
                 "(or there is none to check).")


@click.command("verify", epilog=VERIFY_EPILOG)
@kube_options
@node_options
@click.option("--node", "nodes", metavar="NODE", multiple=True, shell_complete=object_names("Node"), help="Only this node (repeatable).")
@click.option("-l", "--selector", metavar="SELECTOR", callback=check_label_selector, help="Only nodes with these labels.")
@click.option("--cgroup-root", metavar="DIR", type=DirectoryPath(), callback=check_cgroup_root,
              help="Check the local node directly, without an agent (a node shell or debug pod): scan it as "
                   "dra-node-agent scan --once does, reading this cgroup v2 tree, e.g. /sys/fs/cgroup or "
                   "/host/sys/fs/cgroup.")
@click.option("--kubelet-root", metavar="DIR", default="/var/lib/kubelet", show_default=True, type=DirectoryPath(),
              help="With --cgroup-root: the kubelet's root directory, for cpu_manager_state (CPU manager policy and "
                   "exclusive CPUs) and dra_manager_state (the claims it prepared, compared with the API). Each "
                   "is optional: what is missing is skipped and said. The kubelet's PodResources API is read only "
                   "by dra-node-agent scan --once (gRPC).")
@cdi_dir_option
@output_options(formats=("table", "wide", "json", "yaml"))
@click.argument("pod", required=False, shell_complete=object_names("Pod"), callback=typed_name("Pod"))
@click.pass_context
def verify(ctx: click.Context, kube, node_flags, nodes, selector, cgroup_root, kubelet_root, cdi_dirs, output,
           pod) -> None:
    """Compare what the nodes enforce with what the scheduler counted.

    \b
    Cluster-wide it reads the NodeEnforcementReports the dra-node-agent
    publishes (one list call) and re-checks each against the pods now: a pod
    that changed since the agent's scan is shown as stale, not trusted. Nodes
    without a report are listed. With --cgroup-root it scans the local node
    itself, as the agent does (its DRA state too, with --kubelet-root and
    --cdi-dir). POD narrows to one pod (in -n's namespace).

    \b
    Columns: NAMESPACE POD CONTAINER FILE EXPECTED OBSERVED CAUSE (-o wide
    adds NODE and SEVERITY), then the node's DRA claims with findings (-o
    wide: every claim).
    Causes: KubeletDRADisabled, DRAAmountMissing, WeightFormula, DriverOverride,
    RuntimeHugetlbDisabled, ResizePending, PodLevelResources, CgroupMissing,
    CgroupUnreadable, InvalidField, Unexplained (see the README).

    \b
    Examples:
      kubectl dra verify -A
      kubectl dra verify --node worker-gpu-1
      kubectl dra verify -A --snapshot examples/cluster
      kubectl dra verify --cgroup-root /sys/fs/cgroup --node "$(hostname)"
    """
    if cgroup_root and len(nodes) > 1:
        raise click.UsageError("--cgroup-root checks one node: give at most one --node")
    # start-up: help
    from kubectl_dra.commands.verify import run

    ctx.exit(run(ctx.obj, kube=kube, node_flags=node_flags, nodes=nodes, selector=selector, cgroup_root=cgroup_root,
                 kubelet_root=kubelet_root, cdi_dirs=cdi_dirs, output=output, pod=pod))
