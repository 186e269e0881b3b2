"""Shared by the checks of scripts/interop-check.sh: running lmkit, reading id files, loading tiktoken encodings from the
repository's rank files, and the result record every check returns."""
import json
import os
import subprocess
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


class Check:
    """One check's result: ok stays True until fail() is called; details are what the JSON line carries."""

    def __init__(self, name):
        self.name = name
        self.ok = True
        self.failures = []
        self.details = {}

    def fail(self, why):
        self.ok = False
        if len(self.failures) < 20:  # the first few say what is wrong; the count says how much
            self.failures.append(why)
        self.details["failure_count"] = self.details.get("failure_count", 0) + 1

    def expect(self, cond, why):
        if not cond:
            self.fail(why)
        return cond

    def record(self):
        r = {"name": self.name, "ok": self.ok}
        if self.failures:
            r["failures"] = self.failures
        r["details"] = self.details
        return r


def lmkit_bin():
    return os.environ.get("LMKIT", os.path.join(REPO, "build", "release", "lmkit"))


def run_lmkit(*args, json_out=False, check=True):
    """Runs lmkit with args; returns its parsed --json document (json_out) or the CompletedProcess."""
    cmd = [lmkit_bin()] + (["--json"] if json_out else []) + [str(a) for a in args]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-2000:]))
    return json.loads(p.stdout) if json_out else p


def read_u32(path):
    import numpy as np
    return np.fromfile(path, dtype="<u4")


def tiktoken_encoding(name):
    """The named tiktoken encoding from data/tokenizers/ (the files OpenAI publishes), so nothing is downloaded."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    d = os.path.join(REPO, "data", "tokenizers")
    meta = json.load(open(os.path.join(d, name + ".json")))
    return tiktoken.Encoding(name, pat_str=meta["pat_str"], special_tokens=meta["special_tokens"],
                             mergeable_ranks=load_tiktoken_bpe(os.path.join(d, name + ".tiktoken")))


def workdir(prefix):
    return tempfile.mkdtemp(prefix="lmkit-interop-%s." % prefix)


def first_difference(a, b):
    """Index of the first position where two id sequences differ (len of the shorter if one is a prefix)."""
    import numpy as np
    n = min(len(a), len(b))
    d = np.nonzero(np.asarray(a[:n]) != np.asarray(b[:n]))[0]
    return int(d[0]) if len(d) else (n if len(a) != len(b) else -1)


def run_check(name, fn):
    """Runs one check with the tools' own prints sent to stderr (stdout carries only the JSON); a check that raises
    is a failed check whose failure is the exception."""
    import contextlib
    import sys
    import traceback
    with contextlib.redirect_stdout(sys.stderr):
        try:
            return fn().record()
        except Exception as e:  # noqa: BLE001 - reported as the check's failure
            traceback.print_exc(file=sys.stderr)
            return {"name": name, "ok": False, "failures": ["crashed: %s: %s" % (type(e).__name__, e)], "details": {}}


def main(name, fn):
    import sys
    r = run_check(name, fn)
    print(json.dumps(r))
    sys.exit(0 if r["ok"] else 1)
