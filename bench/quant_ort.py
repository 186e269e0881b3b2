#!/usr/bin/env python3
"""The ONNX Runtime side of bench/quant.sh: ORT's own calibrators (onnxruntime.quantization.calibrate) on a float32
.npy of activations [batches, n], timed as a user runs them.

  quant_ort.py NPY METHOD [NUM_BINS]     METHOD: MinMax | Entropy | Percentile

The activations feed a one-node model (x -> Shape, so that x is the only float tensor ORT calibrates), one
collect_data() per batch (the histogram grows batch by batch, as `lmkit calibrate --flavor ort` does), then
compute_data(). Percentile uses ORT's defaults (99.999, 2048 bins). Prints one JSON line: seconds for the whole
calibration (collect + compute) and for compute alone, the range, ORT's version."""
import json
import os
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper
from onnxruntime.quantization.calibrate import CalibrationDataReader, CalibrationMethod, create_calibrator


class OneBatch(CalibrationDataReader):
    def __init__(self, x):
        self.x = x

    def get_next(self):
        x, self.x = self.x, None
        return None if x is None else {"x": x}


def main():
    path, method = sys.argv[1], sys.argv[2]
    extra = {"num_bins": int(sys.argv[3])} if len(sys.argv) > 3 else {}
    acts = np.load(path, mmap_mode="r")
    n = acts.shape[1]
    work = tempfile.mkdtemp(prefix="quant-ort.")
    g = helper.make_graph([helper.make_node("Shape", ["x"], ["s"])], "calibrate",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                          [helper.make_tensor_value_info("s", TensorProto.INT64, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    model = os.path.join(work, "m.onnx")
    onnx.save(m, model)
    batches = [np.ascontiguousarray(acts[i], dtype=np.float32) for i in range(acts.shape[0])]  # loaded, not timed
    stdout = sys.stdout
    sys.stdout = sys.stderr  # the calibrators print progress on stdout
    t0 = time.perf_counter()
    cal = create_calibrator(model, ["Shape"], augmented_model_path=os.path.join(work, "aug.onnx"),
                            calibrate_method=getattr(CalibrationMethod, method), extra_options=extra)
    for b in batches:
        cal.collect_data(OneBatch(b))
    t1 = time.perf_counter()
    data = cal.compute_data().data
    t2 = time.perf_counter()
    sys.stdout = stdout
    lo, hi = data["x"].range_value[:2]
    print(json.dumps({"peer": "onnxruntime", "version": onnxruntime.__version__, "method": method, **extra,
                      "tensors": sorted(data), "seconds": round(t2 - t0, 4), "compute_seconds": round(t2 - t1, 4),
                      "range": [float(np.asarray(lo).reshape(-1)[0]), float(np.asarray(hi).reshape(-1)[0])]}))


if __name__ == "__main__":
    main()
