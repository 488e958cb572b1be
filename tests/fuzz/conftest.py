"""Property-based tests of every parser and reader (issue 23, item 18).

The invariants for any input: no traceback, no hang, a documented exit code (README "## Exit
codes": 0-4) and a named cause (the error line names the file, field or flag).

Budgets are hypothesis settings profiles chosen by ``HYPOTHESIS_PROFILE``:
``ci`` (the default here, and what ``scripts/test`` selects): 50 examples per target, derandomized,
so a CI run is reproducible and the directory takes about 35 s on two cores;
``fuzz`` (``scripts/fuzz``): ``FUZZ_EXAMPLES`` examples per CLI target (default 2000) and ten
times that per pure parser, random seeds.
Every example runs under a wall-clock alarm (``FUZZ_TIMEOUT`` seconds, default 20): a hang is a
failure, not a stuck CI job.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzzkit import EXAMPLES  # noqa: E402  (the profiles)


def pytest_terminal_summary(terminalreporter):
    if not EXAMPLES:
        return
    terminalreporter.section("fuzz: examples per target")
    for name, count in sorted(EXAMPLES.items()):
        terminalreporter.write_line(f"{count:>8}  {name}")
    terminalreporter.write_line(f"{sum(EXAMPLES.values()):>8}  total")
