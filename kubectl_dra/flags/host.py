"""The node's own paths, for the commands that read a node directly (``dra-node-agent scan|run``,
``kubectl dra verify --cgroup-root``): the same flags, checks and words in both programs."""

from __future__ import annotations

import click

from kubectl_dra.flags.paths import PathInputError

CDI_DIR_HELP = ("A CDI spec directory, repeatable, later ones win as in the runtime [default: /etc/cdi, "
                "/var/run/cdi]; used to check that every prepared device's CDI ID resolves (/host/etc/cdi and "
                "/host/var/run/cdi with manifests/node-dra-state).")


def check_cgroup_root(ctx, param, value):
    """A root that is no cgroup v2 tree (missing, not a directory, cgroup v1) cannot be scanned:
    exit 3, said before anything is read (``scan --once`` and ``verify --cgroup-root``; the service
    instead reports it in its report)."""
    if value is None:
        return value
    # start-up: help
    from kubectl_dra.nodescan.cgroupfs import CgroupFS

    unusable = CgroupFS(value).unusable()
    if unusable:
        raise PathInputError(f"--cgroup-root {unusable[1]}")
    return value


def cdi_dir_option(command):
    # readable=False: a directory that cannot be read is the scan's to say (those checks are not made,
    # the cgroup results stand), never a usage error that loses everything
    return click.option("--cdi-dir", "cdi_dirs", multiple=True, type=click.Path(readable=False), metavar="DIR",
                        callback=lambda ctx, param, value: tuple(value) or None, help=CDI_DIR_HELP)(command)
