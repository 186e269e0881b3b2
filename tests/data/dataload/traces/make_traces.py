#!/usr/bin/env python3
"""Makes the torch.profiler traces that tests/unit/dataload/trace_*_test.cpp read: three real training loops, each
with one planted input-pipeline cause, profiled on the CPU (no GPU: the traces have no kernels or copies).

  fast-loader    num_workers=2, prefetch_factor=4, __getitem__ builds a tensor (no delay): the loader keeps up
                 -> NOT input-bound
  slow-getitem   num_workers=0, __getitem__ takes 8 ms per sample (16 per batch): loading runs in the training
                 process and takes ~2.5x the step -> HIGHLY input-bound, cause: __getitem__ in the main process
  few-workers    num_workers=1, __getitem__ takes 6 ms per sample: the one worker makes a batch every ~100 ms, the
                 step takes ~50 ms -> HIGHLY input-bound, cause: too few workers

The step is a real forward/backward/SGD update of a small MLP plus 50 ms of sleep standing in for the accelerator's
share of the step (on a GPU the host waits for it the same way); __getitem__'s cost is a sleep too (a read or decode
that waits). Sleeps keep the planted causes far from the verdict thresholds on a busy machine: CPU work would stretch
with the load, a sleep does not. Usage, from the repository root:

  /usr/bin/python3 tests/data/dataload/traces/make_traces.py OUTDIR          # Debian python3-torch 1.13
  /work/venvs/heavy/bin/python tests/data/dataload/traces/make_traces.py OUTDIR   # PyPI torch 2.x

1.13 writes with prof.export_chrome_trace (Debian's build has no Kineto: the legacy JSON array), 2.x with
torch.profiler.tensorboard_trace_handler(use_gzip=True) (the Kineto document, gzipped). Files are named
<scenario>.torch<major.minor>.json[.gz]; the 1.13 ones are gzipped afterwards to keep tests/data small.
"""
import glob
import gzip
import os
import shutil
import sys
import tempfile
import time

import torch
from torch.utils.data import DataLoader, Dataset

STEP_SLEEP_S = 0.050
BATCH = 16
SCENARIOS = {
    "fast-loader": dict(num_workers=2, delay_s=0.0, prefetch_factor=4),
    "slow-getitem": dict(num_workers=0, delay_s=0.008),
    "few-workers": dict(num_workers=1, delay_s=0.006),
}


class Samples(Dataset):
    def __init__(self, n, delay_s):
        self.n = n
        self.delay_s = delay_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay_s:
            time.sleep(self.delay_s)  # decoding / reading one sample
        return torch.full((64,), float(i % 7)), i % 10


def run(name, num_workers, delay_s, outdir, prefetch_factor=None):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    extra = {"prefetch_factor": prefetch_factor} if prefetch_factor else {}
    loader = DataLoader(Samples(BATCH * 40, delay_s), batch_size=BATCH, shuffle=True, num_workers=num_workers, **extra)
    version = ".".join(torch.__version__.split(".")[:2])
    target = os.path.join(outdir, f"{name}.torch{version}.json")
    kineto = hasattr(torch.profiler, "tensorboard_trace_handler") and torch.__version__ >= "2"
    tmp = tempfile.mkdtemp()
    handler = torch.profiler.tensorboard_trace_handler(tmp, use_gzip=True) if kineto else None
    # Steps before the recorded ones let the workers start and fill their buffers, as in a long run.
    sched = torch.profiler.schedule(wait=4, warmup=4, active=12, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=handler) as prof:
        for step, (x, y) in enumerate(loader):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            time.sleep(STEP_SLEEP_S)
            prof.step()
            if step >= 21:
                break
    if kineto:
        made = glob.glob(os.path.join(tmp, "*.pt.trace.json.gz"))
        assert len(made) == 1, made
        shutil.move(made[0], target + ".gz")
    else:
        prof.export_chrome_trace(target)
        with open(target, "rb") as f, gzip.open(target + ".gz", "wb", compresslevel=9) as g:
            g.write(f.read())
        os.remove(target)
    shutil.rmtree(tmp)
    print(target + ".gz")


if __name__ == "__main__":
    outdir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(outdir, exist_ok=True)
    for name, kw in SCENARIOS.items():
        run(name, outdir=outdir, **kw)
