"""Shared fixtures: the repository's data, and pip's tiktoken built from the rank files lmkit ships (no download)."""

import json
import os

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(REPO, "data")
TEST_DATA = os.path.join(REPO, "tests", "data")
ENCODINGS = ("gpt2", "cl100k_base", "o200k_base")


def tiktoken_encoding(name):
    """pip's tiktoken Encoding for a built-in name, from data/tokenizers (the same files lmkit reads)."""
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    with open(os.path.join(DATA, "tokenizers", name + ".json")) as f:
        meta = json.load(f)
    ranks = load_tiktoken_bpe(os.path.join(DATA, "tokenizers", name + ".tiktoken"))
    return tiktoken.Encoding(name=name, pat_str=meta["pat_str"], mergeable_ranks=ranks,
                             special_tokens=meta["special_tokens"])


@pytest.fixture(scope="session", params=ENCODINGS)
def pair(request):
    """(lmkit encoding, tiktoken encoding) for each built-in name."""
    import lmkit

    return lmkit.get_encoding(request.param), tiktoken_encoding(request.param)
