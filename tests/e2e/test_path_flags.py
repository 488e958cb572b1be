"""Path flags (issue 37, items 10 and 15): one rule for every flag that names a file or directory.
Something missing, or of the wrong kind, is an input error (exit 3) in the project's words, never
click's path check (exit 2, "Invalid value"): `--kubeconfig DIR` said 2 while `KUBECONFIG=DIR` said
3, `taints -f DIR` 2 while `--catalog DIR` 3, `--cgroup-root /nonexistent` 2 while a missing
`--snapshot` 3. And a file named on the command line is always read: `--scheduler-config
/nonexistent` on a bound pod exited 0."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "cluster")


def cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    """flag -> (arguments, what the one error line must say), for a directory and for a missing path."""
    d, missing = str(tmp), str(tmp / "missing")
    return {
        "--kubeconfig DIR": (["claims", "--kubeconfig", d], f"cannot read kubeconfig {d}: is a directory, not a file"),
        "--kubeconfig missing": (["claims", "--kubeconfig", missing], f"{missing}"),
        "--certificate-authority DIR": (["claims", "--server", "https://127.0.0.1:1", "--certificate-authority", d],
                                        f"cannot read certificate-authority {d}: is a directory, not a file"),
        "--client-key DIR": (["claims", "--server", "https://127.0.0.1:1", "--client-certificate", d, "--client-key", d],
                             f"{d}: is a directory, not a file"),
        "taints -f DIR": (["taints", "--dry-run", "--snapshot", EXAMPLE, "-f", d], f"{d}: is a directory, not a file"),
        "taints -f missing": (["taints", "--dry-run", "--snapshot", EXAMPLE, "-f", missing],
                              f"{missing}: no such file or directory"),
        "--catalog DIR": (["overlays", "--snapshot", EXAMPLE, "--catalog", d], f"{d}: is a directory, not a file"),
        "--snapshot missing": (["claims", "--snapshot", missing], f"{missing}: no such file or directory"),
        "--cgroup-root missing": (["verify", "--snapshot", EXAMPLE, "--node", "worker-gpu-1", "--cgroup-root", missing],
                                  f"--cgroup-root {missing} does not exist"),
        "--cgroup-root FILE": (["verify", "--snapshot", EXAMPLE, "--node", "worker-gpu-1", "--cgroup-root",
                                str(ROOT / "README.md")], "--cgroup-root"),
        "--scheduler-config missing, bound pod": (["explain", "pod", "embedder", "-n", "ml", "--snapshot", EXAMPLE,
                                                   "--scheduler-config", missing],
                                                  f"--scheduler-config {missing}: no such file or directory"),
        "--scheduler-config DIR, bound pod": (["explain", "pod", "embedder", "-n", "ml", "--snapshot", EXAMPLE,
                                               "--scheduler-config", d], f"--scheduler-config {d}: is a directory"),
        "snapshot -o FILE": (["snapshot", "--snapshot", EXAMPLE, "-o", str(ROOT / "README.md")],
                             "it exists and is not a directory"),
    }


NAMES = list(cases(Path("/x")))


@pytest.mark.parametrize("name", NAMES)
def test_a_path_flag_naming_something_missing_or_of_the_wrong_kind_is_exit_3(name, tmp_path, dra):
    args, said = cases(tmp_path)[name]
    result = dra(*args)
    assert result.exit_code == 3, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], result.stderr
    assert "Invalid value" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("name", ["--cgroup-root missing", "--cgroup-root FILE"])
def test_the_agent_says_the_same_with_the_same_code(name, tmp_path):
    from click.testing import CliRunner

    from node_agent.__main__ import cli

    args, said = cases(tmp_path)[name]
    result = CliRunner().invoke(cli, ["scan", "--once", *args[1:]])
    assert result.exit_code == 3 and said in result.output and "Invalid value" not in result.output, result.output


def test_a_valid_scheduler_config_on_a_bound_pod_is_read_and_changes_nothing(tmp_path, dra):
    config = tmp_path / "scheduler.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    plain = dra("explain", "pod", "embedder", "-n", "ml", "--snapshot", EXAMPLE)
    given = dra("explain", "pod", "embedder", "-n", "ml", "--snapshot", EXAMPLE, "--scheduler-config", str(config))
    assert given.exit_code == plain.exit_code == 0 and given.stdout == plain.stdout
