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

// Linears that read the same rows (q/k/v, gate/up, a MoE block's router and shared expert) are calibrated once, as the
// first of them (LinearInputSource; the entropy search dominates the run time), and the range is copied to the others.
class Feed : public ActivationObserver {
 public:
  Feed(quant::StreamingCalibrator& c, const std::vector<size_t>& source, const std::vector<size_t>& group, bool all)
      : c_(c), source_(source), group_(group), all_(all) {}
  Status Observe(size_t linear, const float* x, uint64_t rows, uint64_t cols) override {
    if (source_[linear] != linear || rows == 0) return Status::Ok();
    return c_.Add(group_[linear], x, rows * cols);
  }
  bool RouteAllExperts() const override { return all_; }

 private:
  quant::StreamingCalibrator& c_;
  const std::vector<size_t>& source_;
  const std::vector<size_t>& group_;
  bool all_;
};

bool IsExpert(const std::string& name) { return name.find(".experts.") != std::string::npos; }

}  // namespace

Result<quant::CalibrationTable> CalibrateModel(const CalibrateModelRequest& o, ProgressSink* progress,
                                               const quant::RenderCalibrationOutput& render) {
  LMKIT_RETURN_IF_ERROR(quant::CheckCalibrationOutputs({o.model, o.tokens}, o.calib));
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
  const std::vector<size_t> source = model.LinearInputSource();
  std::vector<size_t> group(names.size());  // calibrated tensor of each Linear's input
  std::vector<std::string> group_names;
  for (size_t i = 0; i < names.size(); ++i) {
    if (source[i] == i) {
      group[i] = group_names.size();
      group_names.push_back(names[i]);
    } else {
      group[i] = group[source[i]];
    }
  }
  LMKIT_ASSIGN_OR_RETURN(quant::StreamingCalibrator cal,
                         quant::StreamingCalibrator::Create(o.calib, group_names, o.model));
  // The outputs are opened before the forward passes, so an unwritable path fails before the work.
  LMKIT_ASSIGN_OR_RETURN(quant::CalibrationOutputs outputs, quant::CalibrationOutputs::Open(o.calib));
  ThreadPool pool(std::max(1u, o.calib.threads));
  KvCache cache = model.NewCache(T);
  std::vector<float> logits(V);
  std::vector<uint32_t> ids(T);
  Feed feed(cal, source, group, o.all_experts);
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
    ranges.push_back(table.tensors[group[i]]);
    ranges.back().name = names[i];
  }
  // Experts no calibration token was routed to have no data. Fallback (docs/model.md): an expert's gate/up take the
  // range of the MoE block's input over all tokens (the router's, a superset of what any expert sees); its down_proj
  // takes the widest down_proj range among the layer's experts that were routed to.
  std::vector<std::string> unrouted;
  for (size_t i = 0; i < names.size(); ++i) {
    if (ranges[i].samples > 0 || !IsExpert(names[i])) continue;
    const std::string block = names[i].substr(0, names[i].find(".experts."));
    const bool down = names[i].ends_with("down_proj") || names[i].ends_with(".w2");
    const quant::TensorRange* best = nullptr;
    for (size_t j = 0; j < names.size(); ++j) {
      if (ranges[j].samples == 0 || names[j].rfind(block, 0) != 0) continue;
      const bool jdown = names[j].ends_with("down_proj") || names[j].ends_with(".w2");
      const bool fits = down ? IsExpert(names[j]) && jdown : names[j] == block + ".gate";
      if (fits && (best == nullptr || ranges[j].amax > best->amax)) best = &ranges[j];
    }
    if (best == nullptr) continue;  // no routed expert in the layer either: the warning below names it
    const std::string name = names[i];
    ranges[i] = *best;
    ranges[i].name = name;
    ranges[i].samples = 0;
    ranges[i].batches = 0;
    if (name.ends_with("gate_proj") || name.ends_with(".w1")) unrouted.push_back(name.substr(0, name.rfind('.')));
  }
  table.tensors = std::move(ranges);
  quant::AddCalibrationWarnings(&table);
  for (const std::string& e : unrouted)
    table.warnings.push_back(e +
                             ": no calibration token was routed to this expert; its range is the fallback (gate/up: "
                             "the MoE block input's, down: the widest routed expert's); use --all-experts to "
                             "calibrate every expert on every token");
  table.seconds = MonotonicSeconds() - t0;
  LMKIT_RETURN_IF_ERROR(outputs.Commit(table, render));
  return table;
}

}  // namespace lmkit::model
