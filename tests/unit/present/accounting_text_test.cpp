// `lmkit flops` and `lmkit memory` as text: golden figures (CS336's GPT-2 XL table, Llama-2-7B's bytes from
// reference/accounting.md) in the rows a reader looks for, CSV that parses, and the note on ignored fields.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "lmkit/common/status.h"
#include "lmkit/present/accounting.h"

using namespace lmkit::accounting;
using lmkit::present::Format;

namespace {

// The line of `text` that starts with `start` after its indentation ("" when none).
std::string LineStarting(const std::string& text, const std::string& start) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    line.erase(0, line.find_first_not_of(' '));  // table rows are indented
    if (line.rfind(start, 0) == 0) return line;
  }
  return "";
}

MemoryResult Llama7bInference() {
  MemoryRequest req;
  req.source.model = "llama-2-7b";
  req.mode = Mode::kInference;
  req.seq_len = 4096;
  auto r = RunMemory(req);
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("accounting text: flops of GPT-2 XL at T = 1024 print CS336's figures", "[present][accounting]") {
  FlopsRequest req;
  req.source.model = "cs336-gpt2-xl";
  req.options.seq_len = 1024;
  auto r = RunFlops(req);
  REQUIRE(r.ok());
  const std::string text = lmkit::present::RenderFlops(*r, Format::kTable);
  CHECK(text.find("step: batch 1 x seq-len 1024 = 1,024 tokens") != std::string::npos);
  const std::string fwd = LineStarting(text, "forward ");
  CHECK(fwd.find("4,513,336,524,800") != std::string::npos);
  CHECK(fwd.find("4.51 TFLOP") != std::string::npos);
  const std::string ffn = LineStarting(text, "FFN/experts");
  CHECK(ffn.find("3,019,898,880,000") != std::string::npos);
  CHECK(ffn.find("66.91%") != std::string::npos);
  CHECK(text.find("backward (2 x forward)") != std::string::npos);
  CHECK(LineStarting(text, "router").empty());  // a dense model has no router row
}

TEST_CASE("accounting text: Llama-2-7B inference memory by component, and its line", "[present][accounting]") {
  const MemoryResult r = Llama7bInference();
  const std::string text = lmkit::present::RenderMemory(r, Format::kTable);
  CHECK(LineStarting(text, "mode: ") == "mode: inference, bf16, KV cache bf16, 1 GPU, batch 1 x seq-len 4096");
  const std::string w = LineStarting(text, "weights");
  CHECK(w.find("13,476,831,232") != std::string::npos);  // 6,738,415,616 params x 2 B
  CHECK(w.find("13.48 GB") != std::string::npos);
  CHECK(w.find("2 B/param") != std::string::npos);
  CHECK(LineStarting(text, "KV cache").find("524,288 B/token per GPU at bf16") != std::string::npos);
  CHECK(LineStarting(text, "total").find("16,945,648,640") != std::string::npos);
  // 2 GiB of KV cache + 247,591,936 B of activations per sequence; weights + 1 GiB overhead fixed.
  CHECK(LineStarting(text, "line: ") == "line: total(batch) = 2,395,075,584 * batch + 14,550,573,056 bytes");
  CHECK(LineStarting(text, "gradients").empty());  // inference

  const std::string csv = lmkit::present::RenderMemory(r, Format::kCsv);
  CHECK(LineStarting(csv, "weights,") == "weights,\"13,476,831,232\",13.48 GB,2 B/param");
  CHECK(LineStarting(csv, "# mode: ") == "# mode: inference, bf16, KV cache bf16, 1 GPU, batch 1 x seq-len 4096");
}

TEST_CASE("accounting text: the note names the fields the mode ignored", "[present][accounting]") {
  MemoryResult r = Llama7bInference();
  CHECK(lmkit::present::MemoryIgnoredNote(r).empty());
  r.ignored = {"optimizer", "zero"};
  const std::string note = lmkit::present::MemoryIgnoredNote(r);
  CHECK(lmkit::RenderFields(note, [](std::string_view f) { return "--" + std::string(f); }) ==
        "note: --optimizer, --zero only apply to --mode training; ignored");
}
