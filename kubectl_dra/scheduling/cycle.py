"""One scheduling attempt, as kube-scheduler v1.37.2's ``findNodesThatFitPod`` runs it, and the
FitError message it writes (``FitError.Error`` in pkg/scheduler/framework/types.go).

PreFilter runs every plugin in profile order: Skip drops the plugin's Filter; an
UnschedulableAndUnresolvable status ends the cycle at once, an Unschedulable one is kept while the
rest still run; node-name results are intersected. Filter runs per node in order and stops at the
first rejection (``RunFilterPlugins``), with the nominated pods of equal or higher priority added
first and, if that passes, once more without them (``RunFilterPluginsWithNominatedPods``).

Unlike the scheduler, every node is filtered even after enough feasible ones are found
(``percentageOfNodesToScore`` only matters when the pod fits, and then no message is written),
and a node's later plugins are run too, so a person sees what else would refuse it
(``NodeVerdict.also``); neither changes the scheduler's words.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubectl_dra.scheduling.framework import ERROR, SUCCESS, UNRESOLVABLE, Cycle, NodeInfo, Plugin, Status

NO_NODES = "no nodes available to schedule pods"  # ErrNoNodesAvailable, pkg/scheduler/scheduler.go
NO_NODE_AVAILABLE = "0/{} nodes are available"  # NoNodeAvailableMsg, pkg/scheduler/framework/types.go


@dataclass
class NodeVerdict:
    node: str
    status: Status  # the scheduler's: the first plugin that refused (success when none did)
    also: list[Status] = field(default_factory=list)  # later plugins that would refuse it too
    undetermined: list[Status] = field(default_factory=list)  # plugins this tool cannot decide here

    @property
    def fits(self) -> bool | None:
        """True: every filter passed; False: the scheduler refuses it; None: cannot tell."""
        if self.status.rejected or self.status.code == ERROR:
            return False
        return None if self.undetermined else True


@dataclass
class Attempt:
    """What the scheduler would conclude now: the message (None when the pod fits somewhere, or
    when ``known`` is False because some node cannot be decided), every node's verdict, and what
    stopped the cycle before Filter."""

    message: str | None
    known: bool = True
    nodes: list[NodeVerdict] = field(default_factory=list)
    pre_filter: Status | None = None  # a PreFilter rejection or error (then no node was filtered)
    error: str | None = None  # the scheduler fails with an error instead of a FitError
    undetermined: list[Status] = field(default_factory=list)  # PreFilter-level "cannot tell"
    possible_error: str | None = None  # an Error a filter this tool cannot decide may return instead


def run(cycle: Cycle, plugins: list[Plugin]) -> Attempt:
    if not cycle.nodes:
        return Attempt(message=NO_NODES)
    states, skipped, narrowed, pre, undetermined = _pre_filter(cycle, plugins)
    if pre is not None and pre.code == ERROR:
        return Attempt(message=None, pre_filter=pre, error=pre.message, undetermined=undetermined)
    if pre is not None and pre.rejected:
        # every node gets the same status; the message is the PreFilter's, said once
        return Attempt(message=f"{NO_NODE_AVAILABLE.format(len(cycle.nodes))}: {pre.message}.",
                       nodes=[NodeVerdict(n.name, pre) for n in cycle.nodes], pre_filter=pre,
                       undetermined=undetermined)
    active = [p for p in plugins if p.NAME not in skipped]
    verdicts: list[NodeVerdict] = []
    for node in cycle.nodes:
        if narrowed is not None and node.name not in narrowed[0]:
            verdicts.append(NodeVerdict(node.name, Status(UNRESOLVABLE, [
                f"node(s) didn't satisfy plugin(s) {_go_list(narrowed[1])}"], plugin=",".join(narrowed[1]))))
            continue
        verdicts.append(_filter_with_nominated(cycle, active, states, node))
    for verdict in verdicts:  # a PreFilter this tool could not decide leaves no node known to fit
        if verdict.fits:
            verdict.undetermined.extend(undetermined)
    errors = [v.status for v in verdicts if v.status.code == ERROR]
    if errors:
        return Attempt(message=None, nodes=verdicts, error=errors[0].message, undetermined=undetermined)
    possible = next((f'running "{u.plugin}" filter plugin: {u.possible_error}' for v in verdicts
                     for u in v.undetermined if u.possible_error), None)
    if any(v.fits for v in verdicts) and possible is None:
        return Attempt(message=None, nodes=verdicts, undetermined=undetermined)
    if undetermined or possible or any(v.fits is None for v in verdicts):
        return Attempt(message=None, known=False, nodes=verdicts, undetermined=undetermined, possible_error=possible)
    return Attempt(message=fit_error(len(cycle.nodes), verdicts), nodes=verdicts)


def _pre_filter(cycle: Cycle, plugins: list[Plugin]):
    states: dict[str, object] = {}
    undetermined: list[Status] = []
    skipped: set[str] = set()
    names: set[str] | None = None
    with_nodes: list[str] = []
    kept: Status | None = None
    for plugin in plugins:
        result = plugin.pre_filter(cycle)
        status = result.status
        status.plugin = plugin.NAME
        if status.code == "Skip":
            skipped.add(plugin.NAME)
            continue
        states[plugin.NAME] = result.state
        if status.undetermined is not None:
            undetermined.append(status)
        if status.code == UNRESOLVABLE:
            return states, skipped, None, status, undetermined
        if status.code == "Unschedulable":
            kept = kept or status
            continue
        if status.code == ERROR:
            return states, skipped, None, Status(ERROR, [f'running PreFilter plugin "{plugin.NAME}": {status.message}'],
                                                 plugin=plugin.NAME), undetermined
        if result.node_names is not None:
            with_nodes.append(plugin.NAME)
            names = set(result.node_names) if names is None else names & result.node_names
            if not names:
                plural = sorted(with_nodes)
                message = (f"node(s) didn't satisfy plugin {plural[0]}" if len(plural) == 1 else
                           f"node(s) didn't satisfy plugin(s) {_go_list(plural)} simultaneously")
                return states, skipped, None, Status(UNRESOLVABLE, [message], plugin=",".join(plural)), undetermined
    narrowed = (names, sorted(with_nodes)) if names is not None else None
    return states, skipped, narrowed, kept, undetermined


def _go_list(items: list[str]) -> str:
    """How Go's %v prints a []string: ``[a b]``."""
    return "[" + " ".join(items) + "]"


def _run_filters(cycle: Cycle, plugins: list[Plugin], states: dict, node: NodeInfo) -> NodeVerdict:
    first: Status | None = None
    also: list[Status] = []
    undetermined: list[Status] = []
    for plugin in plugins:
        status = plugin.filter(cycle, states.get(plugin.NAME), node)
        status.plugin = plugin.NAME
        if status.undetermined is not None:
            if first is None:  # after a refusal, what a later plugin would say does not matter
                undetermined.append(status)
            continue
        if status.code == SUCCESS:
            continue
        if status.code == ERROR:
            error = Status(ERROR, [f'running "{plugin.NAME}" filter plugin: {status.message}'], plugin=plugin.NAME)
            if first is None:
                return NodeVerdict(node.name, error, also, undetermined)
            also.append(error)
            continue
        if first is None:
            first = status
            if undetermined:
                # a plugin before this one could not be decided: the scheduler might have stopped there
                return NodeVerdict(node.name, Status(SUCCESS), [first, *also], undetermined)
        else:
            also.append(status)
    return NodeVerdict(node.name, first or Status(SUCCESS), also, undetermined)


def _filter_with_nominated(cycle: Cycle, plugins: list[Plugin], states: dict, node: NodeInfo) -> NodeVerdict:
    nominated = [p for p in cycle.nominated.get(node.name, ())
                 if p.priority >= cycle.pod.priority and p.pod.uid != cycle.pod.pod.uid]
    if not nominated:
        return _run_filters(cycle, plugins, states, node)
    with_pods = node.with_pods(nominated)
    added = dict(states)
    for plugin in plugins:
        if plugin.NAME in added:
            state = added[plugin.NAME]
            for pod in nominated:
                state = plugin.add_pod(cycle, state, pod, with_pods)
            added[plugin.NAME] = state
    first = _run_filters(cycle, plugins, added, with_pods)
    if not first.status.success or first.undetermined:
        return first
    return _run_filters(cycle, plugins, states, node)


def fit_error(num_nodes: int, verdicts: list[NodeVerdict]) -> str:
    """``FitError.Error()`` without PostFilter's part: "0/N nodes are available: " then each reason
    with the number of nodes that gave it, sorted as strings, joined by ", ", ending in "."."""
    counts: dict[str, int] = {}
    for verdict in verdicts:
        for reason in verdict.status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
    message = NO_NODE_AVAILABLE.format(num_nodes) + ":"
    if histogram:
        message += f" {', '.join(histogram)}."
    return message
