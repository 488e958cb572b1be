"""``dra-node-agent``: ``scan`` once from a node shell, or ``run`` as the DaemonSet service."""

from __future__ import annotations

import ipaddress
import os
import re
import sys

import click

from kubectl_dra import __version__
from kubectl_dra.flags.connection import kube_options
from kubectl_dra.flags.host import cdi_dir_option, check_cgroup_root
from kubectl_dra.flags.node import node_options
from kubectl_dra.flags.output import output_options
from kubectl_dra.streams import run_click

EXIT = ("Exit codes (scan), as kubectl dra's: 0 every pod matches (or the node runs none); 1 divergence or claim "
        "finding (it outranks 4); 2 usage error (a bad flag value, a --cgroup-root that is no cgroup v2 tree); 3 "
        "error, nothing shown (the node is no Node, the API server cannot be read); 4 partial: pods whose cgroups "
        "could not be read (named on stderr).")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}, epilog=EXIT)
@click.version_option(__version__, prog_name="dra-node-agent")
def cli() -> None:
    """Read the cgroup v2 values of every pod on this node and compare them with what the
    kubelet and the runtime should have written, DRA node-allocatable amounts included."""


_HOST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")


def _is_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return len(host) <= 253 and _HOST_NAME.fullmatch(host) is not None


class ListenAddress(click.ParamType):
    """``HOST:PORT`` (``[::1]:8080`` for IPv6, ``:8080`` for every address) with a port in 0-65535;
    the pair is returned so nothing downstream splits the text again."""

    name = "address"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        host, sep, port = str(value).rpartition(":")
        if not sep or not (port.isascii() and port.isdigit()) or not 0 <= int(port) <= 65535:
            self.fail(f'"{value}": use HOST:PORT with a port from 0 to 65535, e.g. 0.0.0.0:8080', param, ctx)
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if host and not _is_host(host):
            self.fail(f'"{value}": "{host}" is not a host name or an IP address', param, ctx)
        return host or "0.0.0.0", int(port)


class Interval(click.ParamType):
    """Seconds between rescans: a finite number of at least MIN_INTERVAL, so the loop never spins."""

    name = "seconds"
    MIN_INTERVAL = 1.0
    MAX_INTERVAL = 86400.0

    def convert(self, value, param, ctx):
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f'"{value}" is not a number of seconds', param, ctx)
        if not self.MIN_INTERVAL <= seconds <= self.MAX_INTERVAL:  # NaN fails both comparisons
            self.fail(f'"{value}": between {self.MIN_INTERVAL:g} and {self.MAX_INTERVAL:g} seconds', param, ctx)
        return seconds


def agent_options(check_root: bool):
    """The node and its host paths. ``check_root``: a root that is no cgroup v2 tree is a usage error
    (``scan``); the service instead says so in its report and keeps serving."""

    def decorate(command):
        command = click.option("--node", default=None,
                               help="The node whose pods to check [default: $NODE_NAME, else this host's name if "
                                    "a Node has it].")(command)
        command = cdi_dir_option(command)
        command = click.option("--kubelet-root", default="/var/lib/kubelet", show_default=True,
                               type=click.Path(readable=False),
                               help="The kubelet's root directory: cpu_manager_state (the CPU manager policy and "
                                    "exclusive CPUs), dra_manager_state (the claims it prepared) and "
                                    "pod-resources/kubelet.sock (its PodResources API). Each is optional: what is "
                                    "missing is skipped and said (/host/var/lib/kubelet in the DaemonSet, with "
                                    "manifests/kubelet-state or manifests/node-dra-state).")(command)
        command = click.option("--cgroup-root", default="/sys/fs/cgroup", show_default=True, type=click.Path(),
                               callback=check_cgroup_root if check_root else None,
                               help="Where the host's cgroup v2 tree is mounted (/host/sys/fs/cgroup in the "
                                    "DaemonSet).")(command)
        command = click.option("--sys-root", default=None, type=click.Path(),
                               help="Host /sys, for huge page sizes [default: the cgroup root without "
                                    "/fs/cgroup].")(command)
        return command

    return decorate


@cli.command("scan", epilog=EXIT)
@kube_options
@node_options
@agent_options(check_root=True)
@click.option("--once", is_flag=True, help="Scan once and exit (the only mode of scan; for a node shell).")
@output_options(formats=("table", "wide", "json", "yaml"))
@click.pass_context
def scan_command(ctx, kube, node_flags, node, cdi_dirs, kubelet_root, cgroup_root, sys_root, once, output) -> None:
    """Compare every pod on the node with the prediction and print a NodeEnforcementReport.

    \b
    Pods come from the API server (only this node's: fieldSelector
    spec.nodeName) or from --snapshot files.

    \b
    Examples:
      dra-node-agent scan --once --node worker-1
      dra-node-agent scan --once --snapshot bundle/ --node worker-1 --cgroup-root /tmp/tree/fs/cgroup -o json
    """
    # start-up: help
    from kubectl_dra.nodescan.node import HostPaths
    from node_agent.once import run_scan_once

    host = HostPaths(cgroup_root=cgroup_root, sys_root=sys_root, kubelet_root=kubelet_root, cdi_dirs=cdi_dirs)
    sys.exit(run_scan_once(kube, node_flags, node, host, output))


@cli.command("run", epilog="The DaemonSet's command; see manifests/.")
@kube_options
@node_options
@agent_options(check_root=False)
@click.option("--listen", default="0.0.0.0:8080", show_default=True, type=ListenAddress(),
              help="HOST:PORT for /metrics /healthz /readyz /report.")
@click.option("--interval", default=60.0, show_default=True, type=Interval(),
              help="Seconds between full rescans (1 to 86400; pod changes rescan at once).")
@click.option("--publish/--no-publish", default=True, show_default=True,
              help="Write the NodeEnforcementReport and Events (off: metrics and /report only).")
@click.option("--check-network", is_flag=True,
              help="Also check that allocated network devices sit in the pod's network namespace "
                   "(needs the privileged overlay: hostPID and CAP_SYS_ADMIN).")
@click.option("--proc-root", default="/proc", show_default=True, type=click.Path(),
              help="The host's /proc (for --check-network and process names).")
def run_command(kube, node_flags, node, cdi_dirs, kubelet_root, cgroup_root, sys_root, listen, interval, publish,
                check_network, proc_root) -> None:
    """Run as the DaemonSet service: watch this node's pods, rescan on change and every
    --interval seconds, publish the report, Events and Prometheus metrics."""
    # start-up: help
    from kubectl_dra.nodescan.node import choose_node
    from node_agent.service import Agent, AgentConfig

    name, _ = choose_node(node, os.environ)
    host, port = listen
    listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    config = AgentConfig(node=name, cgroup_root=cgroup_root, sys_root=sys_root, listen=listen, interval=interval,
                         publish=publish, check_network=check_network, proc_root=proc_root, node_flags=node_flags,
                         kubelet_root=kubelet_root, cdi_dirs=cdi_dirs)
    agent = Agent(config, kube)
    try:
        agent.start_http()
    except OSError as exc:  # the address is well formed but this host cannot listen there
        raise click.BadParameter(f'cannot listen on "{listen}": {exc.strerror or exc}', param_hint="'--listen'") \
            from None
    sys.exit(agent.serve_forever())


def main() -> None:
    run_click(cli, "dra-node-agent")


if __name__ == "__main__":
    main()
