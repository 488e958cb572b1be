"""Which filter plugins run, in which order, with which arguments: kube-scheduler v1.37.2's
default profile (pkg/scheduler/apis/config/v1/default_plugins.go, with the feature gates on by
default at that version), or a profile read from a KubeSchedulerConfiguration file.

A profile this tool cannot model fully (a plugin it does not know, an extender, a pod whose
``schedulerName`` has no profile) is not guessed at: what is missing is listed, and every node's
verdict becomes undetermined.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from kubectl_dra.allocation.bound import BoundError, SearchBound, filter_timeout
from kubectl_dra.errors import InputError
from kubectl_dra.scheduling.framework import Plugin
from kubectl_dra.versions import MODELLED, MODELLED_MINOR, SCHEDULER, known, older

DEFAULT_SCHEDULER = "default-scheduler"

# The filter (and PreFilter) order of the default MultiPoint list at v1.37.2. DynamicResources is
# inserted before DefaultPreemption (applyDynamicResources); NodeDeclaredFeatures is appended (GA,
# locked on). GangScheduling and the workload plugins (gates off by default) have no filter.
DEFAULT_FILTERS = (
    "NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
    "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
    "InterPodAffinity", "DynamicResources", "NodeDeclaredFeatures",
)


def default_filters(release: int = MODELLED_MINOR) -> tuple[str, ...]:
    """The default profile's filter order at a release (docs/kubernetes/versions.md §4.1): before 1.37
    NodeUnschedulable runs before NodeName; NodeDeclaredFeatures joins the profile in 1.36 (beta, on)."""
    filters = list(DEFAULT_FILTERS)
    if older(SCHEDULER, "NodeName order", release):
        filters[0:2] = ["NodeUnschedulable", "NodeName"]
    if older(SCHEDULER, "NodeDeclaredFeatures", release):
        filters.remove("NodeDeclaredFeatures")
    return tuple(filters)


# plugins of the default list that have no Filter or PreFilter (harmless to enable or disable)
NO_FILTER = frozenset({"SchedulingGates", "PrioritySort", "DefaultPreemption", "NodeResourcesBalancedAllocation",
                       "ImageLocality", "DefaultBinder", "GangScheduling", "PodGroupPodsCount",
                       "TopologyPlacementGenerator"})

_MODULES = {  # plugin name -> the module of this package that holds it
    "NodeName": "nodename", "NodeUnschedulable": "nodename", "TaintToleration": "tainttoleration",
    "NodeAffinity": "nodeaffinity", "NodePorts": "nodeports", "NodeResourcesFit": "fit",
    "VolumeRestrictions": "volumes", "NodeVolumeLimits": "volumes", "VolumeBinding": "volumes",
    "VolumeZone": "volumes", "PodTopologySpread": "topologyspread", "InterPodAffinity": "interpodaffinity",
    "DynamicResources": "dra", "NodeDeclaredFeatures": "declaredfeatures",
}


class ProfileError(InputError, ValueError):
    """The configuration file cannot be read as a KubeSchedulerConfiguration (a bad --scheduler-config:
    one line, exit 3, like any other file that cannot be understood)."""


@dataclass
class Profile:
    name: str = DEFAULT_SCHEDULER
    filters: list[str] = field(default_factory=lambda: list(DEFAULT_FILTERS))
    args: dict[str, dict] = field(default_factory=dict)
    unmodelled: list[tuple[str, str]] = field(default_factory=list)  # (plugin or "extender", why)
    source: str = f"the default profile of kube-scheduler {MODELLED} (no --scheduler-config given)"
    release: int = MODELLED_MINOR  # the scheduler's minor, whose default gates the filters follow
    _bound: SearchBound | None = field(default=None, repr=False)

    def search_bound(self) -> SearchBound:
        """How long each node's allocation search may run (DynamicResources ``filterTimeout``): one
        object per profile, so the filters and the allocation section share one total."""
        if self._bound is None:
            configured = self.source.startswith("profile ")
            seconds, source = filter_timeout(self.args.get("DynamicResources") or {},
                                             self.source if configured else None)
            self._bound = SearchBound(filter_timeout=seconds, source=source)
        return self._bound

    def plugins(self) -> list[Plugin]:
        out = []
        for name in self.filters:
            module = _MODULES.get(name)
            if module is None:
                continue
            found = _plugin_class(module, name)
            if found is None:
                self.unmodelled.append((name, f"the {name} filter is not modelled by this version of kubectl-dra"))
                continue
            out.append(found())
        return out


def _plugin_class(module: str, name: str) -> type[Plugin] | None:
    # every module of _MODULES is part of this package: failing to import one is a broken install,
    # and must surface as an error, never as "not modelled" (which would drop a filter silently)
    loaded = importlib.import_module(f"kubectl_dra.scheduling.{module}")
    for value in vars(loaded).values():
        if isinstance(value, type) and issubclass(value, Plugin) and value.NAME == name:
            return value
    return None


def default_profile(release: int | None = None) -> Profile:
    """kube-scheduler's default profile at ``release`` (a minor from 1.34 to 1.37; None or a release not
    known: 1.37.2's, which the answer then says it could not claim)."""
    if release is None or not known(release) or release == MODELLED_MINOR:
        return Profile()
    return Profile(filters=list(default_filters(release)), release=release,
                   source=f"the default profile of kube-scheduler 1.{release} (no --scheduler-config given)")


def from_documents(documents: list, scheduler_name: str, where: str, release: int | None = None) -> Profile:
    """The profile for ``scheduler_name`` in a file's documents (empty ones skipped), which must be
    exactly one KubeSchedulerConfiguration: with several, which one the scheduler runs is unknown."""
    documents = [d for d in documents if d is not None]
    if len(documents) != 1:
        raise ProfileError(f"{where}: expected one KubeSchedulerConfiguration document, found {len(documents)}")
    return from_config(documents[0], scheduler_name, where, release)


def from_config(config: Any, scheduler_name: str, where: str, release: int | None = None) -> Profile:
    """The profile for ``scheduler_name`` in a KubeSchedulerConfiguration (``config``, parsed YAML), on
    the default list of the scheduler's ``release`` (None, or one not known: 1.37's)."""
    release = release if known(release) else MODELLED_MINOR
    if not isinstance(config, dict) or config.get("kind") != "KubeSchedulerConfiguration":
        raise ProfileError(f"{where}: not a KubeSchedulerConfiguration (kind is {_kind(config)})")
    version = str(config.get("apiVersion", ""))
    if not version.startswith("kubescheduler.config.k8s.io/"):
        raise ProfileError(f'{where}: apiVersion "{version}" is not kubescheduler.config.k8s.io/v1')
    profiles = config.get("profiles") or [{"schedulerName": DEFAULT_SCHEDULER}]
    if not isinstance(profiles, list) or not all(isinstance(p, dict) for p in profiles):
        raise ProfileError(f"{where}: profiles must be a list of objects")
    chosen = next((p for p in profiles if (p.get("schedulerName") or DEFAULT_SCHEDULER) == scheduler_name), None)
    profile = Profile(name=scheduler_name, source=f"profile {scheduler_name} of {where}", release=release)
    if chosen is None:
        profile.filters = []
        profile.unmodelled.append(("profile", f'{where} has no profile for schedulerName "{scheduler_name}": '
                                              "no scheduler of that configuration takes this pod"))
        return profile
    plugins = chosen.get("plugins") or {}
    if not isinstance(plugins, dict):
        raise ProfileError(f"{where}: profiles[].plugins must be an object")
    filters = list(default_filters(release))
    for point in ("multiPoint", "preFilter", "filter"):
        filters = _merge(filters, plugins.get(point) or {}, point, where, profile)
    profile.filters = filters
    for entry in chosen.get("pluginConfig") or []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            profile.args[entry["name"]] = entry.get("args") or {}
    try:  # the scheduler refuses to start with a bad one; so does this tool
        filter_timeout(profile.args.get("DynamicResources") or {}, profile.source)
    except BoundError as exc:
        raise ProfileError(str(exc)) from None
    if config.get("extenders"):
        profile.unmodelled.append(("extender", f"{where} configures scheduler extenders; what they filter is "
                                               "not known to this tool"))
    return profile


def _merge(filters: list[str], point: Any, name: str, where: str, profile: Profile) -> list[str]:
    """``mergePluginSet``: disabled ones leave ("*": all defaults), enabled ones are appended (a
    default one re-enabled keeps its place)."""
    if not isinstance(point, dict):
        raise ProfileError(f"{where}: plugins.{name} must be an object")
    disabled = {p.get("name") for p in point.get("disabled") or [] if isinstance(p, dict)}
    kept = [] if "*" in disabled else [f for f in filters if f not in disabled]
    for plugin in point.get("enabled") or []:
        plugin_name = plugin.get("name") if isinstance(plugin, dict) else None
        if not isinstance(plugin_name, str) or plugin_name in NO_FILTER:
            continue
        if plugin_name not in _MODULES:
            profile.unmodelled.append((plugin_name, f"{where} enables plugin {plugin_name}, which kubectl-dra "
                                                    "does not know; it may filter nodes"))
            continue
        if plugin_name in kept:
            continue
        if name in ("multiPoint", "filter") or plugin_name in filters:
            kept.append(plugin_name)
    return kept


def _kind(config: Any) -> str:
    return repr(config.get("kind")) if isinstance(config, dict) else type(config).__name__
