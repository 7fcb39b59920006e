"""tessera.py: tessera's simulator and its run databases from Python, with the standard library alone.

    import sys; sys.path.insert(0, "analysis")
    import tessera
    m = tessera.sim(system="dllm-serve", rps=2, requests=200)         # the summary, as sim --json gives it
    rows = tessera.read("runs.db", "requests", run=1)                  # a table's rows, a dict a row
    df = tessera.frame("runs.db", "steps")                             # the same as a pandas DataFrame

sim() takes tessera sim's options as keywords (an underscore for a dash: max_batch=8 is --max-batch
8; True for a flag: early_stop=True) or as a list of arguments. read() and frame() read a table of a
run database (sim --db) through `tessera db export --json`: runs, requests, steps, segments, ops,
replicas (tessera db --help). A failed command raises TesseraError with tessera's own message.
The binary is $TESSERA, else build/tessera (or build/cpu/tessera) beside this folder, else `tessera` on
the PATH.
"""
import json
import os
import shutil
import subprocess

__all__ = ["TesseraError", "binary", "sim", "read", "frame"]


class TesseraError(RuntimeError):
    """A tessera command that failed: its exit status and what it said on stderr."""

    def __init__(self, argv, status, stderr):
        super().__init__("%s: exit status %d: %s" % (" ".join(argv[:2]), status, stderr.strip()))
        self.status, self.stderr = status, stderr


def binary():
    """The tessera binary: $TESSERA, the repository's build/tessera or build/cpu/tessera, or tessera on the PATH."""
    env = os.environ.get("TESSERA")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))  # (.. taken by name: analysis/ may be a link)
    for built in ("build/tessera", "build/cpu/tessera"):
        path = os.path.normpath(os.path.join(here, os.pardir, built))
        if os.access(path, os.X_OK):
            return path
    found = shutil.which("tessera")
    if not found:
        raise TesseraError(["tessera"], 127, "no tessera binary: build it (make) or set TESSERA")
    return found


def _options(kw):
    args = []
    for key, value in kw.items():
        opt = "--" + key.replace("_", "-")
        if value is True:
            args.append(opt)
        elif value is not False and value is not None:
            args += [opt, str(value)]
    return args


def _run(argv):
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise TesseraError(argv, done.returncode, done.stderr)
    return done.stdout


def sim(args=None, **options):
    """Runs tessera sim with the options given and returns its summary (a dict, sim --json's keys)."""
    argv = [binary(), "sim"] + list(args or []) + _options(options) + ["--json", "--quiet", "--no-progress"]
    return json.loads(_run(argv))


def read(db, table="runs", run=None):
    """The rows of a run database's table as a list of dicts (of one run where run is given)."""
    argv = [binary(), "db", "export", os.fspath(db), table, "--json"]
    if run is not None:
        argv += ["--run", str(int(run))]
    return json.loads(_run(argv))


def frame(db, table="runs", run=None):
    """read() as a pandas DataFrame (pandas must be installed)."""
    try:
        import pandas
    except ImportError as e:
        raise ImportError("tessera.frame needs pandas; tessera.read gives the same rows as dicts") from e
    return pandas.DataFrame.from_records(read(db, table, run))
