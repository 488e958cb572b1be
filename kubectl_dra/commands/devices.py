"""``kubectl dra devices`` once its flags are parsed: read the slices, claims, classes, nodes and
DeviceTaintRules (and the pods, for the kubelets' device health, with --devices), check what the
flags name against what was read, count (devices/explain.py), print the DeviceAvailability.
Exit 4 when something could not be read or a row's free count is not known."""

from __future__ import annotations

from kubectl_dra.commands.inputs import claim_user_pods, open_for, read_versions, report_problems, require_kinds
from kubectl_dra.devices.explain import Holdings, explain_devices
from kubectl_dra.env import Environment
from kubectl_dra.errors import NotFoundError
from kubectl_dra.exitcodes import ExitStatus
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.kube.selectors import label_matcher
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.resource import DeviceClass, DeviceTaintRule, ResourceSlice
from kubectl_dra.printers.devices import devices_table
from kubectl_dra.printers.options import OutputOptions
from kubectl_dra.printers.output import emit
from kubectl_dra.printers.style import Style


def run(env: Environment, *, kube: KubeOptions, output: OutputOptions, node: str | None, selector: str | None,
        driver: str | None, pool: str | None, free_only: bool, device_class: str | None, devices: bool,
        partition_attribute: str | None) -> ExitStatus:
    env.color = output.color
    devices = devices or output.wide
    opened = open_for(env, kube)
    claims = ReadRequest(ResourceClaim, None, keep_raw=False)
    reads = [ReadRequest(ResourceSlice, keep_raw=False), ReadRequest(DeviceClass, keep_raw=False),
             ReadRequest(Node, keep_raw=False), ReadRequest(DeviceTaintRule, required=False, keep_raw=False)]
    if devices:
        reads.append(claim_user_pods(None))
    opened.source.prime([claims, *reads])  # every kind's first page at once
    inventory = opened.source.read(reads)
    # the claims are folded in as their pages arrive, never held: 40,000 of them are 130 MiB as objects
    holdings = Holdings.of(opened.source.stream(claims, inventory), keep_holders=devices)
    require_kinds(env, inventory, ResourceSlice, ResourceClaim)
    klass = None
    if device_class is not None:
        require_kinds(env, inventory, DeviceClass)
        klass = inventory.get(DeviceClass, None, device_class)
        if klass is None:
            report_problems(env, inventory)
            raise NotFoundError(f'deviceclasses.resource.k8s.io "{device_class}" not found')
    nodes = _nodes(env, inventory, node, selector)
    result = explain_devices(inventory, device_class=klass, nodes=nodes, driver=driver, pool=pool,
                             free_only=free_only, devices=devices,
                             pods=inventory.all(Pod) if devices and Pod.KIND in inventory.read_kinds else None,
                             partition_attribute=partition_attribute, holdings=holdings)
    result.versions = read_versions(opened, [n for n in inventory.all(Node) if nodes is None or n.name in nodes])
    emit(env, result, output, text=lambda: devices_table(result, devices=devices, no_headers=output.no_headers,
                                                         style=Style(env.use_color)))
    status = report_problems(env, inventory)
    if status == ExitStatus.OK and any(row.unknown for row in result.pools):
        status = ExitStatus.PARTIAL
    return status


def _nodes(env: Environment, inventory, node: str | None, selector: str | None) -> set[str] | None:
    """The node names --node and -l leave (None: every node); a node named that does not exist is
    an error, as kubectl says it, unless the Nodes could not be read (then the name is taken)."""
    if node is None and selector is None:
        return None
    if Node.KIND not in inventory.read_kinds:
        if selector is not None:  # which nodes carry the labels is unknown: nothing to show
            require_kinds(env, inventory, Node)
        return {node}
    known = {n.name: n for n in inventory.all(Node)}
    if node is not None and node not in known:
        report_problems(env, inventory)
        raise NotFoundError(f'nodes "{node}" not found')
    matches = label_matcher(selector)
    return {name for name, n in known.items() if (node is None or name == node) and matches(n.metadata.labels)}
