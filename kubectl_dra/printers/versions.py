"""The releases an answer was modelled on, said once on stderr beside a text view, and only when the
cluster runs another release (``-o json|yaml`` always carry them in ``versions``)."""

from __future__ import annotations

from kubectl_dra.versions import Versions


def version_lines(versions: Versions | None) -> list[str]:
    if versions is None or not versions.differs():
        return []
    found = []
    if versions.api_server:
        found.append(f"API server {versions.api_server}")
    found += [f"kubelet {version} ({count} node{'s' if count != 1 else ''})"
              for version, count in versions.kubelets.items()]
    lines = [f"note: modelled on Kubernetes {versions.modelled_on}; this cluster runs {', '.join(found) or 'releases not known'}"]
    lines += [f"note: {line}" for line in versions.assumed]
    lines += [f"note: applied {line}" for line in versions.applied]
    lines += [f"note: not known for this cluster (modelled on {versions.modelled_on}, not claimed): {line}"
              for line in versions.not_known]
    return lines
