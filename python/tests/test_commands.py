"""lmkit.flops/memory/plan/calibrate/quantize return exactly the --json document of the lmkit binary (the same core
entry point and present/ code, called without a command line), and raise the documented exception types with the
core's message naming Python keywords."""

import json
import os
import subprocess
import threading

import pytest

import lmkit

from conftest import REPO, TEST_DATA

STORIES = os.path.join(TEST_DATA, "model", "stories260K")
ACTS = os.path.join(TEST_DATA, "quant", "laplace_acts.npy")
PLAN = os.path.join(TEST_DATA, "plan", "four_on_two.json")


def binary():
    """The lmkit binary of the same build as the imported module (the build tree's, or the wheel's bin/)."""
    here = os.path.dirname(lmkit.__file__)
    for candidate in (os.path.join(here, "bin", "lmkit"), os.path.join(here, "..", "..", "lmkit")):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    pytest.skip("no lmkit binary beside the module")


def cli_json(*args):
    out = subprocess.run([binary(), "--json", *args], check=True, capture_output=True).stdout
    return json.loads(out)


def without_measurements(doc):
    """The document without what a run measures (wall and CPU seconds, rates, peak memory)."""
    if isinstance(doc, dict):
        return {k: without_measurements(v) for k, v in doc.items()
                if not any(w in k for w in ("seconds", "per_s", "rss"))}
    if isinstance(doc, list):
        return [without_measurements(v) for v in doc]
    return doc


@pytest.mark.parametrize("model,options,argv", [
    ("llama-3-8b", {}, []),
    ("llama-3-8b", {"seq_len": 8192, "batch": 2, "training": True, "recompute": "full", "gpu": "h100", "mfu": 0.4},
     ["--seq-len", "8192", "--batch", "2", "--training", "--recompute", "full", "--gpu", "h100", "--mfu", "0.4"]),
    (os.path.join(TEST_DATA, "accounting", "distilgpt2.json"), {"causal_half": True}, ["--causal-half"]),
])
def test_flops_equals_the_cli(model, options, argv):
    assert lmkit.flops(model, **options) == cli_json("flops", model, *argv)


def test_memory_equals_the_cli():
    got = lmkit.memory("llama-3-8b", mode="training", zero=3, gpus=8, seq_len=4096, batch=4, gpu="h100")
    assert got == cli_json("memory", "llama-3-8b", "--mode", "training", "--zero", "3", "--gpus", "8", "--seq-len",
                           "4096", "--batch", "4", "--gpu", "h100")
    assert got == lmkit.memory("llama-3-8b", mode="training", zero=3, gpus=8, seq_len=4096, batch=4, gpu="h100")


def test_plan_equals_the_cli():
    assert lmkit.plan(PLAN) == cli_json("plan", PLAN)


def test_plan_timeline_from_python():
    planted = os.path.join(TEST_DATA, "plan", "planted_plan.json")
    day = os.path.join(TEST_DATA, "plan", "planted_day.json")
    got = lmkit.plan(planted, timeline=day)
    assert got == cli_json("plan", planted, "--timeline", day)
    tl = got["timeline"]
    assert [p["failures"] for p in tl["policies"]] == [1, 0, 0, 1]
    assert tl["default_failures"] == [{"event": 4, "t": 4.0, "avoided_by": ["expandable_segments", "arch_buffer"]}]


def test_calibrate_equals_the_cli_and_draws_its_histogram(tmp_path):
    got = lmkit.calibrate(ACTS, method="entropy", output=str(tmp_path / "a.json"), svg=True)
    svg = got.pop("svg")
    assert svg.lstrip().startswith(("<?xml", "<svg")) and svg.rstrip().endswith("</svg>")
    want = cli_json("calibrate", ACTS, "--method", "entropy", "-o", str(tmp_path / "b.json"))
    assert without_measurements(got) == without_measurements(want)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_quantize_writes_a_checkpoint_and_reports_like_the_cli(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    got = lmkit.quantize(STORIES, str(a), scheme="w8a16")
    want = cli_json("quantize", STORIES, "-o", str(b), "--scheme", "w8a16")
    text = lambda d, p: json.dumps(without_measurements(d), sort_keys=True).replace(str(p), "OUT")  # noqa: E731
    assert text(got, a) == text(want, b)
    with open(a / "model.safetensors", "rb") as f, open(b / "model.safetensors", "rb") as g:
        assert f.read() == g.read()
    assert json.loads((a / "config.json").read_text())["quantization_config"]["format"] == "pack-quantized"


def test_a_missing_file_raises_file_not_found():
    with pytest.raises(FileNotFoundError, match="no-such-config.json"):
        lmkit.flops(os.path.join(REPO, "no-such-config.json"))


def test_a_bad_argument_raises_value_error_naming_the_keyword():
    with pytest.raises(ValueError, match="^seq_len must be positive$"):
        lmkit.flops("llama-3-8b", seq_len=0)
    with pytest.raises(ValueError, match="^recompute must be none, selective, full or deepseek"):
        lmkit.memory("llama-3-8b", recompute="sometimes")
    with pytest.raises(ValueError, match="mfu needs gpu"):
        lmkit.flops("llama-3-8b", mfu=0.5)


def test_unknown_keywords_and_wrong_types_raise_type_error():
    with pytest.raises(TypeError, match="flops\\(\\) got an unexpected keyword argument 'no_such_flag'"):
        lmkit.flops("llama-3-8b", no_such_flag=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'search'"):
        lmkit.flops("llama-3-8b", search=True)  # memory's and layouts' keyword, not flops'
    with pytest.raises(TypeError, match="argument 'seq_len'"):
        lmkit.flops("llama-3-8b", seq_len="long")
    with pytest.raises(TypeError, match="needs method="):
        lmkit.calibrate(ACTS, output="x.json")


def test_bad_input_raises_value_error_naming_the_file():
    bad = os.path.join(TEST_DATA, "plan", "malformed.json")
    with pytest.raises(ValueError, match="malformed.json"):
        lmkit.plan(bad)


def test_no_command_line_runner_is_left():
    assert not hasattr(lmkit, "run") and not hasattr(lmkit._lmkit, "_run_cli")


def test_explicit_dimensions_and_sweeps_equal_the_cli():
    dims = dict(layers=4, d_model=256, heads=4, vocab=1000, ffn="gelu", norm="layernorm", tied=True)
    argv = ["--layers", "4", "--d-model", "256", "--heads", "4", "--vocab", "1000", "--ffn", "gelu", "--norm",
            "layernorm", "--tied"]
    assert lmkit.flops(**dims, seq_len=512) == cli_json("flops", *argv, "--seq-len", "512")
    got = lmkit.memory("llama-3-8b", mode="inference", dtype="fp8", kv_dtype="fp8", sweep="batch=1,8", gpu="h100")
    assert got == cli_json("memory", "llama-3-8b", "--mode", "inference", "--dtype", "fp8", "--kv-dtype", "fp8",
                           "--sweep", "batch=1,8", "--gpu", "h100")


def test_an_svg_path_is_written_like_the_cli(tmp_path):
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    got = lmkit.flops("llama-3-8b", sweep="seq-len=1024,4096", svg=str(a))
    want = cli_json("flops", "llama-3-8b", "--sweep", "seq-len=1024,4096", "--svg", str(b))
    assert got.pop("svg") == str(a) and want.pop("svg") == str(b)
    assert got == want and a.read_bytes() == b.read_bytes()
    assert lmkit.flops("llama-3-8b", sweep="seq-len=1024,4096", svg=True)["svg"] == a.read_text()
    with pytest.raises(ValueError, match="^svg needs sweep$"):
        lmkit.flops("llama-3-8b", svg=True)


def test_plan_what_if_equals_the_cli():
    assert lmkit.plan(PLAN, what_if=True, gpus=1) == cli_json("plan", PLAN, "--what-if", "--gpus", "1")


def test_an_output_that_is_an_input_is_refused_naming_the_keyword(tmp_path):
    acts = tmp_path / "acts.npy"
    acts.write_bytes(open(ACTS, "rb").read())
    before = acts.read_bytes()
    with pytest.raises(ValueError, match="is also the output \\(output "):
        lmkit.calibrate(str(acts), method="minmax", output=str(acts))
    with pytest.raises(ValueError, match="is also the output \\(svg "):
        lmkit.calibrate(str(acts), method="minmax", output=str(tmp_path / "c.json"), svg=str(acts))
    with pytest.raises(ValueError, match="^output and trt_cache name the same file$"):
        lmkit.calibrate(str(acts), method="minmax", output=str(tmp_path / "c.json"),
                        trt_cache=str(tmp_path / "c.json"))
    assert acts.read_bytes() == before and not (tmp_path / "c.json").exists()
    with pytest.raises(ValueError, match="^output and report name the same file$"):
        lmkit.quantize(STORIES, str(tmp_path / "q"), report=str(tmp_path / "q"))
    assert not (tmp_path / "q").exists()


def test_commands_from_several_threads_give_the_same_documents():
    want = lmkit.flops("llama-3-8b", seq_len=2048)
    results = []

    def work():
        for _ in range(5):
            results.append(lmkit.flops("llama-3-8b", seq_len=2048))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 20 and all(r == want for r in results)


def test_memory_and_flops_take_the_layout_keywords():
    layout = dict(tp=8, pp=4, sequence_parallel=True, gpus=64, global_batch=64, distributed_optimizer=True,
                  recompute="selective", seq_len=8192, gpu="h100")
    got = lmkit.memory("llama-3-8b", per_stage=True, **layout)
    assert got == cli_json("memory", "llama-3-8b", "--tp", "8", "--pp", "4", "--sequence-parallel", "--gpus", "64",
                           "--global-batch", "64", "--distributed-optimizer", "--recompute", "selective",
                           "--seq-len", "8192", "--gpu", "h100", "--per-stage")
    assert got["layout"]["dp"] == 2 and len(got["memory"]["stages"]) == 4
    step = lmkit.flops("llama-3-8b", mfu=0.4, **layout)["step"]
    assert step["bound"] and 0 < step["mfu"] <= 1 and step["at_mfu"]["mfu"] == 0.4
    svg = lmkit.flops("llama-3-8b", svg=True, **layout)["svg"]
    assert svg.rstrip().endswith("</svg>")


def test_layouts_searches_like_memory_search():
    got = lmkit.layouts("llama-3-8b", gpus=16, gpu="h100", seq_len=8192, global_batch=64, top=3)
    assert got == cli_json("memory", "llama-3-8b", "--search", "--gpus", "16", "--gpu", "h100", "--seq-len", "8192",
                           "--global-batch", "64", "--top", "3")
    best = got["search"]["best"]
    assert 0 < len(best) <= 3 and best[0]["step_s"] <= best[-1]["step_s"]


def test_memory_on_the_llama4_gpt_oss_mistral_gemma_presets():
    for name in ("llama-4-scout", "llama-4-maverick", "gpt-oss-20b", "gpt-oss-120b", "mistral-large-2",
                 "gemma-3-27b"):
        got = lmkit.memory(name, per_stage=True, tp=8, pp=4, gpus=256, global_batch=256, seq_len=4096,
                           recompute="selective", distributed_optimizer=True, gpu="h100")
        assert len(got["memory"]["stages"]) == 4, name
    # DeepSeek-V3's published layout fits with the savings its report describes.
    ds = lmkit.memory("deepseek-v3", pp=16, ep=64, gpus=2048, global_batch=15360, zero=1, seq_len=4096, gpu="h800",
                      recompute="deepseek")
    assert ds["memory"]["fits"] is True


def test_encode_file_reports_like_the_cli(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("hello world\n" * 1000, encoding="utf-8")
    py = lmkit.get_encoding("gpt2").encode_file(src, tmp_path / "py.npy", num_threads=2)
    cli = cli_json("--threads", "2", "bpe", "encode", "-t", "gpt2", str(src), "-o", str(tmp_path / "cli.npy"))
    assert py["output"] == str(tmp_path / "py.npy") and py["tokens"] == 3000
    for doc in (py, cli):
        doc.pop("output")
    assert without_measurements(py) == without_measurements(cli)
