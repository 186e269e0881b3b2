// Internal to `lmkit quantize`: the output formats behind Quantize's one tensor walk (quantize.cpp). The walk checks
// the request, opens the input (quantize_plan.h), lets the writer plan every tensor, feeds it the tensors in input
// order and commits; each writer knows only its format. Not a public interface.
#pragma once

#include <cstdint>
#include <memory>

#include "lmkit/common/file_reader.h"
#include "lmkit/common/status.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/quant/quantize.h"
#include "lmkit/quant/quantize_plan.h"

namespace lmkit::quant::detail {

// What a writer did with one input tensor.
struct TensorOutcome {
  enum class Kind : uint8_t { kCopied, kQuantized, kDropped };
  Kind kind = Kind::kCopied;
  TensorReport report;         // kQuantized
  uint64_t bytes_written = 0;  // tensor data, padding excluded
};

// One output format. Call order: CheckRequest, SingleOutputFile (for MakePlan), Prepare, WriteTensor for every input
// tensor in shard and index order, Commit. Nothing appears at the destination before Commit, and a writer destroyed
// without Commit leaves nothing behind. Not thread-safe (WriteTensor uses the pool inside).
class CheckpointWriter {
 public:
  virtual ~CheckpointWriter() = default;
  // Checks the request against the format before any file is opened (kInvalidArgument naming fields, or a missing
  // or unusable input the format needs).
  virtual Status CheckRequest() = 0;
  // Whether OUTPUT is one file whatever INPUT is.
  virtual bool SingleOutputFile() const = 0;
  // Decides every tensor's output and opens the (temporary) outputs; fails on any input the format cannot take, before
  // tensor data is read. May fill report->kept_unquantized and report->warnings.
  virtual Status Prepare(const Plan& plan, const Matchers& matchers, QuantizeResult* report) = 0;
  // Writes tensor `index` of shard `shard` of the plan given to Prepare, reading it through `in`.
  virtual Status WriteTensor(size_t shard, size_t index, const FileReader& in, ThreadPool& pool,
                             TensorOutcome* outcome) = 0;
  // Renames every output into place.
  virtual Status Commit() = 0;
};

struct Prepared;

// compressed-tensors (ct_writer.cpp) and GGUF Q8_0 (gguf_writer.cpp); `options` (and `prepared`) must outlive the
// writer. `prepared` (may be null): tensors GPTQ or SmoothQuant replaced (calibrated.h), written instead of the
// input's.
std::unique_ptr<CheckpointWriter> MakeCompressedTensorsWriter(const QuantizeRequest& options,
                                                              const Prepared* prepared = nullptr);
std::unique_ptr<CheckpointWriter> MakeGgufWriter(const QuantizeRequest& options);

}  // namespace lmkit::quant::detail
