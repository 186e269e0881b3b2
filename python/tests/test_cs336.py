"""The CS336 adapter shapes: train_bpe equals the reference trainer and the CLI; Tokenizer from in-memory objects."""

import json
import os
import subprocess
import sys

import pytest

import lmkit
from conftest import TEST_DATA, tiktoken_encoding

BPE = os.path.join(TEST_DATA, "bpe")


def gpt2_bytes_to_unicode():
    # GPT-2's printable form of bytes (a published table: printable Latin-1 stays, the rest shifts past 255).
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    table, n = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    return table


def test_train_bpe_equals_reference():
    vocab, merges = lmkit.train_bpe(os.path.join(BPE, "corpus.en"), 500, ["<|endoftext|>"])
    dec = {v: k for k, v in gpt2_bytes_to_unicode().items()}
    to_bytes = lambda s: bytes(dec[c] for c in s)  # noqa: E731
    with open(os.path.join(BPE, "train-bpe-reference-merges.txt"), encoding="utf-8") as f:
        ref_merges = [tuple(to_bytes(p) for p in line.rstrip("\n").split(" ")) for line in f if line.strip()]
    with open(os.path.join(BPE, "train-bpe-reference-vocab.json"), encoding="utf-8") as f:
        ref_vocab = {i: to_bytes(t) for t, i in json.load(f).items()}
    assert merges == ref_merges
    assert set(vocab.values()) == set(ref_vocab.values())
    assert len(vocab) == 500 and vocab[0] == b"<|endoftext|>"


def test_train_bpe_equals_cli_and_writes_files(tmp_path):
    corpus = os.path.join(BPE, "tinystories_sample.txt")
    vocab, merges = lmkit.train_bpe(corpus, 400, ["<|endoftext|>"], num_threads=2, output_dir=tmp_path / "py")
    cli = subprocess.run([sys.executable, "-m", "lmkit", "bpe", "train", corpus, "--vocab-size", "400",
                          "--special-token", "<|endoftext|>", "-o", str(tmp_path / "cli"), "-j", "1", "--quiet"],
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    for name in ("vocab.json", "merges.txt", "tokenizer.json"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    # Same result for one thread.
    assert lmkit.train_bpe(corpus, 400, ["<|endoftext|>"], num_threads=1) == (vocab, merges)


def bpe_parts(ranks, token, max_rank):
    parts = [bytes([b]) for b in token]
    while True:
        best = None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < max_rank and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            return parts
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]


def test_tokenizer_from_memory_matches_gpt2():
    theirs = tiktoken_encoding("gpt2")
    ranks = theirs._mergeable_ranks
    vocab = {rank: token for token, rank in ranks.items()}
    vocab[50256] = b"<|endoftext|>"
    # GPT-2's merge list from its ranks: the two parts a token's bytes reach under the merges ranked below it.
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) > 1:
            parts = bpe_parts(ranks, token, rank)
            assert len(parts) == 2, token
            merges.append(tuple(parts))
    gpt2 = lmkit.get_encoding("gpt2")
    tok = lmkit.Tokenizer(vocab, merges, special_tokens=["<|endoftext|>"])
    with open(os.path.join(BPE, "tinystories_sample.txt"), encoding="utf-8") as f:
        text = f.read()
    ids = tok.encode(text)
    assert ids == theirs.encode(text, allowed_special="all") == gpt2.encode(text, allowed_special="all")
    assert tok.decode(ids) == text


def test_overlapping_specials_longest_first():
    vocab = {i: bytes([i]) for i in range(256)}
    tok = lmkit.Tokenizer(vocab, [], special_tokens=["<|endoftext|>", "<|endoftext|><|endoftext|>"])
    ids = tok.encode("a<|endoftext|><|endoftext|>b<|endoftext|>")
    specials = [i for i in ids if i >= 256]
    assert len(specials) == 2 and specials[0] != specials[1]
    assert tok.decode(ids) == "a<|endoftext|><|endoftext|>b<|endoftext|>"


def test_encode_iterable_is_lazy_and_equal(tmp_path):
    vocab, merges = lmkit.train_bpe(os.path.join(BPE, "corpus.en"), 500, ["<|endoftext|>"])
    tok = lmkit.Tokenizer(vocab, merges, special_tokens=["<|endoftext|>"])
    path = os.path.join(BPE, "tinystories_sample.txt")
    with open(path, encoding="utf-8") as f:
        streamed = list(tok.encode_iterable(f))
    with open(path, encoding="utf-8") as f:
        assert streamed == tok.encode(f.read())

    def endless():
        while True:
            yield "Once upon a time there was a cat.\n"

    it = tok.encode_iterable(endless())
    first = [next(it) for _ in range(1000)]  # returns: nothing waits for the end of the input
    assert tok.decode(first).startswith("Once upon a time")


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        lmkit.train_bpe(tmp_path / "missing.txt", 300, [])
    with pytest.raises(ValueError, match="vocab_size 100 is below the 257 tokens"):
        lmkit.train_bpe(os.path.join(BPE, "corpus.en"), 100, ["<|endoftext|>"])
    with pytest.raises(ValueError):
        lmkit.Tokenizer({0: b"a"}, [(b"a", b"b")])
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError):
        lmkit.train_bpe(os.path.join(BPE, "corpus.en"), 300, [], output_dir=tmp_path / "file" / "sub")


def test_train_bpe_refuses_an_output_dir_holding_its_input(tmp_path):
    corpus = tmp_path / "vocab.json"  # the corpus has the name of a file train_bpe writes
    corpus.write_text("low lower lowest newer wider\n" * 20)
    before = corpus.read_bytes()
    with pytest.raises(ValueError, match="is also the output \\(output_dir "):
        lmkit.train_bpe(str(corpus), 270, [], output_dir=str(tmp_path))
    assert corpus.read_bytes() == before and not (tmp_path / "merges.txt").exists()


@pytest.mark.parametrize("name", ["qwen2_nfc_split", "neox_nfc_bytelevel", "llama2_prepend_replace",
                                  "mistral_metaspace_first", "metaspace_always_split", "split_contiguous"])
def test_encode_safe_prefix_cuts_pipelines_by_their_own_rule(name):
    # The core behind encode_iterable: the prefix it encodes plus the rest encoded apart are the whole's ids, for
    # tokenizer.json pipelines too (their cut is the streaming encoder's: a newline before a letter where the
    # pipeline allows it, the end of an added token such as </s>, else none).
    from lmkit import _lmkit

    core = _lmkit.CoreBpe.load(os.path.join(BPE, "hf", name + ".json"), [])
    text = "Hello there.\nWorld  of  text,\nnew lines\n" * 20 + "<|end|> after"
    ids, used = core.encode_safe_prefix(text, "all", ())
    whole = core.encode(text, "all", ())
    assert ids + core.encode(text[used:], "all", ()) == whole
    if name in ("qwen2_nfc_split", "neox_nfc_bytelevel"):  # newline-letter cuts, and after <|end|>
        assert used == len(text) - len(" after")
    if name == "llama2_prepend_replace":  # only after <|end|> (Prepend)
        assert used == len(text) - len(" after")
