"""``dra-node-agent``: the node agent's command line (``run`` and ``scan`` arrive with the agent)."""

from __future__ import annotations

import click

from kubectl_dra import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dra-node-agent")
def cli() -> None:
    """Read the cgroup v2 values of every pod on this node and compare them with what the
    kubelet and the runtime should have written for their DRA claims."""


def main() -> None:
    cli.main(prog_name="dra-node-agent")


if __name__ == "__main__":
    main()
