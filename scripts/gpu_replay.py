#!/usr/bin/env python3
"""Replays `lmkit plan --trace` allocator calls through PyTorch's real CUDA caching allocator and compares, event by
event, the reserved bytes (torch.cuda.memory_stats()["reserved_bytes.all.current"]) and whether the event ran out of
memory with lmkit's simulation (src/lmkit/accounting/cuda_allocator_sim.h). Used by scripts/gpu-check.sh.

  python3 scripts/gpu_replay.py TRACE.json            every replayable policy, each in its own process
  python3 scripts/gpu_replay.py TRACE.json POLICY     one policy in this process (PYTORCH_CUDA_ALLOC_CONF set by caller)

The device is limited to the trace's capacity with torch.cuda.set_per_process_memory_fraction, the limit the
simulation models. Exit status: 0 all events match, 1 a mismatch (the first is printed), 77 no CUDA torch (skipped).
"""
import json
import os
import subprocess
import sys

CONF = {"default": "", "arch_buffer": "", "expandable_segments": "expandable_segments:True"}


def replay(trace, policy):
    import torch

    if not torch.cuda.is_available():
        print("gpu_replay: torch sees no CUDA device: skipped")
        return 77
    cap = int(trace["capacity_bytes"])
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(cap / total, 0)
    allowed = int(cap / total * total)
    p = trace["policies"][policy]
    want_reserved, want_failed = p["reserved_bytes"], p["failed"]
    ops = p["ops"]
    live = {}
    k = 0
    mismatches = 0
    for ev in range(len(want_reserved)):
        failed = False
        while k < len(ops) and ops[k][0] == ev:
            op = ops[k]
            k += 1
            if op[1] == "a":
                try:
                    t = torch.empty(op[3], dtype=torch.uint8, device="cuda")
                    ok = True
                except torch.cuda.OutOfMemoryError:
                    ok = False
                if ok and op[4]:
                    live[op[2]] = t
                if ok != op[4]:
                    print(f"{policy}: event {ev}: allocation of {op[3]} bytes {'succeeded' if ok else 'failed'} "
                          f"on the device, the simulation says {'ok' if op[4] else 'out of memory'}")
                    return 1
                failed |= not ok
            elif op[1] == "f":
                live.pop(op[2], None)
            else:
                torch.cuda.empty_cache()
        # Every allocation's outcome was compared above (an event fails when one of its allocations does, unless the
        # policy retried it: arch_buffer gives idle buffers back and tries again); here the reserved bytes.
        stats = torch.cuda.memory_stats()
        reserved = stats.get("reserved_bytes.all.current", 0)
        if reserved != want_reserved[ev]:
            mismatches += 1
            if mismatches == 1:
                print(f"{policy}: event {ev}: device reserved {reserved} B, simulation {want_reserved[ev]} B "
                      f"(allowed {allowed} of {total} B; an allocation failed in this event: {failed})")
    n = len(want_reserved)
    print(f"{policy}: {n - mismatches}/{n} events match (reserved bytes and failures), "
          f"{sum(want_failed)} simulated failures")
    return 1 if mismatches else 0


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1]) as f:
            trace = json.load(f)
    except (OSError, ValueError) as e:
        print(f"gpu_replay: {sys.argv[1]}: {e}", file=sys.stderr)
        return 2
    if not isinstance(trace, dict) or trace.get("schema") != "lmkit.plan-trace/1":
        print(f"gpu_replay: {sys.argv[1]}: not an lmkit plan trace", file=sys.stderr)
        return 2
    if len(sys.argv) == 3:
        return replay(trace, sys.argv[2])
    try:
        import torch  # noqa: F401
    except ImportError:
        print("gpu_replay: no torch: skipped")
        return 77
    worst = 0
    for policy in trace["policies"]:
        if policy not in CONF:
            continue
        env = dict(os.environ)
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        if CONF[policy]:
            env["PYTORCH_CUDA_ALLOC_CONF"] = CONF[policy]
        rc = subprocess.run([sys.executable, __file__, sys.argv[1], policy], env=env).returncode
        if rc == 77:
            return 77
        worst = max(worst, rc)
    return worst


if __name__ == "__main__":
    sys.exit(main())
