#!/usr/bin/env python3
"""Encode speed per model family: lmkit's whole `bpe encode` process on 2 threads against HF tokenizers'
`encode_batch` on 2 threads (RAYON_NUM_THREADS=2), on the real tokenizer.json files of
scripts/interop/check_hf_families.py (its cache; the .model / tekken.json files through their converted json), ids
checked identical in the same run. Prints a markdown table and one JSON line per family on stderr.

Input: the first MB megabytes of a corpus (default debmix.txt), cut into documents of about 256 KB where lmkit's
newline-letter rule allows ("X\\n|Y", Y an ASCII letter), joined by the family's first special added token without
flags (the separator check_hf_families uses). HF encodes the documents with encode_batch (batches of 16, as
../shared/bench's peer does) and its ids, with the separator's id between documents, must equal lmkit's ids of the
joined file: the separator makes each document a segment of its own on both sides.

usage: bench/bpe_families.py LMKIT CORPUS MB [family-substring ...]   (run with a python that has tokenizers)
"""
import array
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts", "interop"))
import check_hf_families as fam  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
import tokenizers  # noqa: E402

CUT = re.compile(r"(?<=[!-~]\n)(?=[A-Za-z])")


def documents(text, target=262144):
    out, start = [], 0
    while start < len(text):
        if len(text) - start <= target:
            out.append(text[start:])
            break
        m = CUT.search(text, start + target)
        end = m.start() if m else len(text)
        out.append(text[start:end])
        start = end
    return out


def time_v(path):
    wall = cpu = rss = 0.0
    for line in open(path):
        k, _, v = line.strip().partition(": ")
        if k.startswith("Elapsed (wall clock)"):
            parts = [float(x) for x in v.split(":")]
            wall = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
        elif k in ("User time (seconds)", "System time (seconds)"):
            cpu += float(v)
        elif k.startswith("Maximum resident"):
            rss = float(v) / 1024
    return wall, cpu, rss


HF_SCRIPT = r"""
import array, json, sys, time, resource
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
docs = json.load(open(sys.argv[2]))
sep = json.loads(sys.argv[3])
t0 = time.perf_counter(); c0 = time.process_time()
parts = []
for i in range(0, len(docs), 16):
    parts.extend(e.ids for e in tok.encode_batch(docs[i:i + 16], add_special_tokens=False))
secs = time.perf_counter() - t0; cpu = time.process_time() - c0
a = array.array("I")
for k, p in enumerate(parts):
    if k and sep is not None:
        a.append(sep)
    a.extend(p)
open(sys.argv[4], "wb").write(a.tobytes())
print(json.dumps({"encode_s": secs, "encode_cpu_s": cpu, "tokens": len(a)}))
"""


def main():
    lmkit, corpus, mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    only = [x.lower() for x in sys.argv[4:]]
    raw = open(corpus, "rb").read(int(mb * 1e6))
    text = raw.decode("utf-8", errors="ignore")
    docs = documents(text)
    work = tempfile.mkdtemp(prefix="bpe-families.", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    dpath = os.path.join(work, "docs.json")
    json.dump(docs, open(dpath, "w"))
    env = dict(os.environ, RAYON_NUM_THREADS="2")
    rows = []
    for name, src, conv, native, licence in fam.FAMILIES:
        if only and not any(x in name.lower() for x in only):
            continue
        path, why = fam.fetch(src)
        if path is None:
            print("%s: skipped (%s)" % (name, why), file=sys.stderr)
            continue
        js = fam.convert(conv, path) if conv else path
        if not js.endswith(".json"):
            continue  # a rank file: the tiktoken rows of bench/bpe_encode.sh
        hf = Tokenizer.from_file(js)
        sep = fam.separator(hf)
        sep_id = hf.token_to_id(sep) if sep else None
        joined = os.path.join(work, "joined.txt")
        with open(joined, "w", encoding="utf-8", newline="") as f:
            f.write((sep or "").join(docs))
        size = os.path.getsize(joined)
        ref = os.path.join(work, "hf.u32")
        p = subprocess.run(["/usr/bin/time", "-v", "-o", os.path.join(work, "hf.time"), sys.executable, "-c",
                            HF_SCRIPT, js, dpath, json.dumps(sep_id), ref], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            print("%s: HF failed: %s" % (name, p.stderr[-500:]), file=sys.stderr)
            continue
        h = json.loads(p.stdout.strip().splitlines()[-1])
        hf_wall, hf_cpu, hf_rss = time_v(os.path.join(work, "hf.time"))
        out = os.path.join(work, "lmkit.u32")
        q = subprocess.run(["/usr/bin/time", "-v", "-o", os.path.join(work, "lm.time"), lmkit, "--json", "--threads",
                            "2", "bpe", "encode", "-t", js, "--dtype", "uint32", joined, "-o", out],
                           capture_output=True, text=True)
        if q.returncode != 0:
            print("%s: lmkit failed: %s" % (name, q.stderr[-500:]), file=sys.stderr)
            continue
        summary = json.loads(q.stdout)
        lm_wall, lm_cpu, lm_rss = time_v(os.path.join(work, "lm.time"))
        a, b = open(out, "rb").read(), open(ref, "rb").read()
        same = a == b
        row = {"family": name, "file": os.path.basename(js), "bytes": size, "docs": len(docs),
               "tokens": len(b) // 4, "ids_identical": same, "ids_sha256": hashlib.sha256(b).hexdigest()[:12],
               "hf_encode_batch_s": round(h["encode_s"], 3), "hf_encode_cpu_s": round(h["encode_cpu_s"], 2),
               "hf_process_wall_s": round(hf_wall, 2), "hf_process_cpu_s": round(hf_cpu, 2),
               "lmkit_process_wall_s": round(lm_wall, 3), "lmkit_process_cpu_s": round(lm_cpu, 2),
               "lmkit_encode_s": summary.get("seconds"), "lmkit_chunks": summary.get("chunks"),
               "lmkit_rss_mb": round(lm_rss), "ratio_wall": round(h["encode_s"] / lm_wall, 2),
               "ratio_cpu": round(h["encode_cpu_s"] / lm_cpu, 2) if lm_cpu > 0 else None}
        print(json.dumps(row), file=sys.stderr)
        rows.append(row)
    print("Input: first %.0f MB of %s, %d documents joined by each family's separator token; HF tokenizers %s "
          "(PyPI wheel, native Rust), RAYON_NUM_THREADS=2; lmkit `--threads 2 bpe encode`, whole process."
          % (mb, os.path.basename(corpus), len(docs), tokenizers.__version__))
    print()
    print("| family | tokens | ids identical | HF encode_batch s (CPU s) | lmkit process wall s (CPU s) | chunks "
          "| lmkit / HF, wall | lmkit / HF, CPU |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %s | %.2f (%.2f) | %.3f (%.2f) | %s | **%.1f×** | %s× |" % (
            r["family"], r["tokens"], "yes" if r["ids_identical"] else "**NO**", r["hf_encode_batch_s"],
            r["hf_encode_cpu_s"], r["lmkit_process_wall_s"], r["lmkit_process_cpu_s"], r["lmkit_chunks"],
            r["ratio_wall"], r["ratio_cpu"]))
    subprocess.run(["rm", "-rf", work])
    sys.exit(0 if all(r["ids_identical"] for r in rows) else 1)


if __name__ == "__main__":
    main()
