// The calibration run of GPTQ and SmoothQuant (calibrated.h).
#include "lmkit/quant/calibrated.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "lmkit/common/sysinfo.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/token_file.h"
#include "lmkit/model/llama.h"

namespace lmkit::quant::detail {
namespace {

using Input = CalibrationStats::Input;

// The tensor `name` in the plan (shard and info), or null.
struct Found {
  const Shard* shard = nullptr;
  const io::TensorInfo* info = nullptr;
};
Found Find(const Plan& plan, const std::string& name) {
  for (const Shard& s : plan.shards)
    if (const io::TensorInfo* t = s.file.Find(name)) return {&s, t};
  // A routed expert's matrix inside a fused 3-D expert tensor (quantize_plan.h).
  if (auto it = plan.expert_slices.find(name); it != plan.expert_slices.end())
    return {&plan.shards[it->second.first], &it->second.second};
  return {};
}

Result<std::vector<float>> ReadFloat(const Plan& plan, const std::string& name, uint64_t expect_elements) {
  const Found f = Find(plan, name);
  if (!f.info) return Status::NotFound(plan.shards.front().in_path, "no tensor '" + name + "'");
  const io::DType d = f.info->dtype;
  if (d != io::DType::kF32 && d != io::DType::kF16 && d != io::DType::kBF16)
    return Status::InvalidInput(f.shard->in_path,
                                "tensor '" + name + "' is " + std::string(io::DTypeName(d)) + ", not F32, F16 or BF16");
  if (f.info->num_elements() != expect_elements)
    return Status::InvalidInput(f.shard->in_path, fmt::format("tensor '{}' has {} elements, expected {}", name,
                                                              f.info->num_elements(), expect_elements));
  std::vector<float> out(expect_elements);
  io::ConvertToF32(d, f.shard->file.Data(*f.info).data(), out.data(), out.size());
  return out;
}

// Rounds v to what `name`'s dtype stores, as the checkpoint will hold it.
Status RoundToDtype(const Plan& plan, const std::string& name, std::vector<float>& v) {
  const io::DType d = Find(plan, name).info->dtype;
  if (d == io::DType::kF32) return Status::Ok();
  std::vector<uint8_t> bytes(v.size() * io::DTypeSize(d));
  LMKIT_RETURN_IF_ERROR(io::ConvertFromF32(d, v.data(), bytes.data(), v.size()));
  io::ConvertToF32(d, bytes.data(), v.data(), v.size());
  return Status::Ok();
}

// Which input a Linear module reads: q/k/v share one, gate/up another (the Llama family's Linears; LinearNames()).
void KeyOf(const std::string& module, std::string* key, std::string* norm) {
  const size_t dot = module.rfind('.');
  const std::string leaf = dot == std::string::npos ? module : module.substr(dot + 1);
  const std::string parent = dot == std::string::npos ? "" : module.substr(0, dot);
  auto strip = [](const std::string& p, const std::string& suffix) {
    return p.size() > suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0
               ? p.substr(0, p.size() - suffix.size())
               : std::string();
  };
  *norm = "";
  if (leaf == "q_proj" || leaf == "k_proj" || leaf == "v_proj") {
    *key = parent + ".qkv";
    if (std::string layer = strip(parent, ".self_attn"); !layer.empty()) *norm = layer + ".input_layernorm";
  } else if (leaf == "gate_proj" || leaf == "up_proj") {
    *key = parent + ".gate_up";
    if (std::string layer = strip(parent, ".mlp"); !layer.empty()) *norm = layer + ".post_attention_layernorm";
  } else {
    *key = module;
  }
}

class StatsObserver : public model::ActivationObserver {
 public:
  StatsObserver(std::vector<Input>& inputs, const std::vector<size_t>& input_of, ThreadPool& pool)
      : inputs_(inputs), input_of_(input_of), pool_(pool) {}
  Status Observe(size_t linear, const float* x, uint64_t rows, uint64_t cols) override {
    if (linear >= input_of_.size()) return Status::Internal("observer: Linear index out of range");
    if (linear == 0) last_ = SIZE_MAX;
    const size_t i = input_of_[linear];
    if (i == last_) return Status::Ok();  // the same input as the Linear before
    last_ = i;
    Input& in = inputs_[i];
    if (cols != in.cols)
      return Status::Internal(fmt::format("observer: '{}' has {} input channels, expected {}", in.key, cols, in.cols));
    if (in.hessian) in.hessian->Add(x, rows, &pool_);
    if (in.range) in.range->Add(x, rows);
    return Status::Ok();
  }

 private:
  std::vector<Input>& inputs_;
  const std::vector<size_t>& input_of_;
  ThreadPool& pool_;
  size_t last_ = SIZE_MAX;
};

}  // namespace

Result<CalibrationStats> CalibrationStats::Collect(const QuantizeRequest& o, const Plan& plan, const Matchers& matchers,
                                                   bool hold_out, ThreadPool& pool, ProgressSink* progress) {
  const double t0 = MonotonicSeconds();
  LMKIT_ASSIGN_OR_RETURN(model::LlamaModel m, model::LlamaModel::Load(o.input));
  const uint32_t max_pos = m.config().max_positions;
  const uint32_t T = o.seq_len ? o.seq_len : std::min<uint32_t>(max_pos, 512);
  if (T < 2) return Status::InvalidArgument(Field("seq_len") + " must be at least 2");
  if (T > max_pos)
    return Status::InvalidArgument(
        fmt::format("{} {} exceeds max_position_embeddings {}", Field("seq_len"), T, max_pos));
  LMKIT_ASSIGN_OR_RETURN(io::TokenFile tf, io::TokenFile::Open(o.calibration_tokens, o.tokens_dtype));
  const uint64_t windows = tf.size() / T;
  if (windows < (hold_out ? 2u : 1u))
    return Status::InvalidInput(o.calibration_tokens,
                                fmt::format("{} tokens make {} window(s) of {} ({}); at least {} needed", tf.size(),
                                            windows, T, Field("seq_len"), hold_out ? 2 : 1));
  const uint64_t held = hold_out ? std::max<uint64_t>(1, windows / 5) : 0;
  const uint64_t avail = windows - held;
  const uint64_t samples = o.samples ? std::min(o.samples, avail) : avail;
  const uint32_t V = m.config().vocab;
  auto check_ids = [&](uint64_t begin, uint64_t end) -> Status {
    for (uint64_t i = begin; i < end; ++i)
      if (tf[i] >= V)
        return Status::InvalidInput(o.calibration_tokens,
                                    fmt::format("token id {} at index {} is >= vocab_size {}", tf[i], i, V));
    return Status::Ok();
  };
  LMKIT_RETURN_IF_ERROR(check_ids(0, samples * T));
  LMKIT_RETURN_IF_ERROR(check_ids((windows - held) * T, windows * T));

  CalibrationStats st;
  st.plan_ = &plan;
  const bool gptq = o.method == QuantMethod::kGptq;
  const bool smooth = o.smoothquant_alpha.has_value() || o.smoothquant_auto;
  std::vector<size_t> input_of;
  for (const std::string& module : m.LinearNames()) {
    std::string key, norm;
    KeyOf(module, &key, &norm);
    const Found w = Find(plan, module + ".weight");
    if (!w.info || w.info->shape.size() != 2)
      return Status::InvalidInput(o.input, "no 2-D tensor '" + module + ".weight' for the model's Linear");
    if (st.inputs_.empty() || st.inputs_.back().key != key) {
      Input in;
      in.key = key;
      in.cols = w.info->shape[1];
      if (smooth && !norm.empty()) {
        if (!Find(plan, norm + ".weight").info)
          return Status::InvalidInput(o.input, "no '" + norm + ".weight' to fold SmoothQuant's scales into");
        in.norm = norm;
        in.range.emplace(in.cols);
      }
      st.inputs_.push_back(std::move(in));
    }
    Input& in = st.inputs_.back();
    in.linears.push_back(module);
    in.selected.push_back(Selected(*w.info, matchers));
    if (gptq && in.selected.back() && !in.hessian) in.hessian.emplace(in.cols);
    input_of.push_back(st.inputs_.size() - 1);
  }
  StatsObserver obs(st.inputs_, input_of, pool);
  model::KvCache cache = m.NewCache(T);
  std::vector<float> logits(V);
  if (progress) progress->Begin("calibrating", samples, "windows");
  std::vector<uint32_t> ids(T);
  for (uint64_t w = 0; w < samples; ++w) {
    for (uint32_t i = 0; i < T; ++i) ids[i] = tf[w * T + i];
    cache.Clear();
    LMKIT_RETURN_IF_ERROR(m.Forward(ids, cache, &pool, logits.data(), false, &obs));
    if (progress) progress->Update(w + 1);
  }
  if (progress) progress->Finish();
  for (uint64_t i = (windows - held) * T; i < windows * T; ++i) st.held_out_.push_back(tf[i]);
  st.report_.tokens = o.calibration_tokens;
  st.report_.samples = samples;
  st.report_.held_out = held;
  st.report_.seq_len = T;
  st.report_.seconds = MonotonicSeconds() - t0;
  return st;
}

Result<Prepared> CalibrationStats::Build(const QuantizeRequest& o, std::optional<double> alpha,
                                         ThreadPool& pool) const {
  const Plan& plan = *plan_;
  Prepared p;
  for (const Input& in : inputs_) {
    std::vector<double> h;
    if (in.hessian) h = in.hessian->Hessian();
    // The Linear weights as GPTQ (or the writer) will see them: smoothed when asked.
    std::vector<std::vector<float>> weights(in.linears.size());
    std::vector<uint64_t> rows(in.linears.size());
    for (size_t k = 0; k < in.linears.size(); ++k) {
      const Found f = Find(plan, in.linears[k] + ".weight");
      rows[k] = f.info->shape[0];
    }
    const bool smooth = alpha && in.range;
    if (smooth || in.hessian)
      for (size_t k = 0; k < in.linears.size(); ++k) {
        LMKIT_ASSIGN_OR_RETURN(weights[k], ReadFloat(plan, in.linears[k] + ".weight", rows[k] * in.cols));
      }
    if (smooth) {
      std::vector<BalancedWeight> bw;
      for (size_t k = 0; k < weights.size(); ++k) bw.push_back({weights[k].data(), rows[k]});
      const std::vector<float> range = in.range->Range();
      const std::vector<float> s = SmoothingScales(range, bw, *alpha);
      const std::string norm_name = in.norm + ".weight";
      LMKIT_ASSIGN_OR_RETURN(std::vector<float> norm, ReadFloat(plan, norm_name, in.cols));
      FoldIntoNorm(s, norm.data());
      LMKIT_RETURN_IF_ERROR(RoundToDtype(plan, norm_name, norm));
      p.tensors[norm_name].values = std::move(norm);
      for (size_t k = 0; k < weights.size(); ++k) {
        FoldIntoWeight(s, weights[k].data(), rows[k]);
        const std::string name = in.linears[k] + ".weight";
        LMKIT_RETURN_IF_ERROR(RoundToDtype(plan, name, weights[k]));
        p.tensors[name].values = weights[k];
      }
      if (!h.empty()) SmoothHessian(s, h.data());
      SmoothReport r;
      r.norm = in.norm;
      r.balanced = in.linears;
      r.scale_min = *std::min_element(s.begin(), s.end());
      r.scale_max = *std::max_element(s.begin(), s.end());
      r.activation_range_max = *std::max_element(range.begin(), range.end());
      p.smooth.push_back(std::move(r));
    }
    if (!in.hessian) continue;
    LMKIT_ASSIGN_OR_RETURN(GptqFactor factor, FactorHessian(h.data(), in.cols, o.dampening, o.act_order, &pool));
    for (size_t k = 0; k < in.linears.size(); ++k) {
      const std::string name = in.linears[k] + ".weight";
      const Found f = Find(plan, name);
      if (!in.selected[k]) continue;  // a Linear left out by --include/--exclude keeps its (smoothed) weights
      GptqOptions go;
      go.bits = InfoOf(o.scheme).weight_bits;
      go.granularity = o.granularity;
      go.scale_dtype = f.info->dtype;
      go.dampening = o.dampening;
      go.act_order = o.act_order;
      auto r = GptqQuantize(weights[k].data(), rows[k], in.cols, factor, h.data(), go, &pool);
      if (!r.ok()) {
        if (r.status().code() == ErrorCode::kInvalidInput)
          return Status::InvalidInput(f.shard->in_path, "tensor '" + name + "': " + r.status().message());
        return Status::InvalidArgument("tensor '" + name + "': " + r.status().message());
      }
      PreparedTensor& t = p.tensors[name];
      t.values = weights[k];
      t.has_codes = true;
      t.codes = std::move(r->codes);
      t.scales = std::move(r->scales);
      t.gptq_error = r->error;
      t.rtn_error = r->rtn_error;
      t.dead_columns = r->dead_columns;
      t.cholesky_failed = r->cholesky_failed;
    }
  }
  return p;
}

}  // namespace lmkit::quant::detail
