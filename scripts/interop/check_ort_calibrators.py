"""Check 4: ONNX Runtime's own calibrators (onnxruntime.quantization.calibrate: MinMax, Entropy, Percentile) give the
ranges `lmkit calibrate --flavor ort` gives, on the shipped activations (tests/data/quant/laplace_acts.npy, 4 batches
of 100,000 float32).

The activations go through a one-node ONNX model (Identity), one batch per inference, and ORT calibrates the node's
input. Two ways of feeding, as ORT's users do:
  - per batch: one collect_data() per batch, as quantize_static does with extra_options CalibStridedMinMax=1 - the
    histogram grows batch by batch, which is what lmkit's ort flavour reproduces from the file's 4 batches;
  - at once: one collect_data() over the whole reader, quantize_static's default - ORT merges every batch into one
    array first, which is lmkit reading the same values as one batch.
Settings: MinMax (asymmetric: lmkit's min/max; symmetric: lmkit's range), Entropy at ORT's default 128 bins and at
2048 (lmkit --bins), Percentile 99.999 over 2048 bins (ORT's defaults; symmetric and not). Ranges must agree to 8 float32
ulps: numpy >= 2 computes np.histogram's float32 edges in float32 (NEP 50) where numpy 1.x used float64, which moves an
edge by a few ulps; the bin chosen is the same."""
import json
import os
import sys

import numpy as np

from common import main, REPO, Check, run_lmkit, workdir

ACTS = os.path.join(REPO, "tests", "data", "quant", "laplace_acts.npy")
ULPS = 8


def one_node_model(path, n):
    import onnx
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "calibrate", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def ort_range(model, work, batches, method, extra, per_batch):
    from onnxruntime.quantization.calibrate import CalibrationDataReader, CalibrationMethod, create_calibrator

    class Reader(CalibrationDataReader):
        def __init__(self, rows):
            self.it = iter([{"x": np.ascontiguousarray(r)} for r in rows])

        def get_next(self):
            return next(self.it, None)

    cal = create_calibrator(model, ["Identity"], augmented_model_path=os.path.join(work, "augmented.onnx"),
                            calibrate_method=getattr(CalibrationMethod, method), extra_options=extra)
    if per_batch:
        for b in batches:
            cal.collect_data(Reader([b]))
    else:
        cal.collect_data(Reader(batches))
    lo, hi = cal.compute_data().data["x"].range_value[:2]
    return [float(np.asarray(lo).reshape(-1)[0]), float(np.asarray(hi).reshape(-1)[0])]


def ulps(a, b):
    a32, b32 = np.float32(a), np.float32(b)
    return int(abs(int(np.array(a32).view(np.int32)) - int(np.array(b32).view(np.int32)))) if np.sign(a32) == np.sign(
        b32) else 1 << 30


def run():
    import onnx
    import onnxruntime
    c = Check("ort_calibrators")
    c.details.update(onnxruntime=onnxruntime.__version__, onnx=onnx.__version__, numpy=np.__version__)
    work = workdir("ort")
    acts = np.load(ACTS).astype(np.float32)
    batches = [acts[i] for i in range(acts.shape[0])]
    model = os.path.join(work, "identity.onnx")
    one_node_model(model, acts.shape[1])
    # The same values as one batch, for the at-once feeding.
    one = os.path.join(work, "laplace_acts.npy")
    np.save(one, acts.reshape(1, -1))
    cases = [  # label, ORT method, ORT extra_options, lmkit args, which lmkit field
        ("minmax", "MinMax", {}, ["--method", "minmax"], "minmax"),
        ("minmax symmetric", "MinMax", {"symmetric": True}, ["--method", "minmax"], "range"),
        ("entropy, 128 bins", "Entropy", {"num_bins": 128}, ["--method", "entropy", "--bins", "128"], "range"),
        ("entropy, 2048 bins", "Entropy", {"num_bins": 2048}, ["--method", "entropy", "--bins", "2048"], "range"),
        ("percentile 99.999 symmetric", "Percentile", {"symmetric": True, "percentile": 99.999, "num_bins": 2048},
         ["--method", "percentile", "--percentile", "99.999", "--bins", "2048"], "range"),
        ("percentile 99.999", "Percentile", {"percentile": 99.999, "num_bins": 2048},
         ["--method", "percentile", "--percentile", "99.999", "--bins", "2048"], "range"),
    ]
    rows = []
    for per_batch, src in ((True, ACTS), (False, one)):
        feed = "per batch" if per_batch else "at once"
        for label, method, extra, args, field in cases:
            ort = ort_range(model, work, batches, method, extra, per_batch)
            out = os.path.join(work, "calib.json")
            run_lmkit("--quiet", "calibrate", src, "--flavor", "ort", *args, "-o", out)
            t = next(iter(json.load(open(out))["tensors"].values()))
            lm = [t["min"], t["max"]] if field == "minmax" else list(t["range"])
            d = max(ulps(ort[0], lm[0]), ulps(ort[1], lm[1]))
            rows.append({"case": label, "feed": feed, "ort": ort, "lmkit": lm, "ulps": d})
            c.expect(d <= ULPS, "%s, %s: ORT %s, lmkit %s (%d float32 ulps apart)" % (label, feed, ort, lm, d))
    c.details["cases"] = rows
    return c


if __name__ == "__main__":
    main("ort_calibrators", run)
