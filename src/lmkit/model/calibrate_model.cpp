#include "lmkit/model/calibrate_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/io/token_file.h"
#include "lmkit/model/llama.h"

namespace lmkit::model {
namespace {

// Per layer, LinearNames() lists q, k, v, o, gate, up, down; q/k/v and gate/up read the same tensor, so only the first
// of each group is calibrated (the entropy search dominates the run time) and its range is copied to the others.
constexpr uint32_t kGroupOf[7] = {0, 0, 0, 1, 2, 2, 3};
constexpr uint32_t kGroups = 4;

class Feed : public ActivationObserver {
 public:
  explicit Feed(quant::StreamingCalibrator& c) : c_(c) {}
  Status Observe(size_t linear, const float* x, uint64_t rows, uint64_t cols) override {
    const size_t layer = linear / 7, pos = linear % 7;
    if (pos != 0 && kGroupOf[pos] == kGroupOf[pos - 1]) return Status::Ok();  // same input as the previous Linear
    return c_.Add(layer * kGroups + kGroupOf[pos], x, rows * cols);
  }

 private:
  quant::StreamingCalibrator& c_;
};

}  // namespace

Result<quant::CalibrationTable> CalibrateModel(const CalibrateModelOptions& o, ProgressSink* progress) {
  const double t0 = MonotonicSeconds();
  LMKIT_ASSIGN_OR_RETURN(LlamaModel model, LlamaModel::Load(o.model));
  const uint32_t max_pos = model.config().max_positions;
  const uint32_t T = o.seq_len ? o.seq_len : std::min<uint32_t>(max_pos, 1024);
  if (T < 1) return Status::InvalidArgument(Field("seq_len") + " must be at least 1");
  if (T > max_pos)
    return Status::InvalidArgument(
        fmt::format("{} {} exceeds max_position_embeddings {}", Field("seq_len"), T, max_pos));
  LMKIT_ASSIGN_OR_RETURN(io::TokenFile tf, io::TokenFile::Open(o.tokens, o.bin_dtype));
  const uint64_t total = o.max_tokens ? std::min(o.max_tokens, tf.size()) : tf.size();
  if (total == 0) return Status::InvalidInput(o.tokens, "no tokens to calibrate on");
  const uint32_t V = model.config().vocab;
  for (uint64_t i = 0; i < total; ++i)
    if (tf[i] >= V)
      return Status::InvalidInput(o.tokens, fmt::format("token id {} at index {} is >= vocab_size {}", tf[i], i, V));
  const std::vector<std::string> names = model.LinearNames();
  std::vector<std::string> group_names;
  for (size_t i = 0; i < names.size(); ++i)
    if (i % 7 == 0 || kGroupOf[i % 7] != kGroupOf[i % 7 - 1]) group_names.push_back(names[i]);
  LMKIT_ASSIGN_OR_RETURN(quant::StreamingCalibrator cal,
                         quant::StreamingCalibrator::Create(o.calib, group_names, o.model));
  // The outputs are opened before the forward passes, so an unwritable path fails before the work.
  LMKIT_ASSIGN_OR_RETURN(quant::CalibrationOutputs outputs, quant::CalibrationOutputs::Open(o.calib));
  ThreadPool pool(std::max(1u, o.calib.threads));
  KvCache cache = model.NewCache(T);
  std::vector<float> logits(V);
  std::vector<uint32_t> ids(T);
  Feed feed(cal);
  const uint64_t windows = (total + T - 1) / T;
  if (progress) progress->Begin("calibrating", windows * cal.passes(), "windows");
  for (int pass = 0; pass < cal.passes(); ++pass) {
    LMKIT_RETURN_IF_ERROR(cal.BeginPass(pass));
    for (uint64_t w = 0; w < windows; ++w) {
      const uint64_t begin = w * T;
      const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(T, total - begin));
      for (uint32_t i = 0; i < len; ++i) ids[i] = tf[begin + i];
      cache.Clear();
      LMKIT_RETURN_IF_ERROR(
          model.Forward(std::span<const uint32_t>(ids.data(), len), cache, &pool, logits.data(), false, &feed));
      if (progress) progress->Update(pass * windows + w + 1);
    }
  }
  if (progress) progress->Finish();
  LMKIT_ASSIGN_OR_RETURN(quant::CalibrationTable table, cal.Finish());
  std::vector<quant::TensorRange> ranges;
  for (size_t i = 0; i < names.size(); ++i) {
    ranges.push_back(table.tensors[(i / 7) * kGroups + kGroupOf[i % 7]]);
    ranges.back().name = names[i];
  }
  table.tensors = std::move(ranges);
  quant::AddCalibrationWarnings(&table);
  table.seconds = MonotonicSeconds() - t0;
  LMKIT_RETURN_IF_ERROR(outputs.Commit(table));
  return table;
}

}  // namespace lmkit::model
