"""``kubectl dra taints`` once its flags are parsed: read the rule of --dry-run -f (refused as the
API server would refuse it), read the slices, rules, claims and pods, explain the taints
(taints/explain.py), print the TaintExplanation, exit 1 when pods are or would be evicted. With
-w: the table, then the rows of each device that changed (commands/watching.py)."""

from __future__ import annotations

from pathlib import Path

from kubectl_dra.commands import watching
from kubectl_dra.commands.inputs import claim_user_pods, open_for, read_versions, report_problems, require_kinds
from kubectl_dra.env import Environment
from kubectl_dra.errors import ApiError, InputError
from kubectl_dra.exitcodes import ExitStatus
from kubectl_dra.flags.watch import WatchOptions
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.kube.snapshot import read_documents
from kubectl_dra.kube.sources import Opened
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.model.registry import parse_object
from kubectl_dra.model.resource import DeviceTaintRule, ResourceSlice
from kubectl_dra.printers.documents import as_document
from kubectl_dra.printers.findings import findings_lines
from kubectl_dra.printers.options import OutputOptions
from kubectl_dra.printers.output import emit
from kubectl_dra.printers.style import Style
from kubectl_dra.printers.taints import device_table, taint_table
from kubectl_dra.taints.document import TaintExplanation
from kubectl_dra.taints.explain import evicts, explain_taints, taint_versions
from kubectl_dra.taints.validation import rule_problems
from kubectl_dra.text import wrap_lines


def run(env: Environment, *, kube: KubeOptions, output: OutputOptions, filename: Path | None,
        watch: WatchOptions) -> int:
    """The taint table (or its document), of the cluster or, with ``filename``, of that rule as if
    applied; with -w, then its changes. Exit 1 when pods are or would be evicted, 4 when something
    could not be read (3, raised, when the slices could not, or the rule is refused)."""
    rule, warnings = _read_rule(filename) if filename is not None else (None, [])
    for warning in warnings:  # as kubectl prints the server's warnings
        env.error(f"Warning: {warning}")
    env.color = output.color
    opened = open_for(env, kube)
    if watch.on:
        return watching.run(lambda: _watch(env, opened, output, watch))
    inventory = opened.source.read(_reads())
    require_kinds(env, inventory, ResourceSlice)
    result = explain_taints(inventory, env.now(), dry_run=rule)
    result.versions = taint_versions(read_versions(opened, inventory.of_kind("Node")))
    emit(env, result, output, text=lambda: taint_table(result, wide=output.wide, no_headers=output.no_headers,
                                                       style=Style(env.use_color)))
    status = report_problems(env, inventory)
    for line in _unevaluated_rules(result, inventory):
        env.error(f"error: {line}")
        status = ExitStatus.PARTIAL
    if status == ExitStatus.OK and evicts(result):
        status = ExitStatus.DIVERGED
    return status


def _unevaluated_rules(result: TaintExplanation, inventory) -> list[str]:
    """The DeviceTaintRules the view could not evaluate: explain_taints puts them after the read's
    own problems."""
    return result.problems[len(inventory.problems):]


def _say_once(stream: watching.RowStream, lines: list[str]) -> None:
    """Each line once for the whole watch, as the read problems are (exit 4)."""
    for line in lines:
        if line not in stream.said:
            stream.said.add(line)
            stream.error(line)


def _reads() -> list[ReadRequest]:
    """Every kind the taint view is computed from."""
    return [ReadRequest(ResourceSlice, keep_raw=False), ReadRequest(ResourceClaim, None, keep_raw=False),
            claim_user_pods(None), ReadRequest(DeviceTaintRule, required=False, keep_raw=False)]


def _watch(env: Environment, opened: Opened, output: OutputOptions, watch: WatchOptions) -> ExitStatus:
    """The table, then the rows of each device whose rows changed. The kinds taints come from
    (slices, rules) and the claims that hold tainted devices are watched; what arrives together is
    one change, after which every kind is read again and the view computed anew, exactly as
    without -w, so a row is never computed from a partial picture. If that read fails the rows
    stay as they were and stderr says so (exit 4)."""
    # start-up: offline - kube/watch.py brings kube/live.py and kube/client.py (~7 ms); -w is never offline
    from kubectl_dra.kube.watch import KindWatch

    stream = watching.RowStream(env, output, watch.events)
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
    _say_once(stream, _unevaluated_rules(result, inventory))
    until = watching.deadline(opened)
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
        _say_once(stream, _unevaluated_rules(now, fresh))
        current = {d.device: d for d in now.devices}
        changed = watching.changes(shown, current)
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
            env.error("".join(line + "\n" for line in wrap_lines(findings_lines(new, Style(False)))))
            env.stderr.flush()

    return watching.follow(stream, watching.merged(
        watches, lambda: until is not None and opened.source.session.clock() >= until), handle)


def _read_rule(path: Path) -> tuple[DeviceTaintRule, list[str]]:
    """The rule as the server would store it, and the warnings it would give (errors: InputError)."""
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
    errors, unknown = rule_problems(raw, rule)
    if errors:  # the server refuses it: there is nothing it would do
        raise InputError(f'{path}: DeviceTaintRule "{rule.name}" is invalid (the API server refuses it): '
                         + "; ".join(errors))
    warnings = [f"{path}: {w}: the API server drops it and stores the rule without it (kubectl apply's default "
                "--validate=strict refuses it); this dry run evaluates the rule without it" for w in unknown]
    return rule, warnings
