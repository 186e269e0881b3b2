"""The shapes of Stanford CS336 assignment 1's adapters: ``train_bpe`` and ``Tokenizer``, on lmkit's C++ core."""

from __future__ import annotations

import os
from typing import Iterable, Iterator

from . import _lmkit


def train_bpe(input_path: str | os.PathLike, vocab_size: int, special_tokens: list[str] | None = None, *,
              num_threads: int | None = None, output_dir: str | os.PathLike | None = None,
              **_ignored) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Trains byte-level BPE on a text file with the CS336 reference's rules (merges identical to it).

    Returns ``(vocab, merges)``: ``vocab`` maps ids to token bytes (special tokens first, then the 256 bytes, then one
    token per merge), ``merges`` lists the merged pairs in order. With ``output_dir`` it also writes vocab.json,
    merges.txt and tokenizer.json there. The result is the same for any ``num_threads``.
    """
    threads = num_threads if num_threads is not None else (os.cpu_count() or 1)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size <= 0:
        raise ValueError(f"vocab_size must be a positive integer, not {vocab_size!r}")
    out = None if output_dir is None else os.fspath(output_dir)
    return _lmkit.train_bpe([os.fspath(input_path)], vocab_size, list(special_tokens or ()), max(1, threads), out)


class Tokenizer:
    """A byte-level BPE tokenizer from in-memory ``vocab`` and ``merges`` (CS336's ``get_tokenizer`` shape).

    Pre-tokenizes with GPT-2's pattern and applies ``merges`` in order; ``special_tokens`` are matched first,
    longest first (added to the vocabulary when missing).
    """

    def __init__(self, vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]],
                 special_tokens: list[str] | None = None):
        self._specials = list(special_tokens or ())
        self._core = _lmkit.CoreBpe.from_model(vocab, merges, self._specials)

    @classmethod
    def from_files(cls, vocab_filepath: str | os.PathLike, merges_filepath: str | os.PathLike,
                   special_tokens: list[str] | None = None) -> "Tokenizer":
        """GPT-2 style vocab.json + merges.txt (as ``lmkit bpe train`` writes them)."""
        self = cls.__new__(cls)
        self._specials = list(special_tokens or ())
        self._core = _lmkit.CoreBpe.from_files(os.fspath(vocab_filepath), os.fspath(merges_filepath), self._specials)
        return self

    def encode(self, text: str) -> list[int]:
        return self._core.encode(text, "all", ())

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Lazily encodes an iterable of strings (e.g. a file's lines), in bounded memory.

        Text is held back only up to the last point where a cut cannot change the ids (the core's safe-cut rule,
        which the streaming file encoder uses too), so the ids equal those of encoding the whole concatenation.
        """
        pending = ""
        for chunk in iterable:
            pending += chunk
            ids, used = self._core.encode_safe_prefix(pending, "all", ())
            if used:
                yield from ids
                pending = pending[used:]
        if pending:
            yield from self._core.encode(pending, "all", ())

    def decode(self, ids: list[int]) -> str:
        return self._core.decode_bytes(ids).decode("utf-8", errors="replace")

