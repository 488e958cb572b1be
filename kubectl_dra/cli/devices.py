"""``kubectl dra devices``."""

from __future__ import annotations

import click

from kubectl_dra.cli.options import check_label_selector
from kubectl_dra.exitcodes import EPILOG
from kubectl_dra.flags.completion import object_names, slice_values
from kubectl_dra.flags.connection import kube_options
from kubectl_dra.flags.output import output_options


@click.command("devices", epilog=EPILOG)
@kube_options
@output_options(formats=("table", "wide", "json", "yaml"))
@click.option("--node", "node", metavar="NODE", shell_complete=object_names("Node"),
              help="Only this node's pools (and the shared pools that reach it).")
@click.option("-l", "--selector", metavar="SELECTOR", callback=check_label_selector,
              help="Only the pools of nodes with these labels, e.g. nvidia.com/gpu.present=true.")
@click.option("--driver", metavar="DRIVER", shell_complete=slice_values("driver"), help="Only this driver's pools.")
@click.option("--pool", metavar="POOL", shell_complete=slice_values("pool"), help="Only pools of this name.")
@click.option("--class", "device_class", metavar="CLASS", shell_complete=object_names("DeviceClass"),
              help="Count only the devices this DeviceClass's selectors accept (its CEL, as the scheduler "
                   "evaluates it).")
@click.option("--free", "free_only", is_flag=True, help="Only pools with a device free now (with --devices: only "
                                                         "the free devices).")
@click.option("--devices", "devices", is_flag=True, help="One row per device: its attributes, taints, health and "
                                                         "who holds it (as -o wide).")
@click.option("--partition-attribute", metavar="ATTRIBUTE",
              help="The device attribute (fully qualified, e.g. gpu.example.com/profile) that names partition "
                   "types where a slice names none (its spec.partitionTypeAttribute).")
@click.pass_context
def devices(ctx: click.Context, kube, output, node: str | None, selector: str | None, driver: str | None,
            pool: str | None, device_class: str | None, free_only: bool, devices: bool,
            partition_attribute: str | None) -> None:
    """What devices are free, where, and who holds the rest.

    \b
    One row per node x driver x pool (a pool several nodes reach is one
    row: <all nodes>, or <N nodes> for a node selector). TOTAL: devices of
    the pool's newest generation; ALLOCATED: held by a claim (a claim being
    deleted holds them until its finalizer goes); FREE: how many one request
    without tolerations could take together now, as the scheduler decides it;
    TAINTED: free but for a NoSchedule or NoExecute taint (the driver's or a
    DeviceTaintRule's); ADMIN: admin-access allocations (they take
    nothing); REMAINING: shared counters and consumable capacity left; FITS:
    how many more of each partition type fit together. The rest are blocked
    (shared counters or capacity used up, the pool incomplete or invalid):
    --devices gives each device's state. A count that cannot be known (a
    selector that cannot be evaluated, an invalid field) is <unknown>, with
    the reason, and exit 4. Health: a kubelet reports it only for allocated
    devices, in their pods' status; --devices reads the pods for it.

    \b
    Examples:
      kubectl dra devices
      kubectl dra devices --class gpu.example.com --free
      kubectl dra devices --node worker-gpu-2 -o wide
      kubectl dra devices --snapshot examples/cluster -o json
    """
    # start-up: help
    from kubectl_dra.commands.devices import run

    ctx.exit(run(ctx.obj, kube=kube, output=output, node=node, selector=selector, driver=driver, pool=pool,
                 free_only=free_only, device_class=device_class, devices=devices,
                 partition_attribute=partition_attribute))
