"""The entry point of the frozen kubectl-dra in the krew archive (scripts/krew-archive).

One binary serves both names kubectl looks for: run as ``kubectl_complete-dra`` (a link to it that
the user makes, see the manifest's caveats) it answers shell completion; under any other name it is
``kubectl dra``. Only the chosen entry is imported, so neither pays for the other.
"""

import os
import sys


def main() -> None:
    if os.path.basename(sys.argv[0]).startswith("kubectl_complete-"):
        from kubectl_dra.cli.completion import main as run
    else:
        from kubectl_dra.cli import main as run
    run()


if __name__ == "__main__":
    main()
