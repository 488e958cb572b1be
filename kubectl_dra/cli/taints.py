"""``kubectl dra taints``."""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_dra.exitcodes import EPILOG
from kubectl_dra.flags.output import output_options
from kubectl_dra.flags.watch import check_watch, watch_options
from kubectl_dra.flags.connection import kube_options


@click.command("taints", epilog=EPILOG)
@kube_options
@output_options(formats=("table", "wide", "json", "yaml"))
@click.option("--dry-run", "dry_run", is_flag=True,
              help="Evaluate the DeviceTaintRule in -f as if it were applied now: the devices it hits and the "
                   "pods it would evict. Nothing is created.")
@click.option("-f", "--filename", "filename", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              metavar="FILE", help="The DeviceTaintRule for --dry-run (YAML or JSON, one object; - reads standard input).")
@watch_options("tainted devices")
@click.pass_context
def taints(ctx: click.Context, kube, output, dry_run: bool, filename: Path | None, watch) -> None:
    """Tainted devices (driver taints in ResourceSlices and DeviceTaintRules) and what they do.

    \b
    Per device: each taint (effect, since when, the driver or the rule that set
    it) and every claim allocated the device, with its pods and the outcome:
    Evicted / EvictionPending (NoExecute, as the device taint eviction
    controller decides: tolerations of the allocation, tolerationSeconds),
    Tolerated, BlocksNewAllocations (NoSchedule: existing pods keep it). The
    kubelet's device health (Unhealthy) comes as DeviceUnhealthy findings.
    With --dry-run -f RULE, the same for a rule before it is applied (an empty
    deviceSelector selects every device: an error finding with the pods at
    stake). Exit 1 when pods are or would be evicted.

    \b
    With -w, as kubectl get -w: the table, then a device's rows each time
    they change; a device no longer tainted is printed as last seen (its
    EVENT is DELETED with --output-watch-events). ResourceSlices,
    DeviceTaintRules and ResourceClaims are watched; each change re-reads
    them and the pods and computes the rows anew (a pod's change alone prints
    nothing); findings that appear meanwhile go to stderr. -o json: one
    device document per line. Ends on Ctrl-C or
    --request-timeout with exit 0 (4 if something could not be read).

    \b
    Examples:
      kubectl dra taints
      kubectl dra taints -w
      kubectl dra taints -o wide --snapshot examples/cluster
      kubectl dra taints --dry-run -f examples/taint-rules/drain-worker-gpu-2.yaml --snapshot examples/cluster
    """
    from kubectl_dra.exitcodes import ExitStatus
    from kubectl_dra.commands.inputs import open_for, report_problems, require_kinds
    from kubectl_dra.model.resource import ResourceSlice
    from kubectl_dra.printers.output import emit
    from kubectl_dra.printers.style import Style
    from kubectl_dra.printers.taints import taint_table
    from kubectl_dra.taints.explain import explain_taints

    if dry_run and filename is None:
        raise click.UsageError("--dry-run needs -f FILE (the DeviceTaintRule to evaluate)")
    if filename is not None and not dry_run:
        raise click.UsageError("-f is for --dry-run: kubectl-dra never applies a rule (kubectl apply -f does)")
    if filename is not None and str(filename) == "-" and kube.snapshot == "-":
        raise click.UsageError("-f - and --snapshot - both read standard input: give one of them a file")
    check_watch(watch, kube, output)
    if watch.on and dry_run:
        raise click.UsageError("--dry-run evaluates a rule once; it cannot be watched (drop -w)")
    rule, warnings = _read_rule(filename) if filename is not None else (None, [])
    env = ctx.obj
    for warning in warnings:  # as kubectl prints the server's warnings
        env.error(f"Warning: {warning}")
    env.color = output.color
    opened = open_for(env, kube)
    if watch.on:
        from kubectl_dra.commands.watching import run

        ctx.exit(run(lambda: _watch(env, opened, output, watch)))
    inventory = opened.source.read(_reads())
    require_kinds(env, inventory, ResourceSlice)
    result = explain_taints(inventory, env.now(), dry_run=rule)
    emit(env, result, output, text=lambda: taint_table(result, wide=output.wide, no_headers=output.no_headers,
                                                       style=Style(env.use_color)))
    status = report_problems(env, inventory)
    for line in result.problems[len(inventory.problems):]:  # the DeviceTaintRules it could not evaluate
        env.error(f"error: {line}")
        status = ExitStatus.PARTIAL
    evicting = any(c.outcome in ("Evicted", "EvictionPending", "WouldEvict") for d in result.devices for c in d.consumers)
    if status == 0 and (evicting or any(f.severity == "error" for f in result.findings)):
        status = ExitStatus.DIVERGED
    ctx.exit(status)


def _reads() -> list:
    """Every kind the taint view is computed from."""
    from kubectl_dra.commands.inputs import claim_user_pods
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.model.claim import ResourceClaim
    from kubectl_dra.model.resource import DeviceTaintRule, ResourceSlice

    return [ReadRequest(ResourceSlice, keep_raw=False), ReadRequest(ResourceClaim, None, keep_raw=False),
            claim_user_pods(None), ReadRequest(DeviceTaintRule, required=False, keep_raw=False)]


def _watch(env, opened, output, watch) -> int:
    """The table, then the rows of each device whose rows changed. The kinds taints come from
    (slices, rules) and the claims that hold tainted devices are watched; what arrives together is
    one change, after which every kind is read again and the view computed anew, exactly as
    without -w, so a row is never computed from a partial picture. If that read fails the rows
    stay as they were and stderr says so (exit 4)."""
    from kubectl_dra.commands.inputs import require_kinds
    from kubectl_dra.commands.watching import RowStream, deadline, follow, merged
    from kubectl_dra.errors import ApiError
    from kubectl_dra.kube.reads import ReadRequest
    from kubectl_dra.kube.watch import KindWatch
    from kubectl_dra.model.claim import ResourceClaim
    from kubectl_dra.model.resource import DeviceTaintRule, ResourceSlice
    from kubectl_dra.printers.documents import as_document
    from kubectl_dra.printers.style import Style
    from kubectl_dra.printers.taints import device_table, taint_table
    from kubectl_dra.taints.explain import explain_taints
    from kubectl_dra.taints.document import TaintExplanation

    stream = RowStream(env, output, watch.events)
    # the watches start from lists taken before the view's read: nothing between them is missed
    watches = [KindWatch(opened.source, ReadRequest(model, None, required=required, keep_raw=False),
                         warn=lambda message: stream.error(message))
               for model, required in ((ResourceSlice, True), (DeviceTaintRule, False), (ResourceClaim, True))]
    for watcher in watches:
        _, listed = watcher.list()
        stream.problems(listed)
    inventory = opened.source.read(_reads())
    require_kinds(env, inventory, ResourceSlice)
    result = explain_taints(inventory, env.now())
    if not watch.only:
        if output.format in ("json", "yaml"):
            for device in as_document(result)["devices"]:
                stream.document("ADDED", device)
        else:
            printed = taint_table(result, wide=output.wide, no_headers=output.no_headers, style=Style(env.use_color),
                                  events=["ADDED"] * len(result.devices) if watch.events else None)
            if printed.heading:
                (env.error if output.no_headers else stream.write)(printed.heading)
            if printed.data:
                stream.header_done = True
                stream.write(printed.data)
            if printed.prose:
                (env.error if output.no_headers else stream.write)(printed.prose)
    stream.problems(inventory)
    for line in result.problems[len(inventory.problems):]:  # the DeviceTaintRules it could not evaluate
        stream.said.add(line)
        stream.error(line)
    until = deadline(opened)
    for watcher in watches:
        watcher.deadline = until
    shown = {d.device: d for d in result.devices}
    findings = {(f.code, f.message) for f in result.findings}

    def handle(_batch) -> None:
        nonlocal shown
        try:
            fresh = opened.source.read(_reads())
        except ApiError as exc:
            stream.error(f"the taint view could not be read again after a change: {exc}")
            return
        stream.problems(fresh)
        if ResourceSlice.KIND not in fresh.read_kinds:
            return  # said above; the rows shown stay the last ones known
        now = explain_taints(fresh, env.now())
        for line in now.problems[len(fresh.problems):]:
            if line not in stream.said:  # said once for the whole watch, as the read problems
                stream.said.add(line)
                stream.error(line)
        current = {d.device: d for d in now.devices}
        changed = [("MODIFIED" if d.device in shown else "ADDED", d) for d in now.devices
                   if d.device not in shown or shown[d.device] != d]
        changed += [("DELETED", d) for key, d in shown.items() if key not in current]
        shown = current
        if changed and output.format in ("json", "yaml"):
            documents = as_document(TaintExplanation(devices=[d for _, d in changed]))["devices"]
            for (kind, _), document in zip(changed, documents):
                stream.document(kind, document)
        elif changed:
            stream.table(lambda no_headers, events: device_table([d for _, d in changed], wide=output.wide,
                                                                   no_headers=no_headers, events=events),
                         [kind for kind, _ in changed])
        new = [f for f in now.findings if (f.code, f.message) not in findings]
        findings.update((f.code, f.message) for f in now.findings)
        if new:  # stdout stays a stream of rows (or documents); a finding is told as it appears
            from kubectl_dra.printers.findings import findings_lines
            from kubectl_dra.text import wrap_lines

            env.error("".join(line + "\n" for line in wrap_lines(findings_lines(new, Style(False)))))
            env.stderr.flush()

    return follow(stream, merged(watches, lambda: until is not None and opened.source.session.clock() >= until),
                  handle)


def _read_rule(path: Path) -> tuple:
    """The rule as the server would store it, and the warnings it would give (errors: InputError)."""
    from kubectl_dra.errors import InputError
    from kubectl_dra.kube.snapshot import read_documents
    from kubectl_dra.model.registry import parse_object
    from kubectl_dra.model.resource import DeviceTaintRule

    documents = [d for d in read_documents(path, allow_stdin=True) if isinstance(d, dict)]  # "-f -": stdin
    rules = [d for d in documents if d.get("kind") == "DeviceTaintRule"]
    if len(rules) != 1:
        raise InputError(f"{path}: expected one DeviceTaintRule, found {len(rules)}")
    raw = rules[0]
    if not str(raw.get("apiVersion", "")).startswith("resource.k8s.io/"):
        raise InputError(f"{path}: a DeviceTaintRule is resource.k8s.io/v1 (found apiVersion {raw.get('apiVersion')!r})")
    rule = parse_object(raw)
    if not isinstance(rule, DeviceTaintRule) or not rule.name:
        raise InputError(f"{path}: not a DeviceTaintRule this tool can read (metadata.name is required)")
    from kubectl_dra.taints.validation import rule_problems

    errors, unknown = rule_problems(raw, rule)
    if errors:  # the server refuses it: there is nothing it would do
        raise InputError(f'{path}: DeviceTaintRule "{rule.name}" is invalid (the API server refuses it): '
                         + "; ".join(errors))
    warnings = [f"{path}: {w}: the API server drops it and stores the rule without it (kubectl apply's default "
                "--validate=strict refuses it); this dry run evaluates the rule without it" for w in unknown]
    return rule, warnings
