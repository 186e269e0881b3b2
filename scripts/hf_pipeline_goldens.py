#!/usr/bin/env python3
"""Writes tests/data/bpe/hf/: small tokenizer.json files, one per Hugging Face pipeline feature lmkit implements, and
goldens.json with HF tokenizers' own ids (and decoded text) for each on a fixed set of strings. Not run by CI (it
needs the heavy venv: `$(bash scripts/heavy-venv.sh) scripts/hf_pipeline_goldens.py`); the CI test
tests/unit/bpe/files/tokenizer_json_test.cpp compares lmkit with the committed goldens.

Each tokenizer is trained here by HF tokenizers' BpeTrainer on tests/data/bpe/corpus.en plus a few multilingual
lines, with a small vocabulary (the files stay small), and the pipeline under test set on it. The trainer breaks ties
between equal counts differently from run to run for char-level models, so a rerun rewrites those files: when adding
a tokenizer, commit its file and its goldens.json entry and keep the others as they are.
"""
import json
import os
import sys

import tokenizers
from tokenizers import Regex, Tokenizer, AddedToken, decoders, models, normalizers, pre_tokenizers, processors, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "bpe", "hf")

MULTI = [
    "Größere Übungen für naïve Cafés — déjà vu, Ærø, İstanbul, ΣΊΣΥΦΟΣ ὀδυσσεύς.",
    "日本語のテキストと中文文本，还有한국어 문장。",
    "Русский текст: съешь же ещё этих мягких французских булок 12345.",
    "def f(x):\n    return x**2  # comment\n\tif a != b: print('ok')\n",
    "Numbers 1234567 and ١٢٣ and ½ ⅔ Ⅻ; emoji 🤗🚀👩‍💻 and e\u0301 vs é, ﬁ ligature, Ｆｕｌｌ width.",
]
CASES = [
    "Hello world", " Hello  world ", "Hello, world! It's 2026 -- naïve café\n\t  x",
    "", " ", "   leading and trailing   ", "\n\nnew\r\nlines\n", "don't WON'T we'll I'm you're",
    "x=1234567890; y = 3.14159", "<s>Hello</s> <unk> <|end|>x<|end|> <|end|> y", "a<|end|>", "Σ ΣΑΣ σς ΌΣΟΣ İi",
    "__init__(self, *args, **kwargs) -> None:", "http://example.com/a_b?c=d&e=f#g",
    "  \t\n  ", "ab\u00a0cd\u2003ef\u3000gh", "multi    space   run", "e\u0301 é ﬁ Ｆｕｌｌ ①②③ ½",
    "<|end|>", " <|end|> ", "hello<|end|>world", "word<|w|>word <|w|> x<|w|>", "a <|l|> b <|r|> c",
    "▁already▁metaspace▁", "tab\tseparated\tvalues\n", "UPPER lower MiXeD", "1 12 123 1234 12345",
] + MULTI


def corpus():
    with open(os.path.join(ROOT, "tests", "data", "bpe", "corpus.en"), encoding="utf-8") as f:
        text = f.read()
    return [line for line in text.splitlines() if line.strip()][:1500] + MULTI * 20


def train(tok, vocab_size, byte_level, specials, **trainer_kw):
    kw = dict(vocab_size=vocab_size, special_tokens=specials, show_progress=False, **trainer_kw)
    if byte_level:
        kw["initial_alphabet"] = pre_tokenizers.ByteLevel.alphabet()
    else:
        kw["limit_alphabet"] = 150
    tok.train_from_iterator(corpus(), trainers.BpeTrainer(**kw))
    return tok


def add_byte_fallback(path):
    """Adds the 256 <0xXX> tokens to a char-level model (sentencepiece-converted files have them)."""
    with open(path, encoding="utf-8") as f:
        j = json.load(f)
    vocab = j["model"]["vocab"]
    nxt = max(vocab.values()) + 1
    for t in j["added_tokens"]:
        nxt = max(nxt, t["id"] + 1)
    for b in range(256):
        vocab["<0x%02X>" % b] = nxt
        nxt += 1
    j["model"]["byte_fallback"] = True
    with open(path, "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False)


QWEN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


# The BPE model's continuing_subword_prefix / end_of_word_suffix, given to the trainer too (it spells the vocabulary).
AFFIXES = dict(continuing_subword_prefix="##", end_of_word_suffix="</w>")


def affix_kw(model_kw):
    return {k: v for k, v in model_kw.items() if k in AFFIXES}


def byte_level(name, normalizer, pre, vocab=600, post=None, **model_kw):
    tok = Tokenizer(models.BPE(**model_kw))
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    train(tok, vocab, True, ["<|end|>"], **affix_kw(model_kw))
    if post is not None:
        tok.post_processor = post
    return name, tok


def char_level(name, normalizer, pre, decoder, vocab=500, fallback=True, post=None, specials=("<unk>", "<s>", "</s>"),
               **model_kw):
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, **model_kw))
    if normalizer is not None:
        tok.normalizer = normalizer
    if pre is not None:
        tok.pre_tokenizer = pre
    tok.decoder = decoder
    train(tok, vocab, False, list(specials), **affix_kw(model_kw))
    if post is not None:
        tok.post_processor = post
    return name, tok, fallback


def main():
    os.makedirs(OUT, exist_ok=True)
    built = []
    seq_split = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(QWEN), "isolated"),
                                         pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    built.append(byte_level("qwen2_nfc_split", normalizers.NFC(), seq_split))
    built.append(byte_level("llama3_known_regex", None, pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3), "isolated"), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        post=processors.TemplateProcessing(single="<|end|> $A", special_tokens=[("<|end|>", 600 - 600)])))
    built.append(byte_level("deepseek_splits", normalizers.Sequence([]), pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\p{N}{1,3}"), "isolated"),
        pre_tokenizers.Split(Regex(r"[一-龥\u3040-ゟ゠-ヿ]+"), "isolated"),
        pre_tokenizers.Split(Regex(r"[\r\n]+|\s?[^\s\p{L}\p{N}]+|\s?\p{L}+| ?\p{N}+"), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])))
    built.append(byte_level("falcon_punct_digits", None, pre_tokenizers.Sequence([
        pre_tokenizers.Punctuation("contiguous"), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        pre_tokenizers.Digits(individual_digits=False), pre_tokenizers.Split(Regex("[0-9][0-9][0-9]"), "isolated")])))
    built.append(byte_level("neox_nfc_bytelevel", normalizers.NFC(),
                            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)))
    built.append(byte_level("bytelevel_prefix_space", normalizers.NFKC(),
                            pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)))
    built.append(byte_level("bytelevel_no_regex", None, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)))
    for behavior in ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]:
        for invert in [False, True]:
            built.append(byte_level("split_%s%s" % (behavior, "_invert" if invert else ""), None, pre_tokenizers.Sequence([
                pre_tokenizers.Split(Regex(r"\s+|[,.;:!?]"), behavior, invert=invert),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), vocab=400))
    built.append(byte_level("split_string_digits_individual", normalizers.Lowercase(), pre_tokenizers.Sequence([
        pre_tokenizers.Split(" ", "merged_with_next"), pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), vocab=400))
    built.append(byte_level("ignore_merges", None, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                            ignore_merges=True))
    llama2_dec = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                    decoders.Strip(" ", 1, 0)])
    built.append(char_level("llama2_prepend_replace", normalizers.Sequence([normalizers.Prepend("▁"),
                                                                            normalizers.Replace(" ", "▁")]),
                            None, llama2_dec,
                            post=processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])))
    built.append(char_level("mistral_metaspace_first", None,
                            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False),
                            decoders.Metaspace(replacement="▁", prepend_scheme="first", split=False),
                            post=processors.TemplateProcessing(single="<s> $A </s>",
                                                               special_tokens=[("<s>", 1), ("</s>", 2)])))
    built.append(char_level("metaspace_always_split", None,
                            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True),
                            decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)))
    built.append(char_level("whitespace_lowercase_unk", normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()]),
                            pre_tokenizers.Whitespace(), decoders.Fuse(), fallback=False))
    built.append(char_level("whitespacesplit_strip_nfd", normalizers.Sequence([normalizers.Strip(), normalizers.NFD(),
                                                                               normalizers.Replace(Regex(r"\d+"), "#")]),
                            pre_tokenizers.WhitespaceSplit(), decoders.Fuse(), fallback=False))
    built.append(char_level("punctuation_isolated_nfkd", normalizers.NFKD(), pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]), decoders.Fuse()))
    # continuing_subword_prefix / end_of_word_suffix: char-level with byte fallback (the affixed symbol's bytes), with
    # unk only and the suffix alone, and byte-level.
    built.append(char_level("affixes_char_fallback", None,
                            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True),
                            decoders.Fuse(), **AFFIXES))
    built.append(char_level("affixes_char_unk_suffix", normalizers.Lowercase(), pre_tokenizers.WhitespaceSplit(),
                            decoders.Fuse(), fallback=False, end_of_word_suffix="</w>"))
    built.append(byte_level("affixes_bytelevel", None, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                            **AFFIXES))

    goldens = {"tokenizers_version": tokenizers.__version__, "cases": CASES, "tokenizers": {}}
    for entry in built:
        if len(entry) == 2:
            name, tok = entry
            fallback = False
        else:
            name, tok, fallback = entry
        path = os.path.join(OUT, name + ".json")
        tok.save(path)
        if fallback:
            add_byte_fallback(path)
            tok = Tokenizer.from_file(path)
        # Added tokens with each flag (not special, so they are matched like any added token).
        tok.add_special_tokens([AddedToken("<|end|>", special=True, normalized=False)])
        tok.add_tokens([AddedToken("<|w|>", single_word=True, normalized=False),
                        AddedToken("<|l|>", lstrip=True, normalized=False),
                        AddedToken("<|r|>", rstrip=True, normalized=False)])
        tok.save(path)
        tok = Tokenizer.from_file(path)
        rows = []
        for text in CASES:
            enc = tok.encode(text, add_special_tokens=False)
            row = {"ids": enc.ids, "decoded": tok.decode(enc.ids, skip_special_tokens=False)}
            with_special = tok.encode(text, add_special_tokens=True).ids
            if with_special != enc.ids:
                row["ids_with_special"] = with_special
            rows.append(row)
        goldens["tokenizers"][name] = rows
        print(name, os.path.getsize(path), file=sys.stderr)
    with open(os.path.join(OUT, "goldens.json"), "w", encoding="utf-8") as f:
        json.dump(goldens, f, ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
