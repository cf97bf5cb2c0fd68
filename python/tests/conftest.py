"""Fixtures: the CLI the package must agree with, and the example kernels (examples/python)."""
import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "python"
sys.path.insert(0, str(EXAMPLES))


@pytest.fixture(scope="session")
def cli():
    """Runs the `normoracle` binary ($NORMORACLE_BIN, else target/debug/normoracle):
    cli(*args) -> (exit code, stdout)."""
    binary = os.environ.get("NORMORACLE_BIN", str(ROOT / "target" / "debug" / "normoracle"))
    if not os.path.exists(binary):
        pytest.fail(f"no normoracle binary at {binary}: build it (cargo build) or set NORMORACLE_BIN")

    def run(*args):
        out = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
        return out.returncode, out.stdout + out.stderr

    return run


def write_outputs(directory, kernel_for, to_framework=lambda a: a, from_framework=np.asarray):
    """Runs kernels over a `normoracle cases` directory the way examples/python's drivers do,
    saving bf16 outputs as ml_dtypes arrays ('<V2')."""
    import normoracle_cases

    normoracle_cases.run(str(directory), kernel_for, "test", to_framework=to_framework)


def cli_reports(cli, directory):
    """`normoracle check DIR --json`: its exit code and reports by (op, dtype)."""
    code, out = cli("check", directory, "--json")
    assert code in (0, 1), out
    data = json.loads(out)
    return code, {(r["op"], r["dtype"]): r for r in data["reports"]}, data


def same_numbers(ours, theirs, where="report"):
    """Report fields equal: counts exactly, floats to the last bit but one. `normoracle check
    DIR --json` parses its reports back with serde_json's default float parser, which can be
    1 ULP off (no `float_roundtrip`); the package's JSON is parsed once, by Python."""
    if isinstance(ours, dict):
        assert ours.keys() == theirs.keys(), where
        for key in ours:
            same_numbers(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(ours, float) or isinstance(theirs, float):
        assert math.isclose(ours, theirs, rel_tol=2.5e-16, abs_tol=0.0) or ours == theirs, (where, ours, theirs)
    else:
        assert ours == theirs, (where, ours, theirs)
