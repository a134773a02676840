"""Runs a trial program's ``run(mode)`` for each mode given and prints one ``TRUTH`` JSON line
(``{mode: run(mode)}``): ``python run_modes.py PROGRAM.py MODE...``, ``True`` / ``False``
given as booleans. For tests/test_trial_programs.py, whose programs once ran in the pytest
worker: in a fork of the suite's server under ``fast_compile.py`` they compile in a third of the
CPU time, with the same traces, reasons and outputs (issue 48).
"""

import importlib.util
import json
import pathlib
import sys


def main(program: str, modes: list[str]) -> None:
    path = pathlib.Path(program).resolve()
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    values = {"True": True, "False": False}
    print("TRUTH " + json.dumps({mode: module.run(values.get(mode, mode)) for mode in modes}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
