"""``kubectl dra``: the command line. Only click is imported here, so ``--help`` starts fast."""

from __future__ import annotations

import sys

import click

from kubectl_dra.exitcodes import EPILOG, ExitStatus
from kubectl_dra.cli.lazy import LazyGroup
from kubectl_dra.flags.connection import root_kube_options

COMMANDS = {
    "claims": ("kubectl_dra.cli.claims:claims", "List ResourceClaims: state, node, devices, reservations."),
    "devices": ("kubectl_dra.cli.devices:devices", "What devices are free, where, and who holds the rest."),
    "explain": ("kubectl_dra.cli.explain:explain", "Explain a claim, a pod or a node: devices, holders, DRA amounts, cgroups."),
    "snapshot": ("kubectl_dra.cli.snapshot:snapshot", "Save every object kubectl-dra reads, for offline use."),
    "taints": ("kubectl_dra.cli.taints:taints", "Tainted devices and what they do; dry-run a DeviceTaintRule."),
    "overlays": ("kubectl_dra.cli.overlays:overlays", "Karpenter NodeOverlays: prices and capacity with provenance."),
    "options": ("kubectl_dra.cli.version:options", "List the connection flags every command accepts."),
    "verify": ("kubectl_dra.cli.verify:verify", "Compare what the nodes enforce with what the scheduler counted."),
    "version": ("kubectl_dra.cli.version:version", "Print the kubectl-dra version."),
}


class RootGroup(LazyGroup):
    """Turns the errors a user can act on into one stderr line and a documented exit code."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:  # click prints it: a name from an object must not carry escapes
            # start-up: help - completion imports this module: no text.py (secrets, ~7 ms) at its top
            from kubectl_dra.text import terminal_safe

            exc.message = terminal_safe(exc.message)
            raise
        except (click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:
            ctx.exit(ExitStatus.INTERRUPTED)
        except Exception as exc:  # noqa: BLE001 - the one place that maps errors to exit codes
            # start-up: help - only a failed command needs errors.py
            from kubectl_dra.errors import DRAError
            from kubectl_dra.streams import OutputError

            if isinstance(exc, OutputError):  # stdout failed: the program's edge says so (streams.run_click)
                raise

            env = ctx.obj
            if env is None:  # the failure came before the group's callback (e.g. a subcommand's import)
                # start-up: help
                from kubectl_dra.env import Environment

                env = ctx.obj = Environment(program=ctx.info_name or "kubectl dra")
            if isinstance(exc, DRAError):
                env.error(f"error: {exc}")
                ctx.exit(ExitStatus.ERROR)
            if ctx.meta.get("kube_flags", {}).get("debug") or "--debug" in sys.argv[1:]:
                raise
            env.error(f"error: unexpected {type(exc).__name__}: {exc} (this is a bug; run with --debug "
                      "for a traceback)")
            ctx.exit(ExitStatus.ERROR)


@click.group(cls=RootGroup, lazy_commands=COMMANDS, epilog=EPILOG,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@root_kube_options
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Make Kubernetes Dynamic Resource Allocation debuggable.

    \b
    Examples:
      kubectl dra claims -A                      # every claim, its devices and holders
      kubectl dra explain claim shared-gpu -n ml # why a claim is (still) allocated
      kubectl dra claims --snapshot bundle/      # the same, offline, from saved files

    Connection flags (--kubeconfig, --context, -n, ...) work as in kubectl and may be given
    before or after the command; `kubectl dra options` lists them.
    """
    if ctx.obj is None:
        # start-up: help - completion resolves commands without running this: no env.py (~8 ms)
        from kubectl_dra.env import Environment

        ctx.obj = Environment(program=ctx.info_name or "kubectl dra")


def main() -> None:
    # start-up: help - completion imports this module and never runs main
    from kubectl_dra.env import program_name
    from kubectl_dra.streams import run_click

    run_click(cli, program_name(sys.argv[0]))
