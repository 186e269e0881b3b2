"""tiktoken's ``Encoding`` surface over lmkit's C++ tokenizer core.

The special-token rules are tiktoken's, applied by the core (``bpe/special_policy.h``, the rules ``lmkit bpe encode
--allowed-special/--disallowed-special`` follow): ``encode`` refuses text that spells a disallowed special token (by
default every special token), ``allowed_special`` turns matching on for the tokens it names, and ``encode_ordinary``
never matches specials. Naming a token that is not a special token of the encoding is a ValueError.
"""

from __future__ import annotations

import os
from typing import AbstractSet, Collection, Literal, Sequence

from . import _lmkit

_BUILTINS = ("gpt2", "cl100k_base", "o200k_base")
_cache: dict[str, "Encoding"] = {}


def list_encoding_names() -> list[str]:
    """The built-in encodings, shipped with the package (no download)."""
    return list(_BUILTINS)


def get_encoding(name: str) -> "Encoding":
    """A built-in encoding by name (``gpt2``, ``cl100k_base``, ``o200k_base``); cached, as tiktoken does."""
    if name not in _BUILTINS:
        raise ValueError(f"unknown encoding {name!r}; built-in encodings: {', '.join(_BUILTINS)}")
    enc = _cache.get(name)
    if enc is None:
        enc = Encoding(_lmkit.CoreBpe.load(name), name=name, spec=name)
        _cache[name] = enc
    return enc


def _clean(text: str) -> str:
    # Lone surrogates, which UTF-8 cannot hold, are replaced by U+FFFD in the extension (as tiktoken does), which
    # reads the str's UTF-8 without a copy; checking here would encode every text once more.
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    return text


class Encoding:
    """A byte-level BPE encoding with tiktoken's methods and semantics.

    Built with :func:`get_encoding`, :meth:`from_files`, :meth:`from_tokenizer_json` or :meth:`from_path`.
    Thread-safe: one object may encode from many threads (the GIL is released while encoding).
    """

    def __init__(self, core: "_lmkit.CoreBpe", *, name: str, spec: str | None = None):
        self._core = core
        self.name = name
        self._spec = spec
        self._special_tokens: dict[str, int] = dict(core.special_tokens)

    # ---- constructors ----
    @classmethod
    def from_files(cls, vocab: str | os.PathLike, merges: str | os.PathLike,
                   special_tokens: Sequence[str] | None = None) -> "Encoding":
        """GPT-2's vocab.json + merges.txt; ``special_tokens`` names the tokens matched as specials."""
        core = _lmkit.CoreBpe.from_files(os.fspath(vocab), os.fspath(merges), list(special_tokens or ()))
        return cls(core, name=os.path.basename(os.fspath(vocab)), spec=None)

    @classmethod
    def from_tokenizer_json(cls, path: str | os.PathLike) -> "Encoding":
        """A Hugging Face tokenizer.json (byte-level BPE); its added tokens are the special tokens."""
        p = os.fspath(path)
        return cls(_lmkit.CoreBpe.load(p, []), name=os.path.basename(p), spec=p)

    @classmethod
    def from_path(cls, path: str | os.PathLike, special_tokens: Sequence[str] | None = None) -> "Encoding":
        """Anything ``lmkit bpe encode --tokenizer`` reads: a trained folder, tokenizer.json, a .tiktoken file."""
        p = os.fspath(path)
        return cls(_lmkit.CoreBpe.load(p, list(special_tokens or ())), name=os.path.basename(p.rstrip("/")), spec=p)

    # ---- properties ----
    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    @property
    def n_vocab(self) -> int:
        """One past the largest token id."""
        return self._core.n_vocab

    @property
    def max_token_value(self) -> int:
        return self._core.n_vocab - 1

    @property
    def eot_token(self) -> int:
        """The id of ``<|endoftext|>``."""
        try:
            return self._special_tokens["<|endoftext|>"]
        except KeyError:
            raise AttributeError(f"encoding {self.name!r} has no <|endoftext|> token") from None

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    def is_special_token(self, token: int) -> bool:
        return token in self._special_tokens.values()

    # ---- encoding ----
    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of ``text`` with special tokens encoded as ordinary text."""
        return self._core.encode_ordinary(_clean(text))

    def encode(self, text: str, *, allowed_special: "Literal['all'] | AbstractSet[str]" = set(),
               disallowed_special: "Literal['all'] | Collection[str]" = "all") -> list[int]:
        """Ids of ``text``. Text spelling a special token is an error unless the token is in ``allowed_special``
        (then it encodes as the special) or not in ``disallowed_special`` (then it encodes as ordinary text)."""
        return self._core.encode(_clean(text), allowed_special, disallowed_special)

    def encode_to_numpy(self, text: str, *, allowed_special: "Literal['all'] | AbstractSet[str]" = set(),
                        disallowed_special: "Literal['all'] | Collection[str]" = "all", dtype=None):
        """Like :meth:`encode`, as a NumPy array without a copy: uint32 by default, uint16 when ``dtype`` is
        ``numpy.uint16`` (refused when an id of this encoding does not fit)."""
        import numpy as np

        text = _clean(text)
        narrow = dtype is not None and np.dtype(dtype) == np.uint16
        if dtype is not None and not narrow and np.dtype(dtype) != np.uint32:
            raise ValueError(f"dtype must be numpy.uint16 or numpy.uint32, not {np.dtype(dtype)}")
        if narrow and self.n_vocab > 65536:
            raise ValueError(f"encoding {self.name!r} has ids up to {self.max_token_value}: they do not fit uint16")
        return self._core.encode_to_array(text, allowed_special, disallowed_special, narrow)

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = 8) -> list[list[int]]:
        return self._core.encode_batch([_clean(t) for t in text], (), (), max(1, num_threads))

    def encode_batch(self, text: Sequence[str], *, num_threads: int = 8,
                     allowed_special: "Literal['all'] | AbstractSet[str]" = set(),
                     disallowed_special: "Literal['all'] | Collection[str]" = "all") -> list[list[int]]:
        """:meth:`encode` for each string, on ``num_threads`` threads (the GIL released); results in input order."""
        texts = [_clean(t) for t in text]
        return self._core.encode_batch(texts, allowed_special, disallowed_special, max(1, num_threads))

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        b = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else bytes(text_or_bytes)
        if isinstance(text_or_bytes, str) and text_or_bytes in self._special_tokens:
            return self._special_tokens[text_or_bytes]
        tok = self._core.token_id(b)
        if tok is None:
            raise KeyError(text_or_bytes)
        return tok

    def encode_file(self, path: str | os.PathLike, out: str | os.PathLike, *, format: str | None = None,
                    dtype: str = "auto", num_threads: int | None = None) -> dict:
        """Encodes a file of any size into a token file (``.bin``, ``.npy``, ``.json`` or text by extension, or
        ``format``), streamed in bounded memory, as ``lmkit bpe encode`` does; returns its summary."""
        if self._spec is None:
            raise ValueError("encode_file needs an encoding loaded from a name or a file")
        threads = num_threads if num_threads is not None else (os.cpu_count() or 1)
        return _lmkit.encode_file(self._spec, os.fspath(path), os.fspath(out), format, dtype, max(1, threads))

    # ---- decoding ----
    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes the ids stand for; KeyError for an unknown id."""
        return self._core.decode_bytes(tokens)

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text the ids stand for (invalid UTF-8 handled by ``errors``, as bytes.decode)."""
        return self._core.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        return self._core.token_bytes(token)

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        return [self._core.token_bytes(t) for t in tokens]

