"""What could not be read, one stderr line per problem."""

from __future__ import annotations

from kubectl_dra.model.inventory import Inventory


def problem_lines(inventory: Inventory) -> list[str]:
    return [f"{problem.severity}: {problem.message}" for problem in inventory.problems]
