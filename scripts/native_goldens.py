#!/usr/bin/env python3
"""Writes tests/data/bpe/native/: SentencePiece `.model` and Mistral tekken.json fixtures with the ids of the formats'
own libraries (sentencepiece 0.2.3, mistral-common 1.13.1) on fixed strings, for tests/unit/bpe/files/
native_formats_test.cpp. Not run by CI: needs the heavy venv's python with sentencepiece and mistral-common importable
(scripts/interop/check_hf_families.py installs both into /root/.cache/lmkit-tokenizers/pylib):
    $(bash scripts/heavy-venv.sh) scripts/native_goldens.py [MISTRAL_COMMON_DATA_DIR]

Fixtures:
- spm_*.model: tiny BPE models trained here by sentencepiece on tests/data/bpe/corpus.en plus multilingual lines, with
  the "identity" normalization rule, byte fallback, a user-defined and a control symbol, and each whitespace option.
- mistral_v3.model: Mistral's v3 SentencePiece model as shipped in mistral-common (Apache-2.0), unchanged.
- tekken_small.json / tekken_small_specials.json: mistral-common's tekken_240911.json (Apache-2.0) cut to its first
  1500 ranks (a prefix of a rank list is itself a valid tiktoken vocabulary), default_vocab_size making the reader cut
  it to 1200; the second lists three special tokens (the rest filled as <SPECIAL_i>) and has 100 special ids.
"""
import json
import os
import sys

sys.path.append(os.environ.get("LMKIT_PYLIB", "/root/.cache/lmkit-tokenizers/pylib"))
import sentencepiece as spm  # noqa: E402
from mistral_common.tokens.tokenizers.tekken import Tekkenizer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "bpe", "native")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from hf_pipeline_goldens import CASES, MULTI, corpus  # noqa: E402

EXTRA = ["  double  spaces  and trailing   ", "\u2581literal\u2581metaspace\u2581 ", "\u2581\u2581", " ", "  ",
         "<|w|>", "<|w|> starts", "x<|w|>y <|w|>", "<ctl> is not matched", "<s></s><unk>",
         "\U0001F600 unseen \u0915\u094D\u0937 \u16A0\u16A1 characters \u2603", "tab\t\tand\n\nnewlines\r\n"]
STRINGS = CASES + EXTRA


def train_spm(name, **kw):
    prefix = os.path.join(OUT, name)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus()), model_prefix=prefix, model_type="bpe", vocab_size=400,
        normalization_rule_name="identity", byte_fallback=True, character_coverage=0.995,
        user_defined_symbols=["<|w|>"], control_symbols=["<ctl>"], minloglevel=2, **kw)
    os.remove(prefix + ".vocab")
    return prefix + ".model"


def main():
    os.makedirs(OUT, exist_ok=True)
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        "/root/.cache/lmkit-tokenizers/pypi/mistral-common-1.13.1/mistral_common/data")
    goldens = {"sentencepiece_version": spm.__version__, "strings": STRINGS, "files": {}}
    models = [
        train_spm("spm_default"),  # add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces: sentencepiece's
        train_spm("spm_keep_spaces", remove_extra_whitespaces=False),  # as Llama 2 and Mistral
        train_spm("spm_no_prefix", add_dummy_prefix=False, remove_extra_whitespaces=False),
    ]
    real = os.path.join(OUT, "mistral_v3.model")
    with open(os.path.join(data, "mistral_instruct_tokenizer_240323.model.v3"), "rb") as f, open(real, "wb") as g:
        g.write(f.read())
    models.append(real)
    for path in models:
        sp = spm.SentencePieceProcessor(model_file=path)
        goldens["files"][os.path.basename(path)] = {"ids": [sp.encode(s) for s in STRINGS],
                                                    "decoded": [sp.decode(sp.encode(s)) for s in STRINGS]}
        print(os.path.basename(path), os.path.getsize(path), file=sys.stderr)

    with open(os.path.join(data, "tekken_240911.json"), encoding="utf-8") as f:
        tk = json.load(f)
    for name, num_special, specials in (("tekken_small.json", 1000, None),
                                        ("tekken_small_specials.json", 100, ["<unk>", "<s>", "</s>"])):
        small = {"config": dict(tk["config"], num_vocab_tokens=1500, default_vocab_size=num_special + 1200,
                                default_num_special_tokens=num_special),
                 "vocab": tk["vocab"][:1500]}
        if specials:
            small["config"]["version"] = "v7"
            small["special_tokens"] = [{"rank": i, "token_str": s, "is_control": True} for i, s in enumerate(specials)]
        path = os.path.join(OUT, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(small, f, ensure_ascii=False, separators=(",", ":"))
        enc = Tekkenizer.from_file(path)
        goldens["files"][name] = {"ids": [enc.encode(s, bos=False, eos=False) for s in STRINGS]}
        print(name, os.path.getsize(path), file=sys.stderr)
    with open(os.path.join(OUT, "goldens.json"), "w", encoding="utf-8") as f:
        json.dump(goldens, f, ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
