"""scripts/krew_release.py: the krew manifest rendered from .krew.yaml the way krew-release-bot
renders it, and the archive packed so krew can extract it (tests/release/test_krew.py runs the
real krew on the result; these are the renderer's own rules, fast)."""

from __future__ import annotations

import importlib.util
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("krew_release", ROOT / "scripts" / "krew_release.py")
krew_release = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(krew_release)

SHA = "ab" * 32


def test_the_repository_template_renders_to_a_manifest_for_the_tag():
    rendered = yaml.safe_load(krew_release.render((ROOT / ".krew.yaml").read_text(), "v1.2.3", SHA))
    (platform,) = rendered["spec"]["platforms"]
    assert rendered["spec"]["version"] == "v1.2.3"
    assert platform["uri"].endswith("/releases/download/v1.2.3/kubectl-dra_v1.2.3_linux_amd64.tar.gz")
    assert platform["sha256"] == SHA
    assert platform["bin"] == "kubectl-dra"
    assert {"from": "LICENSE", "to": "."} in platform["files"]


@pytest.mark.parametrize("template,expected", [
    ('  version: "{{ .TagName }}"\n    {{addURIAndSha "https://x/{{ .TagName }}/a.tar.gz" .TagName }}\n',
     f'  version: "v9"\n    uri: https://x/v9/a.tar.gz\n    sha256: {SHA}\n'),
    # the bot's spacing variants
    ('{{.TagName}}\n  {{ addURIAndSha "u/{{.TagName}}" .TagName }}\n', f"v9\n  uri: u/v9\n  sha256: {SHA}\n"),
])
def test_render_fills_tag_uri_and_sha(template, expected):
    assert krew_release.render(template, "v9", SHA) == expected


@pytest.mark.parametrize("template,message", [
    ('x: "{{ .TagName }}"\n', "no {{addURIAndSha"),  # nothing would point at the archive
    ('{{addURIAndSha "u" .TagName }}\nx: "{{ .Version }}"\n', "{{ .Version }}"),  # an action it does not know
    ('  uri: {{addURIAndSha "u" .TagName }}\n', "addURIAndSha"),  # not alone on its line: not the bot's form
])
def test_render_refuses_what_it_cannot_render(template, message):
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace(".", r"\.")):
        krew_release.render(template, "v9", SHA)


def test_pack_is_reproducible_and_has_no_links(tmp_path, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    src = tmp_path / "src"
    (src / "_internal").mkdir(parents=True)
    (src / "kubectl-dra").write_bytes(b"\x7fELF")
    (src / "kubectl-dra").chmod(0o700)
    (src / "LICENSE").write_text("license")
    (src / "_internal" / "lib.so").write_bytes(b"lib")
    krew_release.pack(src, tmp_path / "a.tar.gz")
    (src / "LICENSE").touch()  # a newer mtime must not change the archive
    krew_release.pack(src, tmp_path / "b.tar.gz")
    assert (tmp_path / "a.tar.gz").read_bytes() == (tmp_path / "b.tar.gz").read_bytes()
    with tarfile.open(tmp_path / "a.tar.gz") as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert sorted(members) == ["LICENSE", "_internal", "_internal/lib.so", "kubectl-dra"]
    assert members["kubectl-dra"].mode == 0o755 and members["LICENSE"].mode == 0o644
    assert {(m.uid, m.gid, m.mtime) for m in members.values()} == {(0, 0, 0)}
    (src / "link").symlink_to("LICENSE")
    with pytest.raises(ValueError, match="symbolic link"):
        krew_release.pack(src, tmp_path / "c.tar.gz")
