"""The documents in docs/ are the plan of the house, so they are held to the code:

- every citation of a document (``docs/<path>.md``, optionally ``§N[.M]`` or ``#anchor``) in code,
  tests, scripts, manifests and the README names a file and a section that exist, and nothing cites
  the documents that used to live outside the repository (DESIGN, the reference notes);
- docs/architecture.md names every top-level package and module of both programs, and every source
  path the documents name exists;
- docs/contracts.md shows each JSON document's keys exactly as the result models serialize them,
  and every exit code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
THIS = Path(__file__).resolve()

# -- citations -----------------------------------------------------------------------------------------------

# docs/<name>.md or docs/kubernetes/<name>.md (an upstream path such as docs/user/x.md is no citation of ours)
CITATION = re.compile(r"(?<![\w/.-])docs/((?:kubernetes/)?[\w-]+\.md)(#[\w-]+)?")
LINK = re.compile(r"\]\(([\w./-]*\.md)?(#[\w-]+)?\)")
SECTION = re.compile(r"§\s?([0-9]+(?:\.[0-9]+)*|[a-z](?:\.[0-9]+)*)\b")
# The documents that lived outside the repository, cited by name (not as docs/kubernetes/<name>.md),
# "DESIGN §4.3" / "DESIGN.md", "reference §4.2", or by their path on the machine they were written on.
OLD_NOTES = ("kubelet-cgroups", "dra-apis", "node-state", "dra-landscape", "nodeoverlay", "ecosystem", "real-node")
OLD_CITATION = re.compile(r"(?<!docs/kubernetes/)\b(?:" + "|".join(OLD_NOTES) + r")\.md"
                          r"|\bDESIGN(?:\.md|\s*§)|\breference\s*§|/work/shared|\bshared/reference\b")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
NUMBER = re.compile(r"^\(?([0-9]+(?:\.[0-9]+)*|[a-z](?:\.[0-9]+)*)[.)]?(?:\s|$)")


def scanned_files() -> list[Path]:
    """Code, tests, scripts, manifests, examples' prose and the README (generated data aside)."""
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "pyproject.toml"]
    for top in ("kubectl_dra", "node_agent", "tests", "scripts", "manifests", "examples", "testbed"):
        for path in sorted((ROOT / top).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".json", ".pyc", ".tar", ".gz"):
                continue
            if top == "examples" and path.suffix != ".md":
                continue
            files.append(path)
    return [f for f in files if f.exists() and f.resolve() != THIS]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def sections(doc: Path) -> tuple[set[str], set[str]]:
    """The section numbers (``3``, ``3.4``, ``a.1``) and the anchors of a Markdown file's headings."""
    numbers, anchors, fenced = set(), set(), False
    for line in doc.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else HEADING.match(line)
        if heading:
            text = heading.group(2)
            anchors.add(slug(text))
            number = NUMBER.match(text)
            if number:
                numbers.add(number.group(1))
    return numbers, anchors


def citation_errors(text: str, where: str) -> list[str]:
    """What is wrong with the citations in ``text``: a cited file or section that does not exist, a
    ``§`` that belongs to no cited document on its line, a citation of the old external documents."""
    errors = []
    for number, line in enumerate(text.splitlines(), 1):
        at = f"{where}:{number}"
        for old in OLD_CITATION.finditer(line):
            errors.append(f"{at}: cites a document outside the repository: {old.group(0)!r} (cite docs/ instead)")
        cites = list(CITATION.finditer(line))
        for cite in cites:
            doc = DOCS / cite.group(1)
            if not doc.is_file():
                errors.append(f"{at}: docs/{cite.group(1)} does not exist")
            elif cite.group(2) and cite.group(2)[1:] not in sections(doc)[1]:
                errors.append(f"{at}: docs/{cite.group(1)} has no heading with anchor {cite.group(2)}")
        for section in SECTION.finditer(line):
            owner = next((c for c in reversed(cites) if c.end() <= section.start()), None)
            if owner is None:
                errors.append(f"{at}: §{section.group(1)} cites no document (write docs/<file>.md §N)")
                continue
            doc = DOCS / owner.group(1)
            if doc.is_file() and section.group(1) not in sections(doc)[0]:
                errors.append(f"{at}: docs/{owner.group(1)} has no section {section.group(1)}")
    return errors


def test_every_citation_resolves_inside_the_repository():
    errors = []
    for path in scanned_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        errors += citation_errors(text, str(path.relative_to(ROOT)))
    assert errors == []


def test_every_link_between_the_documents_resolves():
    """docs/ links its files to each other relatively (``[contracts](contracts.md#3-json-documents)``)."""
    errors = []
    for doc in sorted(DOCS.rglob("*.md")):
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for link in LINK.finditer(line):
                target = (doc.parent / link.group(1)).resolve() if link.group(1) else doc
                if not target.is_file():
                    errors.append(f"{doc.relative_to(ROOT)}:{number}: {link.group(1)} does not exist")
                elif link.group(2) and link.group(2)[1:] not in sections(target)[1]:
                    errors.append(f"{doc.relative_to(ROOT)}:{number}: {link.group(1) or ''}{link.group(2)}: no such heading")
    assert errors == []


@pytest.mark.parametrize("text, wrong", [
    ("# docs/kubernetes/kubelet-cgroups.md §3.4", None),
    ("(docs/kubernetes/kubelet-cgroups.md §3, §5.1, §5.10)", None),
    ("docs/kubernetes/nodeoverlay.md §3.2 and §6.12", None),
    ("docs/kubernetes/dra-landscape.md §a.1", None),
    ("docs/contracts.md#2-exit-codes", None),
    ("docs/kubernetes/kubelet-cgroups.md §3.99", "has no section 3.99"),
    ("docs/kubernetes/kubelet-cgroups.md §5, dra-apis.md §1.9", "outside the repository"),
    ("docs/kubernetes/no-such-topic.md §1", "does not exist"),
    ("docs/contracts.md#no-such-heading", "no heading with anchor"),
    ("-- §6.1 ordering --", "cites no document"),
    ("(DESIGN §4.3)", "outside the repository"),
    ("snapshot forms (DESIGN.md §4.1)", "outside the repository"),
    ("Karpenter's cases (reference §4.2 V1-V14)", "outside the repository"),
    ("formulas of kubelet-cgroups.md", "outside the repository"),
    ("as summarised in `/work/shared/reference/dra-apis.md`", "outside the repository"),
])
def test_the_citation_checker(text, wrong):
    errors = citation_errors(text, "x")
    assert (errors == []) if wrong is None else any(wrong in e for e in errors), errors


def test_a_heading_gives_its_number_and_githubs_anchor(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text("# T\n## 3. cgroup v2 conversions\n### 3.4 Write formats\n## (b) API fields\n### a.1 Gates\n"
                   "```\n## 9. not a heading\n```\n")
    assert sections(doc) == ({"3", "3.4", "b", "a.1"},
                             {"t", "3-cgroup-v2-conversions", "34-write-formats", "b-api-fields", "a1-gates"})


# -- architecture ---------------------------------------------------------------------------------------------

def top_level(package: str) -> list[str]:
    return sorted(f"{p.name}/" if p.is_dir() else p.name for p in (ROOT / package).iterdir()
                  if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name != "__init__.py"))


@pytest.mark.parametrize("package", ["kubectl_dra", "node_agent"])
def test_architecture_names_every_top_level_package_and_module(package):
    text = (DOCS / "architecture.md").read_text()
    assert [name for name in top_level(package) if f"`{name}`" not in text] == []


def named_paths(text: str) -> set[str]:
    """The source files and packages a document names in backticks: ``kubectl_dra/cli/verify.py``,
    ``node_agent/scan.py``, or relative to kubectl_dra as ``cli/verify.py`` and ``claims/``."""
    packages = {name.rstrip("/") for name in top_level("kubectl_dra") if name.endswith("/")}
    found = set()
    for token in re.findall(r"`([\w./-]+)`", text):
        head = token.split("/", 1)[0]
        if "/" not in token or not (token.endswith((".py", "/")) or "." not in token.rsplit("/", 1)[-1]):
            continue
        if head in ("kubectl_dra", "node_agent", "tests", "scripts", "manifests", "examples", "docs"):
            found.add(token)
        elif head in packages:
            found.add(f"kubectl_dra/{token}")
    return found


@pytest.mark.parametrize("doc", ["architecture.md", "contracts.md", "kubernetes/README.md"])
def test_every_source_path_the_documents_name_exists(doc):
    assert sorted(p for p in named_paths((DOCS / doc).read_text()) if not (ROOT / p).exists()) == []


def test_named_paths():
    assert named_paths("`cli/verify.py`, `claims/`, `node_agent/scan.py`, `allocator.py`, `-o json`, "
                       "`resource.k8s.io/v1`, `tests/unit/test_layering.py`") == {
        "kubectl_dra/cli/verify.py", "kubectl_dra/claims/", "node_agent/scan.py", "tests/unit/test_layering.py"}


# -- contracts ------------------------------------------------------------------------------------------------

def documents() -> dict[str, type]:
    """Every result document by kind, and the parts that several of them share, by name."""
    from kubectl_dra.allocation.document import Allocation
    from kubectl_dra.claims.document import ClaimExplanation
    from kubectl_dra.claims.summary import ClaimList
    from kubectl_dra.document import Finding
    from kubectl_dra.nodes.document import NodeExplanation
    from kubectl_dra.overlays.document import OverlayExplanation
    from kubectl_dra.pods.document import PodExplanation
    from kubectl_dra.scheduling.document import Scheduling
    from kubectl_dra.taints.document import TaintExplanation
    from kubectl_dra.devices.document import DeviceAvailability
    from kubectl_dra.verify.report import NodeEnforcementReport, VerifyResult
    from kubectl_dra.versions import Versions

    kinds = [ClaimList, ClaimExplanation, PodExplanation, NodeExplanation, OverlayExplanation, TaintExplanation,
             DeviceAvailability,
             NodeEnforcementReport, VerifyResult]
    return {**{k.model_fields["kind"].default: k for k in kinds},
            "Finding": Finding, "Allocation": Allocation, "Scheduling": Scheduling, "Versions": Versions}


def shape(model: type, shared: dict[str, type]) -> str:
    """The keys of ``model``'s JSON document, nested, with their JSON types; a part that has its own
    block (``shared``) is named instead of repeated."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(model).json_schema(by_alias=True, mode="serialization")
    defs = schema.get("$defs", {})
    names = {m.__name__: name for name, m in shared.items() if m is not model}

    def typ(t: dict, indent: int) -> str:
        if "$ref" in t:
            name = t["$ref"].rsplit("/", 1)[-1]
            return names[name] if name in names else typ(defs[name], indent)
        if "anyOf" in t:
            return " | ".join(typ(x, indent) for x in t["anyOf"])
        if "enum" in t:
            return "|".join(map(str, t["enum"]))
        kind = t.get("type")
        if kind == "array":
            return f"[{typ(t.get('items', {}), indent)}]"
        if kind == "object" and "properties" in t:
            return "{\n" + keys(t, indent + 1) + "  " * indent + "}"
        if kind == "object":
            extra = t.get("additionalProperties")
            return "{str: " + (typ(extra, indent) if isinstance(extra, dict) else "any") + "}"
        return "null" if kind == "null" else kind or "any"

    def keys(t: dict, indent: int) -> str:
        lines = []
        for name, prop in t["properties"].items():
            value = prop.get("default") if name in ("apiVersion", "kind") and isinstance(prop.get("default"), str) else None
            lines.append("  " * indent + f"{name}: " + (f'"{value}"' if value else typ(prop, indent)) + "\n")
        return "".join(lines)

    return keys(schema, 0)


SHAPE_BLOCK = re.compile(r"<!-- shape: (\w+) -->\n```[a-z]*\n(.*?)```", re.S)


def test_contracts_show_every_document_as_the_models_serialize_it():
    shown = dict(SHAPE_BLOCK.findall((DOCS / "contracts.md").read_text()))
    shared = documents()
    expected = {name: shape(model, shared) for name, model in shared.items()}
    wrong = {name: text for name, text in expected.items() if shown.get(name) != text}
    assert not wrong, "docs/contracts.md differs from the models; the blocks should read:\n" + "\n".join(
        f"<!-- shape: {name} -->\n```yaml\n{text}```" for name, text in wrong.items())
    assert set(shown) <= set(expected)


def test_contracts_list_every_exit_code():
    from kubectl_dra.exitcodes import ExitStatus

    text = (DOCS / "contracts.md").read_text()
    assert [s for s in ExitStatus if not re.search(rf"^\| {s.value} \|", text, re.M)] == []
