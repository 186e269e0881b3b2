"""Runtime promises: the GIL is released while encoding, memory does not grow over many calls, errors are typed."""

import os
import threading
import time

import pytest

import lmkit
from conftest import TEST_DATA


def big_text(megabytes):
    with open(os.path.join(TEST_DATA, "bpe", "corpus.en"), encoding="utf-8") as f:
        base = f.read()
    return base * max(1, int(megabytes * 1e6) // len(base))


def test_gil_released_during_encode():
    enc = lmkit.get_encoding("cl100k_base")
    text = big_text(8)
    done = threading.Event()
    result = {}

    def work():
        t0 = time.perf_counter()
        result["ids"] = enc.encode_ordinary(text)
        result["seconds"] = time.perf_counter() - t0
        done.set()

    worker = threading.Thread(target=work)
    gaps, last = [], time.perf_counter()
    worker.start()
    while not done.is_set():  # this loop runs only while the worker does not hold the GIL
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    worker.join()
    assert result["seconds"] > 0.05
    # With the GIL held for the whole call this thread would stall for all of it; released, it keeps running.
    assert max(gaps) < 0.5 * result["seconds"], (max(gaps), result["seconds"])
    assert len(gaps) > 100


def test_two_threads_encode_concurrently_with_identical_results():
    enc = lmkit.get_encoding("gpt2")
    text = big_text(2)
    expected = enc.encode_ordinary(text)
    out = [None, None]

    def work(i):
        out[i] = enc.encode_ordinary(text)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out[0] == expected and out[1] == expected


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_memory_does_not_grow_over_many_calls():
    enc = lmkit.get_encoding("o200k_base")
    text = "The quick brown fox jumps over the lazy dog. " * 20
    for _ in range(1000):  # warm the encoder pool and the allocator
        enc.decode(enc.encode(text))
    before = rss_bytes()
    for _ in range(10000):
        enc.decode(enc.encode(text))
        enc.encode_batch([text, text], num_threads=2)
    grown = rss_bytes() - before
    assert grown < 8 << 20, f"RSS grew by {grown} bytes over 10k calls"


def test_error_types(tmp_path):
    with pytest.raises(ValueError, match="unknown encoding"):
        lmkit.get_encoding("gpt5")
    with pytest.raises(FileNotFoundError):
        lmkit.Encoding.from_tokenizer_json(tmp_path / "nope.json")
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="tokenizer.json"):
        lmkit.Encoding.from_tokenizer_json(bad)
    with pytest.raises(TypeError):
        lmkit.get_encoding("gpt2").encode(b"bytes are not text")
    enc = lmkit.get_encoding("gpt2")
    src = tmp_path / "in.txt"
    src.write_text("hello world\n")
    with pytest.raises(OSError):
        enc.encode_file(src, tmp_path / "missing-dir" / "out.bin")


def test_encode_file_round_trip(tmp_path):
    np = pytest.importorskip("numpy")
    enc = lmkit.get_encoding("gpt2")
    src = tmp_path / "in.txt"
    text = big_text(0.5)
    src.write_text(text, encoding="utf-8")
    summary = enc.encode_file(src, tmp_path / "out.npy", num_threads=2)
    ids = np.load(tmp_path / "out.npy")
    assert ids.dtype == np.uint16 and summary["tokens"] == len(ids)
    assert ids.tolist() == enc.encode(text, allowed_special="all")


def test_data_dir_override_reaches_the_core(tmp_path):
    # What an installed wheel does at import: the package's copy of data/ is searched before the build's. A broken
    # gpt2 rank file there must be the one read.
    (tmp_path / "tokenizers").mkdir()
    (tmp_path / "tokenizers" / "gpt2.tiktoken").write_text("not base64 at all\n")
    lmkit._lmkit._set_data_dir(str(tmp_path))
    try:
        with pytest.raises(ValueError, match="gpt2.tiktoken"):
            lmkit.Encoding.from_path("gpt2")
    finally:
        lmkit._lmkit._set_data_dir("")
    assert lmkit.Encoding.from_path("gpt2").encode("hello world") == [31373, 995]


def test_encode_file_refuses_to_overwrite_its_input(tmp_path):
    src = tmp_path / "text.txt"
    src.write_text("hello world\n")
    with pytest.raises(ValueError, match="is also the output \\(out "):
        lmkit.get_encoding("gpt2").encode_file(src, src)
    assert src.read_text() == "hello world\n"
