#!/usr/bin/env python3
"""Rewrites the "Latest figures" table of docs/benchmarks.md from the pages the bench scripts wrote: every page under
docs/benchmarks/ ends with a summary block (rows between the markers below), copied here in the order of PAGES with a
link to its page. A page written by a --quick run is marked as a smoke run. Run by bench/run-all.sh; alone:
`python3 bench/summary.py`."""
import datetime
import os
import re
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
PAGES = ["bpe.md", "bpe-encode.md", "bpe-corpora.md", "python.md", "quant.md", "gguf.md", "dataload.md", "distributed.md"]
BEGIN, END = "<!-- summary: rows for docs/benchmarks.md (bench/summary.py) -->", "<!-- /summary -->"
DOC_BEGIN, DOC_END = "<!-- latest:begin (bench/summary.py writes this part) -->", "<!-- latest:end -->"


def rows_of(path):
    text = open(path, encoding="utf-8").read()
    if BEGIN not in text:
        return None, False
    block = text.split(BEGIN, 1)[1].split(END, 1)[0]
    rows = [line for line in block.strip().splitlines()[2:] if line.startswith("|")]
    quick = bool(re.search(r"`bench/[\w-]+\.sh[^`]*--quick", text[:2000]))
    return rows, quick


def main():
    bench_dir = os.path.join(REPO, "docs", "benchmarks")
    out = ["| task | input | peer | lmkit vs peer | target | page |", "|---|---|---|---|---|---|"]
    missing, smoke = [], []
    for page in PAGES:
        path = os.path.join(bench_dir, page)
        rows, quick = rows_of(path) if os.path.exists(path) else (None, False)
        if rows is None:
            missing.append(page)
            continue
        if quick:
            smoke.append(page)
        link = "[%s](benchmarks/%s)%s" % (page, page, " (smoke run)" if quick else "")
        out += [r.rstrip().rstrip("|").rstrip() + " | " + link + " |" for r in rows]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    commit = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    head = ["Tables written by `bash bench/run-all.sh` (each script writes its page; `bench/summary.py` copies the pages'",
            "summary rows here) — collected %s UTC, lmkit %s, on %s (%d cores). Each page says when and on which" % (
                datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), commit, cpu, os.cpu_count()),
            "machine it was measured: pages re-run one at a time can come from different machines, while every ratio",
            "within a row comes from one run on one machine."]
    if smoke:
        head.append("**Smoke runs (--quick: small inputs, possibly a loaded machine) — they show that the scripts work, "
                    "not the speed; re-measure with `bash bench/run-all.sh` on a quiet machine: %s.**" % ", ".join(smoke))
    if missing:
        head.append("Not measured yet: %s." % ", ".join(missing))
    if len(missing) == len(PAGES):
        head = ["No page has native-peer figures yet: run `bash bench/run-all.sh` on a quiet machine."]
        out = []
    block = "\n".join(head) + "\n" + ("\n" + "\n".join(out) + "\n" if out else "")
    doc_path = os.path.join(REPO, "docs", "benchmarks.md")
    doc = open(doc_path, encoding="utf-8").read()
    if DOC_BEGIN not in doc or DOC_END not in doc:
        sys.exit("bench/summary.py: docs/benchmarks.md has no latest-figures markers")
    pre, rest = doc.split(DOC_BEGIN, 1)
    post = rest.split(DOC_END, 1)[1]
    open(doc_path, "w", encoding="utf-8").write(pre + DOC_BEGIN + "\n" + block + DOC_END + post)
    print("bench/summary.py: %d rows from %d pages into docs/benchmarks.md" % (max(0, len(out) - 2), len(PAGES) - len(missing)),
          file=sys.stderr)


if __name__ == "__main__":
    main()
