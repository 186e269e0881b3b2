#!/usr/bin/env python3
"""Writes the results part of docs/interop.md from the JSON line of scripts/interop-check.sh (between the markers
below): the versions used, one row per check with its key figures, and each failing check's first failures.
usage: python3 scripts/interop/report.py RESULT.json [DOC]      (DOC defaults to docs/interop.md)"""
import datetime
import json
import os
import sys

BEGIN, END = "<!-- interop-results:begin (scripts/interop/report.py) -->", "<!-- interop-results:end -->"
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def figures(c):
    """The few numbers that say what a check covered."""
    d = c.get("details", {})
    n = c["name"]
    if n == "tiktoken":
        toks = sum(v for v in d.get("corpus_tokens", {}).values())
        p = d.get("property", {})
        bad = d.get("property_mismatches", {})
        s = "%d corpus files × 3 encodings, %s ids; %s property strings (seed %s, %s characters)" % (
            len(d.get("corpus_tokens", {})) // 3, format(toks, ","), format(p.get("strings", 0), ","),
            p.get("seed"), format(p.get("characters", 0), ","))
        if bad:
            s += "; strings differing: " + ", ".join("%s %d (%s)" % (k, v["strings"], ", ".join(
                "%d %s" % (x, y.replace("_", " ")) for y, x in v.items() if y != "strings")) for k, v in bad.items())
        return s
    if n == "hf_tokenizers":
        s = "tokenizers trained: %s; held-out characters: %s" % (
            ", ".join("%s at %d" % (t["input"], t["vocab_size"]) for t in d.get("tokenizers_trained", [])),
            format(sum(d.get("held_out", {}).values()), ","))
        runs = len(d.get("tokenizers_trained", [])) * len(d.get("held_out", {}))
        for pair, where in d.get("differ", {}).items():
            s += "; **%s differ** on %s" % (pair, "every held-out text" if len(where) == runs else ", ".join(where))
        return s
    if n == "compressed_tensors":
        rows = []
        for r in d.get("checkpoints", []):
            if "refused" in r:
                rows.append("%s: refused by lmkit" % r["checkpoint"])
            elif "transformers" in r:
                t, l = r["transformers"], r["lmkit_eval"]
                rows.append("%s: loads, mean KL %.4g (lmkit %.4g), top-1 %.3f (lmkit %.3f)" % (
                    r["checkpoint"], t["mean_kl"], l["mean_kl"], t["top1_agreement"], l["top1_agreement"]))
            else:
                rows.append("%s: %s" % (r["checkpoint"], "loads" if r.get("loads") else "does not load as written"))
        o = d.get("offered", {})
        return "schemes %s × granularities %s (listed by lmkit's %s): %s" % (
            o.get("schemes"), o.get("granularities"), " / ".join(sorted(set(o.get("listed_by", [])))), "; ".join(rows))
    if n == "ort_calibrators":
        cs = d.get("cases", [])
        return "%d cases; largest difference %d float32 ulps (%s)" % (
            len(cs), max((x["ulps"] for x in cs), default=0),
            ", ".join("%s %s" % (x["case"], x["feed"]) for x in cs if x["ulps"]) or "all identical")
    if n == "llamacpp":
        return ("Q8_0 tensors byte-identical to llama_model_quantize: %d of %d; gguf reader: %s; greedy tokens equal to "
                "lmkit generate: %s of %s; next token after the golden sequence the same: %s; final logits within %.3g" % (
                    d.get("q8_0_tensors_compared_with_llama_model_quantize", 0) - len(d.get("q8_0_tensors_differing", [])),
                    d.get("q8_0_tensors_compared_with_llama_model_quantize", 0),
                    "agrees" if d.get("gguf_reader", {}).get("ok") else "differs",
                    d.get("greedy_prefix_llamacpp_vs_lmkit_same_weights"), d.get("sequence_length"),
                    d.get("next_token_same"), d.get("final_logits_max_abs_diff_llamacpp_vs_lmkit", float("nan"))))
    return ""


def shorten(failure):
    """One line of at most 360 characters."""
    f = failure.replace("\n", "\\n").replace("|", "\\|")
    return f if len(f) <= 360 else f[:360] + " …"


def main():
    res = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
    doc_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(REPO, "docs", "interop.md")
    out = ["## Results: %s UTC, lmkit %s (%s)" % (datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
                                                  res.get("commit"), res.get("lmkit")), ""]
    out.append("**%s** (%d of %d checks pass; %.0f s)." % (
        "All checks pass" if res["ok"] else "Failing: " + ", ".join(res["failed"]),
        sum(c["ok"] for c in res["checks"]), len(res["checks"]), res.get("seconds", 0)))
    out += ["", "| package | version |", "|---|---|"]
    out += ["| %s | %s |" % (k, v) for k, v in res["versions"].items() if v]
    out += ["", "| check | result | covered |", "|---|---|---|"]
    for c in res["checks"]:
        out.append("| %s | %s | %s |" % (c["name"], "pass" if c["ok"] else "**FAIL** (%d)" % c["details"].get(
            "failure_count", len(c.get("failures", []))), figures(c).replace("|", "\\|")))
    for c in res["checks"]:
        if not c["ok"]:
            out += ["", "First failures of `%s`:" % c["name"], ""]
            out += ["- " + shorten(f) for f in c.get("failures", [])[:6]]
    doc = open(doc_path, encoding="utf-8").read()
    if BEGIN not in doc:
        sys.exit("report.py: %s has no interop-results markers" % doc_path)
    pre, rest = doc.split(BEGIN, 1)
    post = rest.split(END, 1)[1]
    open(doc_path, "w", encoding="utf-8").write(pre + BEGIN + "\n" + "\n".join(out) + "\n" + END + post)


if __name__ == "__main__":
    main()
