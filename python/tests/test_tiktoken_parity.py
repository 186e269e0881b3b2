"""lmkit.Encoding against pip's tiktoken: identical ids, the same special-token rules and the same errors."""

import os
import random

import pytest

import lmkit
from conftest import TEST_DATA

# Pieces that stress the pre-tokenizer: contractions in both cases, runs of spaces before newlines, digits in runs,
# non-ASCII letters and marks, symbols, and the fragments of special tokens.
PIECES = ["'s", "'S", "'ll", "'LL", "'re", "'ve", "'m", "'d", "'t", " ", "  ", "   ", "\n", "\n\n", "\r\n", "\t",
          " \n", "  \n ", "\u00a0", "\u3000", "1", "12", "123", "1234", "3.14", "-", "--", "...", "!?", "$", "€",
          "hello", " world", "Hello", "WORLD", "naïve", "Ünïcödé", "Ωμέγα", "Привет", "日本語", "中文字", "한국어",
          "مرحبا", "हिन्दी", "ก่", "e\u0301", "🙂", "👨‍👩‍👧", "🇫🇷", "<|endoftext|>", "<|", "|>", "<|fim_prefix|>",
          "endoftext", "\\", "\"", "`", "x", "Z", "_", "__init__", "a1b2", "٣", "½", "Ⅻ", "ﬁ", "\u200b", "\x00", "\x7f"]
RANGES = [(0x20, 0x7e), (0xa0, 0x24f), (0x370, 0x3ff), (0x400, 0x4ff), (0x590, 0x6ff), (0x900, 0x97f),
          (0x3040, 0x30ff), (0x4e00, 0x9fff), (0xac00, 0xd7a3), (0x1f300, 0x1f64f), (0x2000, 0x206f)]


def random_string(rng):
    parts = []
    for _ in range(rng.randint(1, 12)):
        if rng.random() < 0.6:
            parts.append(rng.choice(PIECES))
        else:
            lo, hi = rng.choice(RANGES)
            parts.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 6))))
    return "".join(parts)


def test_hello_world():
    assert lmkit.get_encoding("gpt2").encode("hello world") == [31373, 995]


def test_random_and_adversarial_strings(pair):
    ours, theirs = pair
    rng = random.Random(20261202)
    n = int(os.environ.get("LMKIT_PARITY_STRINGS", "3000"))
    for _ in range(n):
        s = random_string(rng)
        assert ours.encode_ordinary(s) == theirs.encode_ordinary(s), repr(s)
        assert ours.encode(s, disallowed_special=()) == theirs.encode(s, disallowed_special=()), repr(s)
        assert ours.encode(s, allowed_special="all") == theirs.encode(s, allowed_special="all"), repr(s)


def test_real_text(pair):
    ours, theirs = pair
    for name in ("corpus.en", "tinystories_sample.txt"):
        with open(os.path.join(TEST_DATA, "bpe", name), encoding="utf-8") as f:
            text = f.read()
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
        assert ours.decode(ours.encode_ordinary(text)) == text


def test_attributes(pair):
    ours, theirs = pair
    assert ours.n_vocab == theirs.n_vocab
    assert ours.max_token_value == theirs.max_token_value
    assert ours.eot_token == theirs.eot_token
    assert ours.special_tokens_set == theirs.special_tokens_set


@pytest.mark.parametrize("kwargs", [{}, {"allowed_special": "all"}, {"disallowed_special": ()},
                                    {"allowed_special": {"<|endoftext|>"}},
                                    {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()}])
def test_special_token_rules(pair, kwargs):
    ours, theirs = pair
    for text in ["a<|endoftext|>b", "<|endoftext|>", "plain text", "x <|fim_prefix|> y <|endoftext|>",
                 "<|endoftext|><|endoftext|>", "<|endoftext", "<|endofprompt|>"]:
        try:
            expected = theirs.encode(text, **kwargs)
        except ValueError:
            with pytest.raises(ValueError) as err:
                ours.encode(text, **kwargs)
            assert "disallowed special token" in str(err.value)
            continue
        assert ours.encode(text, **kwargs) == expected, (text, kwargs)


def test_disallowed_special_names_token_and_offset():
    enc = lmkit.get_encoding("gpt2")
    with pytest.raises(ValueError, match=r"'<\|endoftext\|>' at byte offset 3"):
        enc.encode("ab <|endoftext|>")
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode_batch(["fine", "not <|endoftext|>"])
    with pytest.raises(ValueError):
        enc.encode_to_numpy("x<|endoftext|>")


def test_batch_and_numpy(pair):
    np = pytest.importorskip("numpy")
    ours, theirs = pair
    rng = random.Random(7)
    texts = [random_string(rng) for _ in range(300)]
    assert ours.encode_batch(texts, num_threads=2, disallowed_special=()) == \
        theirs.encode_batch(texts, num_threads=2, disallowed_special=())
    assert ours.encode_ordinary_batch(texts) == theirs.encode_ordinary_batch(texts)
    arr = ours.encode_to_numpy(texts[0] + "<|endoftext|>", allowed_special="all")
    assert arr.dtype == np.uint32
    assert arr.tolist() == theirs.encode(texts[0] + "<|endoftext|>", allowed_special="all")
    if ours.n_vocab <= 65536:
        small = ours.encode_to_numpy("hello world", dtype=np.uint16)
        assert small.dtype == np.uint16 and small.tolist() == [31373, 995]
    else:
        with pytest.raises(ValueError, match="uint16"):
            ours.encode_to_numpy("hello world", dtype=np.uint16)


def test_decoding(pair):
    ours, theirs = pair
    ids = theirs.encode("héllo wörld 🙂 <|endoftext|>", allowed_special="all")
    assert ours.decode_bytes(ids) == theirs.decode_bytes(ids)
    assert ours.decode(ids) == theirs.decode(ids)
    assert [ours.decode_single_token_bytes(t) for t in ids] == [theirs.decode_single_token_bytes(t) for t in ids]
    # A token that splits a character: both replace the broken sequence the same way.
    partial = theirs.encode("🙂")[:1]
    assert ours.decode(partial) == theirs.decode(partial)
    bad = ours.n_vocab + 10
    with pytest.raises(KeyError):
        theirs.decode_single_token_bytes(bad)
    with pytest.raises(KeyError):
        ours.decode_single_token_bytes(bad)
    with pytest.raises(KeyError):
        ours.decode([1, bad])


def test_lone_surrogates_are_replaced_as_tiktoken_does(pair):
    ours, theirs = pair
    s = "a\ud800b \udfff\ud83d"
    want = theirs.encode(s)
    assert ours.encode(s) == want
    assert ours.encode_ordinary(s) == theirs.encode_ordinary(s) == want
    assert ours.encode_batch([s, "x" + s], num_threads=2) == theirs.encode_batch([s, "x" + s], num_threads=2)
    assert list(ours.encode_to_numpy(s)) == want
    with pytest.raises(TypeError):
        ours.encode(b"bytes")


def test_special_token_rules_are_the_cores():
    enc = lmkit.get_encoding("gpt2")
    # A token that is not a special of the encoding: the core's SpecialRules refuse it, naming the keyword.
    with pytest.raises(ValueError, match="^allowed_special: \"<\\|nope\\|>\" is not a special token"):
        enc.encode("hi", allowed_special={"<|nope|>"})
    with pytest.raises(ValueError, match="disallowed special token '<\\|endoftext\\|>' at byte offset 3"):
        enc.encode_batch(["fine", "ab <|endoftext|>"], num_threads=2)
    with pytest.raises(ValueError, match="at byte offset 0"):
        enc.encode_to_numpy("<|endoftext|>")
    assert enc.encode("a<|endoftext|>", disallowed_special=()) == enc.encode_ordinary("a<|endoftext|>")
    assert enc.encode("a<|endoftext|>", allowed_special="all")[-1] == enc.eot_token
