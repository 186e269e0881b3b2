"""Random-window reads for training from four storage formats: lmkit's .bin reader, a NumPy .npy memmap, Parquet
(pyarrow) and Lance (pylance `take`). Driven by bench/storage.sh, which documents the arguments.

Every reader reads exactly the same windows of the same tokens: the window starts come from a Python port of lmkit's
sampler (src/lmkit/dataload/sampler.cpp: splitmix64 + Lemire's unbiased draw, batch k from (seed, k) alone), and each
reader folds the windows it read into lmkit's batch checksum (batch_builder.cpp FoldDigest). The harness refuses a
table whose readers disagree with each other or with `lmkit dataload --json`'s checksum.

Per configuration (reader x warm/cold x 1/2 workers): `batches` batches of B windows of T+1 tokens, batch k handled by
worker k mod W (worker processes, as a DataLoader's); tokens/s = batches x B x T / wall time; bytes read from storage
per window from the workers' /proc/self/io read_bytes. Warm: every file of the format read once first. Cold: every file
of the format evicted first (posix_fadvise DONTNEED: only those files; nothing global), then the run reads from storage
(and its own re-reads hit the cache, as in training).
"""
import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time

import numpy as np

M64 = (1 << 64) - 1


# ---- lmkit's sampler and checksum, ported ---------------------------------------------------------------------------
def splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def uniform_below(state, bound):
    state, x = splitmix(state)
    m = x * bound
    low = m & M64
    if low < bound:
        threshold = ((1 << 64) - bound) % bound
        while low < threshold:
            state, x = splitmix(state)
            m = x * bound
            low = m & M64
    return state, m >> 64


def batch_starts(seed, index, batch, windows):
    state = seed ^ 0x6A09E667F3BCC909
    _, z = splitmix(index)
    state ^= z
    out = []
    for _ in range(batch):
        state, s = uniform_below(state, windows)
        out.append(s)
    return out


def mix(h, v):
    return (h ^ ((v + 0x9E3779B97F4A7C15 + (h << 6) + (h >> 2)) & M64)) & M64


def batch_digest(index, wins):
    """lmkit's per-batch digest: first and last token of each row of x, last of y (x = w[:T], y = w[1:])."""
    h = index
    for w in wins:
        h = mix(h, int(w[0]))
        h = mix(h, int(w[-2]))
        h = mix(h, int(w[-1]))
    return h


# ---- readers ---------------------------------------------------------------------------------------------------------
class NpyReader:
    files = staticmethod(lambda d: [os.path.join(d, "tokens.npy")])

    def __init__(self, d):
        self.a = np.load(os.path.join(d, "tokens.npy"), mmap_mode="r")

    def batch(self, starts, n):
        return [np.array(self.a[s:s + n]) for s in starts]


class ParquetReader:
    def __init__(self, d, name):
        import pyarrow.parquet as pq
        self.f = pq.ParquetFile(os.path.join(d, name))
        md = self.f.metadata
        self.bounds = np.cumsum([0] + [md.row_group(i).num_rows for i in range(md.num_row_groups)])

    def batch(self, starts, n):
        # The row groups the batch's windows touch, each read (and decompressed) once.
        groups = set()
        for s in starts:
            g0 = int(np.searchsorted(self.bounds, s, side="right")) - 1
            g1 = int(np.searchsorted(self.bounds, s + n - 1, side="right")) - 1
            groups.update(range(g0, g1 + 1))
        groups = sorted(groups)
        col = self.f.read_row_groups(groups, columns=["tokens"], use_threads=False).column(0).to_numpy()
        offset, base = {}, 0
        for g in groups:
            offset[g] = base
            base += int(self.bounds[g + 1] - self.bounds[g])
        out = []
        for s in starts:
            g0 = int(np.searchsorted(self.bounds, s, side="right")) - 1
            i = offset[g0] + s - int(self.bounds[g0])  # the groups of one window are adjacent in `groups`
            out.append(col[i:i + n])
        return out


class LanceReader:
    def __init__(self, d):
        import lance
        self.ds = lance.dataset(os.path.join(d, "tokens.lance"))

    def batch(self, starts, n):
        idx = np.concatenate([np.arange(s, s + n, dtype=np.int64) for s in starts])
        order = np.argsort(idx, kind="stable")
        col = self.ds.take(idx[order], columns=["tokens"]).column(0).to_numpy()
        flat = np.empty_like(col)
        flat[order] = col  # back to window order
        return [flat[i * n:(i + 1) * n] for i in range(len(starts))]


READERS = {
    "npy": (lambda d: NpyReader(d), lambda d: [os.path.join(d, "tokens.npy")]),
    "parquet": (lambda d: ParquetReader(d, "tokens.parquet"), lambda d: [os.path.join(d, "tokens.parquet")]),
    "parquet-16k": (lambda d: ParquetReader(d, "tokens.16k.parquet"), lambda d: [os.path.join(d, "tokens.16k.parquet")]),
    "lance": (lambda d: LanceReader(d), lambda d: [os.path.join(r, f) for r, _, fs in
                                                  os.walk(os.path.join(d, "tokens.lance")) for f in fs]),
}


def io_read_bytes():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    return 0


def worker(args):
    name, d, seed, batch, context, windows, nbatches, wid, nworkers, barrier = args
    reader = READERS[name][0](d)
    barrier.wait()
    io0 = io_read_bytes()
    t0 = time.clock_gettime(time.CLOCK_MONOTONIC)  # one clock for every process
    digests = {}
    for k in range(wid, nbatches, nworkers):
        wins = reader.batch(batch_starts(seed, k, batch, windows), context + 1)
        digests[k] = batch_digest(k, wins)
    t1 = time.clock_gettime(time.CLOCK_MONOTONIC)
    return digests, io_read_bytes() - io0, t0, t1


# ---- cache state -----------------------------------------------------------------------------------------------------
def evict(files):
    for p in files:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fdatasync(fd)  # DONTNEED leaves dirty pages (a format just written) in the cache
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def warm(files):
    for p in files:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass


# ---- formats ---------------------------------------------------------------------------------------------------------
def prepare(tokens_path, max_tokens, d):
    """The same tokens in every format: tokens.bin (uint16), .npy, Parquet (pyarrow defaults; and 16 Ki-row groups,
    uncompressed) and Lance (pylance defaults), all one flat uint16 column `tokens`."""
    import lance
    import pyarrow as pa
    import pyarrow.parquet as pq
    os.makedirs(d, exist_ok=True)
    a = np.fromfile(tokens_path, dtype="<u2")
    if max_tokens:
        a = a[:max_tokens]
    stamp = os.path.join(d, "stamp.json")
    want = {"source": os.path.abspath(tokens_path), "tokens": int(a.size), "pyarrow": pa.__version__,
            "lance": lance.__version__}
    if os.path.exists(stamp) and json.load(open(stamp)) == want:
        return a.size
    a.tofile(os.path.join(d, "tokens.bin"))
    np.save(os.path.join(d, "tokens.npy"), a)
    t = pa.table({"tokens": pa.array(a, type=pa.uint16())})
    pq.write_table(t, os.path.join(d, "tokens.parquet"))
    pq.write_table(t, os.path.join(d, "tokens.16k.parquet"), row_group_size=16384, compression="none")
    lance.write_dataset(t, os.path.join(d, "tokens.lance"), mode="overwrite")
    json.dump(want, open(stamp, "w"))
    return a.size


def run_python(name, d, seed, batch, context, windows, nbatches, workers, cache):
    files = READERS[name][1](d)
    (warm if cache == "warm" else evict)(files)
    # spawn: Lance is not fork-safe. Workers open their reader, then wait at the barrier: the clock starts there.
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(workers) as pool:
        barrier = manager.Barrier(workers + 1)
        res = pool.map_async(worker, [(name, d, seed, batch, context, windows, nbatches, w, workers, barrier)
                                      for w in range(workers)])
        barrier.wait()
        parts = res.get()
    # From the first worker's start to the last one's end (the parent may be scheduled after the workers ran).
    wall = max(p[3] for p in parts) - min(p[2] for p in parts)
    digests, read = {}, 0
    for dg, rb, _, _ in parts:
        digests.update(dg)
        read += rb
    checksum = 0
    for k in range(nbatches):
        checksum = mix(checksum, digests[k])
    return {"tokens_per_s": nbatches * batch * context / wall, "read_bytes": read, "checksum": f"{checksum:016x}",
            "wall_s": wall}


def run_lmkit(lmkit, access, advice, d, seed, batch, context, nbatches, workers, cache):
    path = os.path.join(d, "tokens.bin")
    (warm if cache == "warm" else evict)([path])
    out = subprocess.run([lmkit, "--json", "--quiet", "--threads", str(workers), "dataload", path, "--steps",
                          str(nbatches), "--warmup", "0", "-b", str(batch), "-t", str(context), "--access", access,
                          "--advice", advice, "--prefetch", str(2 * workers), "--seed", str(seed)],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out)["runs"][0]
    return {"tokens_per_s": r["throughput"]["tokens_per_s"], "read_bytes": r["storage"]["read_bytes"],
            "checksum": r["checksum"], "wall_s": r["throughput"]["steady_s"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lmkit", required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--max-tokens", type=int, default=0)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    n = prepare(a.tokens, a.max_tokens, a.work)
    windows = n - a.context
    rows = []
    readers = [("lmkit mmap", lambda w, c: run_lmkit(a.lmkit, "mmap", "normal", a.work, a.seed, a.batch, a.context,
                                                      a.batches, w, c)),
               ("lmkit pread+random", lambda w, c: run_lmkit(a.lmkit, "pread", "random", a.work, a.seed, a.batch,
                                                              a.context, a.batches, w, c))]
    for name in ["npy", "parquet", "parquet-16k", "lance"]:
        readers.append((name, lambda w, c, name=name: run_python(name, a.work, a.seed, a.batch, a.context, windows,
                                                                  a.batches, w, c)))
    for cache in ["warm", "cold"]:
        for workers in [1, 2]:
            for label, fn in readers:
                r = fn(workers, cache)
                r.update(reader=label, cache=cache, workers=workers,
                         read_bytes_per_window=r["read_bytes"] / (a.batches * a.batch))
                rows.append(r)
                print(f"{cache:4} x{workers} {label:20} {r['tokens_per_s'] / 1e6:9.3f} M tokens/s  "
                      f"{r['read_bytes_per_window'] / 1024:9.1f} KiB read per window  {r['checksum']}",
                      file=sys.stderr)
    sums = {r["checksum"] for r in rows}
    if len(sums) != 1:
        sys.exit(f"storage.py: readers read different windows (checksums {sorted(sums)})")
    sizes = {}
    for name, (_, files) in READERS.items():
        sizes[name] = sum(os.path.getsize(p) for p in files(a.work))
    sizes["bin"] = os.path.getsize(os.path.join(a.work, "tokens.bin"))
    import lance
    import pyarrow as pa
    json.dump({"tokens": int(n), "batches": a.batches, "batch": a.batch, "context": a.context, "seed": a.seed,
               "checksum": sums.pop(), "sizes": sizes, "numpy": np.__version__, "pyarrow": pa.__version__,
               "pylance": lance.__version__, "rows": rows}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
