"""Writes the weights-file fixtures of tests/data/plan (see PROVENANCE.md): a safetensors MLP ranker, an ONNX GNN
written by the onnx package, and a GGUF file written by gguf-py (llama.cpp's Python writer). Run with a Python that
has numpy, onnx and gguf:  python make_weights_fixtures.py  (from this directory)."""
import json
import struct

import numpy as np


def safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr, dtype in tensors:
        b = arr.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    rng = np.random.default_rng(45)
    f16 = lambda *s: rng.standard_normal(s).astype(np.float16)
    # An MLP ranker: 128 features -> 256 -> 64 -> 1 score, fp16.
    safetensors("ranker.safetensors", [
        ("fc1.weight", f16(256, 128), "F16"), ("fc1.bias", f16(256), "F16"),
        ("fc2.weight", f16(64, 256), "F16"), ("fc2.bias", f16(64), "F16"),
        ("out.weight", f16(1, 64), "F16"), ("out.bias", f16(1), "F16"),
    ])

    import onnx
    from onnx import TensorProto, helper, numpy_helper
    # A two-layer GNN tower (node features 32 -> 64 -> 16) as MatMul/Add over an aggregated feature matrix.
    w1 = numpy_helper.from_array(rng.standard_normal((32, 64)).astype(np.float32), "conv1.lin.weight")
    b1 = numpy_helper.from_array(rng.standard_normal(64).astype(np.float32), "conv1.bias")
    w2 = numpy_helper.from_array(rng.standard_normal((64, 16)).astype(np.float32), "conv2.lin.weight")
    b2 = numpy_helper.from_array(rng.standard_normal(16).astype(np.float16), "conv2.bias16")
    nodes = [
        helper.make_node("MatMul", ["x", "conv1.lin.weight"], ["h1"]),
        helper.make_node("Add", ["h1", "conv1.bias"], ["h2"]),
        helper.make_node("Relu", ["h2"], ["h3"]),
        helper.make_node("MatMul", ["h3", "conv2.lin.weight"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "gnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 16])],
                              initializer=[w1, b1, w2, b2])
    onnx.save(helper.make_model(graph, producer_name="lmkit tests"), "gnn.onnx")

    # The planted fragmenting day of docs/plan.md: models of 400 MiB (one fp32 initializer) and 150 MiB whose data
    # would live in external files (ONNX's external data: dims and data_location only), so the fixtures stay tiny.
    for name, elements in (("x400", 100 * 1048576), ("y150", 75 * 1048576 // 2)):
        t = TensorProto(name=name + ".weight", data_type=TensorProto.FLOAT, dims=[elements])
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", name + ".bin"), ("offset", "0"), ("length", str(4 * elements))):
            e = t.external_data.add()
            e.key, e.value = k, v
        g = helper.make_graph([helper.make_node("Identity", [name + ".weight"], ["y"])], name, [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [elements])], initializer=[t])
        onnx.save(helper.make_model(g, producer_name="lmkit tests"), name + ".onnx", save_as_external_data=False)

    import gguf
    w = gguf.GGUFWriter("tiny.gguf", "llama")
    w.add_block_count(1)
    w.add_tensor("blk.0.ffn_up.weight", rng.standard_normal((64, 32)).astype(np.float32))
    q = rng.standard_normal((64, 32)).astype(np.float32)
    w.add_tensor("blk.0.ffn_down.weight", gguf.quants.quantize(q, gguf.GGMLQuantizationType.Q8_0),
                 raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("output_norm.weight", rng.standard_normal(8).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
