"""``python -m lmkit ...`` runs the lmkit command (installed inside the package by ``pip install``)."""

import os
import shutil
import sys


def _binary() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "bin", "lmkit"), os.path.join(here, "..", "..", "lmkit")):
        if os.access(candidate, os.X_OK) and os.path.isfile(candidate):
            return candidate
    found = shutil.which("lmkit")
    if found is None:
        sys.exit("lmkit: the lmkit command is not installed beside this package (reinstall with pip install .)")
    return found


def main() -> None:
    binary = _binary()
    os.execv(binary, [binary] + sys.argv[1:])


if __name__ == "__main__":
    main()
