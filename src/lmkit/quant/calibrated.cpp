// The calibration run of GPTQ and SmoothQuant (calibrated.h).
#include "lmkit/quant/calibrated.h"

#include <fcntl.h>
#include <fmt/format.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <span>

#include "lmkit/common/file_reader.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/token_file.h"
#include "lmkit/model/llama.h"
#include "lmkit/quant/quantizer.h"
#include "lmkit/quant/smooth_mapping.h"

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
  // Read with pread: touching the plan's mapping would keep the pages resident (and in RSS) for the whole run.
  LMKIT_ASSIGN_OR_RETURN(FileReader in, FileReader::Open(f.shard->in_path));
  std::vector<uint8_t> raw(f.info->num_bytes());
  LMKIT_RETURN_IF_ERROR(in.ReadAt(f.shard->file.data_offset() + f.info->begin, raw.data(), raw.size()));
  std::vector<float> out(expect_elements);
  io::ConvertToF32(d, raw.data(), out.data(), out.size());
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

class StatsObserver : public model::ActivationObserver {
 public:
  // `hessians` / `ranges`: which statistics this pass feeds.
  StatsObserver(std::vector<Input>& inputs, const std::vector<size_t>& input_of, ThreadPool& pool, bool hessians = true,
                bool ranges = true)
      : inputs_(inputs), input_of_(input_of), pool_(pool), hessians_(hessians), ranges_(ranges) {}
  Status Observe(size_t linear, const float* x, uint64_t rows, uint64_t cols) override {
    if (linear >= input_of_.size()) return Status::Internal("observer: Linear index out of range");
    Input& in = inputs_[input_of_[linear]];
    if (linear != in.first) return Status::Ok();  // the rows its first reader saw
    if (cols != in.cols)
      return Status::Internal(fmt::format("observer: '{}' has {} input channels, expected {}", in.key, cols, in.cols));
    if (in.hessian && hessians_) in.hessian->Add(x, rows, &pool_);
    if (in.range && ranges_) in.range->Add(x, rows);
    return Status::Ok();
  }

 private:
  std::vector<Input>& inputs_;
  const std::vector<size_t>& input_of_;
  ThreadPool& pool_;
  bool hessians_, ranges_;
};

// Appends the inputs of the model's Linears (LinearNames(), in forward order) to `inputs`, and each Linear's input
// index (into `inputs`) to `input_of`. With `smooth`, the groups of MapSmoothing: the input that holds a norm's whole
// output (q/k/v's, a MoE router's) records its range, and the inputs of the group's other Linears (the routed experts')
// take its scales; what stays unsmoothed is appended to `unsmoothed` (once).
Status AddInputs(const QuantizeRequest& o, const Plan& plan, const Matchers& matchers, const model::LlamaModel& m,
                 bool gptq, bool smooth, std::vector<Input>& inputs, std::vector<size_t>& input_of,
                 std::vector<std::string>& unsmoothed) {
  const std::vector<std::string> names = m.LinearNames();
  const std::vector<size_t> source = m.LinearInputSource();
  const size_t first = input_of.size();
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& module = names[i];
    const Found w = Find(plan, module + ".weight");
    if (!w.info || w.info->shape.size() != 2)
      return Status::InvalidInput(o.input, "no 2-D tensor '" + module + ".weight' for the model's Linear");
    size_t k = 0;
    if (source[i] == i) {
      Input in;
      in.key = module + " input";
      in.first = i;
      in.cols = w.info->shape[1];
      k = inputs.size();
      inputs.push_back(std::move(in));
    } else {
      k = input_of[first + source[i]];
    }
    Input& in = inputs[k];
    in.linears.push_back(module);
    in.selected.push_back(Selected(*w.info, matchers));
    if (gptq && in.selected.back() && !in.hessian) in.hessian.emplace(in.cols);
    input_of.push_back(k);
  }
  if (!smooth) return Status::Ok();
  const SmoothMapping map = MapSmoothing(m.config(), names);
  auto add_note = [&](const std::string& line) {
    if (std::find(unsmoothed.begin(), unsmoothed.end(), line) == unsmoothed.end()) unsmoothed.push_back(line);
  };
  for (const std::string& line : map.unsmoothed) add_note(line);
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < names.size(); ++i) index_of[names[i]] = i;
  for (const SmoothGroup& g : map.groups) {
    // The inputs the group's Linears read; every Linear reading one of them must be in the group (a Linear reading
    // the smoothed rows without its weights balanced would change the model).
    std::vector<size_t> members;
    for (const std::string& l : g.linears) {
      const size_t k = input_of[first + index_of.at(l)];
      if (std::find(members.begin(), members.end(), k) == members.end()) members.push_back(k);
    }
    std::string outside;
    for (size_t k : members)
      for (const std::string& l : inputs[k].linears)
        if (std::find(g.linears.begin(), g.linears.end(), l) == g.linears.end()) outside = l;
    if (!outside.empty()) {
      add_note(g.norm + ": not smoothed ('" + outside + "' reads its output too)");
      continue;
    }
    const size_t lead = members.front();
    Input& in = inputs[lead];
    const Found nf = Find(plan, g.norm + ".weight");
    if (!nf.info || nf.info->num_elements() != in.cols)
      return Status::InvalidInput(
          o.input, fmt::format("no {}-element '{}.weight' to fold SmoothQuant's scales into", in.cols, g.norm));
    in.norm = g.norm;
    in.unit_offset = g.unit_offset;
    in.range.emplace(in.cols);
    for (size_t k : members) inputs[k].smoothed_by = lead;
  }
  return Status::Ok();
}

// SmoothQuant with `alpha` on the group whose norm inputs[lead] holds: the smoothed norm and the smoothed weights of
// every Linear whose input is smoothed by it (rounded to their dtypes) into `p`; returns the scales.
Result<std::vector<float>> FoldGroup(const Plan& plan, const std::vector<Input>& inputs, size_t lead, double alpha,
                                     Prepared& p) {
  const Input& in = inputs[lead];
  std::vector<std::string> linears;
  std::vector<std::vector<float>> weights;
  std::vector<uint64_t> rows;
  for (const Input& m : inputs) {
    if (m.smoothed_by != lead) continue;
    for (const std::string& l : m.linears) {
      rows.push_back(Find(plan, l + ".weight").info->shape[0]);
      LMKIT_ASSIGN_OR_RETURN(std::vector<float> w, ReadFloat(plan, l + ".weight", rows.back() * in.cols));
      linears.push_back(l);
      weights.push_back(std::move(w));
    }
  }
  std::vector<BalancedWeight> bw;
  for (size_t k = 0; k < weights.size(); ++k) bw.push_back({weights[k].data(), rows[k]});
  const std::vector<float> range = in.range->Range();
  const std::vector<float> s = SmoothingScales(range, bw, alpha);
  const std::string norm_name = in.norm + ".weight";
  LMKIT_ASSIGN_OR_RETURN(std::vector<float> norm, ReadFloat(plan, norm_name, in.cols));
  if (in.unit_offset) {
    // Gemma's norm multiplies by (1 + w): (1 + w) / s is stored as ((1 + w) / s) - 1, each step rounded to the
    // tensor's dtype (llm-compressor's offset-norm calibration module does the same).
    for (float& v : norm) v = 1.0f + v;
    LMKIT_RETURN_IF_ERROR(RoundToDtype(plan, norm_name, norm));
    FoldIntoNorm(s, norm.data());
    LMKIT_RETURN_IF_ERROR(RoundToDtype(plan, norm_name, norm));
    for (float& v : norm) v -= 1.0f;
  } else {
    FoldIntoNorm(s, norm.data());
  }
  LMKIT_RETURN_IF_ERROR(RoundToDtype(plan, norm_name, norm));
  p.tensors[norm_name].values = std::move(norm);
  for (size_t k = 0; k < weights.size(); ++k) {
    FoldIntoWeight(s, weights[k].data(), rows[k]);
    const std::string name = linears[k] + ".weight";
    LMKIT_RETURN_IF_ERROR(RoundToDtype(plan, name, weights[k]));
    p.tensors[name].values = std::move(weights[k]);
  }
  SmoothReport r;
  r.norm = in.norm;
  r.balanced = std::move(linears);
  r.scale_min = *std::min_element(s.begin(), s.end());
  r.scale_max = *std::max_element(s.begin(), s.end());
  r.activation_range_max = *std::max_element(range.begin(), range.end());
  p.smooth.push_back(std::move(r));
  return s;
}

// The replaced tensors of `inputs` into `p`: SmoothQuant with `alpha` (FoldGroup on each input holding a norm),
// then GPTQ (each input with a Hessian) on the weights as smoothed. `smooth_hessian`: GPTQ uses the Hessian of the
// smoothed input (D⁻¹ H D⁻¹), else H as recorded.
Status BuildInputs(const QuantizeRequest& o, const Plan& plan, const std::vector<Input>& inputs,
                   std::optional<double> alpha, bool smooth_hessian, ThreadPool& pool, Prepared& p) {
  std::vector<std::vector<float>> scales(inputs.size());
  if (alpha)
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].range && !inputs[i].norm.empty()) {
        LMKIT_ASSIGN_OR_RETURN(scales[i], FoldGroup(plan, inputs, i, *alpha, p));
      }
  for (const Input& in : inputs) {
    if (!in.hessian) continue;
    std::vector<double> h = in.hessian->Hessian();
    if (smooth_hessian && in.smoothed_by < inputs.size() && !scales[in.smoothed_by].empty())
      SmoothHessian(scales[in.smoothed_by], h.data());
    LMKIT_ASSIGN_OR_RETURN(GptqFactor factor, FactorHessian(h.data(), in.cols, o.dampening, o.act_order, &pool));
    for (size_t k = 0; k < in.linears.size(); ++k) {
      if (!in.selected[k]) continue;  // a Linear left out by --include/--exclude keeps its (smoothed) weights
      const std::string name = in.linears[k] + ".weight";
      const Found f = Find(plan, name);
      const uint64_t rows = f.info->shape[0];
      // The weights as GPTQ sees them: smoothed when SmoothGroup replaced them.
      std::vector<float> w;
      if (auto it = p.tensors.find(name); it != p.tensors.end() && !it->second.values.empty()) {
        w = it->second.values;
      } else {
        LMKIT_ASSIGN_OR_RETURN(w, ReadFloat(plan, name, rows * in.cols));
      }
      GptqOptions go;
      go.bits = InfoOf(o.scheme).weight_bits;
      go.granularity = o.granularity;
      go.scale_dtype = f.info->dtype;
      go.dampening = o.dampening;
      go.act_order = o.act_order;
      auto r = GptqQuantize(w.data(), rows, in.cols, factor, h.data(), go, &pool);
      if (!r.ok()) {
        if (r.status().code() == ErrorCode::kInvalidInput)
          return Status::InvalidInput(f.shard->in_path, "tensor '" + name + "': " + r.status().message());
        return Status::InvalidArgument("tensor '" + name + "': " + r.status().message());
      }
      PreparedTensor& t = p.tensors[name];
      t.values = std::move(w);
      t.has_codes = true;
      t.codes = std::move(r->codes);
      t.scales = std::move(r->scales);
      t.gptq_error = r->error;
      t.rtn_error = r->rtn_error;
      t.dead_columns = r->dead_columns;
      t.cholesky_failed = r->cholesky_failed;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<CalibrationWindows> ReadCalibrationWindows(const QuantizeRequest& o, uint32_t max_pos, uint32_t V,
                                                  bool hold_out) {
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
  CalibrationWindows w;
  w.seq_len = T;
  w.held_out = hold_out ? std::max<uint64_t>(1, windows / 5) : 0;
  const uint64_t avail = windows - w.held_out;
  w.samples = o.samples ? std::min(o.samples, avail) : avail;
  auto take = [&](uint64_t begin, uint64_t end, std::vector<uint32_t>& out) -> Status {
    for (uint64_t i = begin; i < end; ++i) {
      if (tf[i] >= V)
        return Status::InvalidInput(o.calibration_tokens,
                                    fmt::format("token id {} at index {} is >= vocab_size {}", tf[i], i, V));
      out.push_back(tf[i]);
    }
    return Status::Ok();
  };
  LMKIT_RETURN_IF_ERROR(take(0, w.samples * T, w.ids));
  LMKIT_RETURN_IF_ERROR(take((windows - w.held_out) * T, windows * T, w.held_out_tokens));
  return w;
}

Result<CalibrationStats> CalibrationStats::Collect(const QuantizeRequest& o, const Plan& plan, const Matchers& matchers,
                                                   bool hold_out, ThreadPool& pool, ProgressSink* progress) {
  const double t0 = MonotonicSeconds();
  LMKIT_ASSIGN_OR_RETURN(model::LlamaModel m, model::LlamaModel::Load(o.input));
  LMKIT_ASSIGN_OR_RETURN(CalibrationWindows cw,
                         ReadCalibrationWindows(o, m.config().max_positions, m.config().vocab, hold_out));
  const uint32_t T = cw.seq_len, V = m.config().vocab;
  const uint64_t samples = cw.samples, held = cw.held_out;
  CalibrationStats st;
  st.plan_ = &plan;
  const bool gptq = o.method == QuantMethod::kGptq;
  const bool smooth = o.smoothquant_alpha.has_value() || o.smoothquant_auto;
  std::vector<size_t> input_of;
  LMKIT_RETURN_IF_ERROR(AddInputs(o, plan, matchers, m, gptq, smooth, st.inputs_, input_of, st.unsmoothed_));
  StatsObserver obs(st.inputs_, input_of, pool);
  model::KvCache cache = m.NewCache(T);
  std::vector<float> logits(V);
  if (progress) progress->Begin("calibrating", samples, "windows");
  std::vector<uint32_t> ids(T);
  for (uint64_t w = 0; w < samples; ++w) {
    for (uint32_t i = 0; i < T; ++i) ids[i] = cw.ids[w * T + i];
    cache.Clear();
    LMKIT_RETURN_IF_ERROR(m.Forward(ids, cache, &pool, logits.data(), false, &obs));
    if (progress) progress->Update(w + 1);
  }
  if (progress) progress->Finish();
  st.held_out_ = std::move(cw.held_out_tokens);
  st.report_.tokens = o.calibration_label.empty() ? o.calibration_tokens : o.calibration_label;
  st.report_.samples = samples;
  st.report_.held_out = held;
  st.report_.seq_len = T;
  st.report_.seconds = MonotonicSeconds() - t0;
  return st;
}

Result<Prepared> CalibrationStats::Build(const QuantizeRequest& o, std::optional<double> alpha,
                                         ThreadPool& pool) const {
  Prepared p;
  LMKIT_RETURN_IF_ERROR(BuildInputs(o, *plan_, inputs_, alpha, true, pool, p));
  if (alpha) p.unsmoothed = unsmoothed_;
  return p;
}

// An unlinked scratch file of appended blocks (Prepared::Spill).
class SpillFile {
 public:
  static Result<std::shared_ptr<SpillFile>> Create(const std::string& near) {
    std::filesystem::path dir = std::filesystem::path(near).parent_path();
    if (dir.empty()) dir = ".";
    std::string tmpl = (dir / ".lmkit-gptq-scratch.XXXXXX").string();
    const int fd = mkstemp(tmpl.data());
    if (fd < 0) return Status::Io(tmpl, std::string("cannot create a scratch file: ") + std::strerror(errno));
    unlink(tmpl.c_str());  // gone with the process, whatever happens
    auto f = std::make_shared<SpillFile>();
    f->fd_ = fd;
    f->path_ = tmpl;
    return f;
  }
  SpillFile() = default;
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;
  ~SpillFile() {
    if (fd_ >= 0) close(fd_);
  }
  // Appends `n` bytes; their offset in `*offset`.
  Status Append(const void* data, size_t n, uint64_t* offset) {
    *offset = size_;
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t done = 0; done < n;) {
      const ssize_t w = pwrite(fd_, p + done, n - done, static_cast<off_t>(size_ + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return Status::Io(path_, std::string("cannot write the scratch file: ") + std::strerror(errno));
      done += static_cast<size_t>(w);
    }
    size_ += n;
    return Status::Ok();
  }
  Status Read(uint64_t offset, void* dst, size_t n) const {
    auto* p = static_cast<uint8_t*>(dst);
    for (size_t done = 0; done < n;) {
      const ssize_t r = pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return Status::Io(path_, std::string("cannot read the scratch file: ") + std::strerror(errno));
      done += static_cast<size_t>(r);
    }
    return Status::Ok();
  }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
};

Status Prepared::Spill(const std::string& near) {
  if (!spill_) {
    LMKIT_ASSIGN_OR_RETURN(spill_, SpillFile::Create(near));
  }
  for (auto& [name, t] : tensors) {
    Spilled sp;
    sp.values = t.values.size();
    sp.codes = t.codes.size();
    sp.scales = t.scales.size();
    LMKIT_RETURN_IF_ERROR(spill_->Append(t.values.data(), t.values.size() * sizeof(float), &sp.offset));
    uint64_t unused = 0;
    LMKIT_RETURN_IF_ERROR(spill_->Append(t.codes.data(), t.codes.size(), &unused));
    LMKIT_RETURN_IF_ERROR(spill_->Append(t.scales.data(), t.scales.size() * sizeof(float), &unused));
    // Released, not just emptied (assigning {} would keep the capacity).
    std::vector<float>().swap(t.values);
    std::vector<int8_t>().swap(t.codes);
    std::vector<float>().swap(t.scales);
    sp.small = std::move(t);
    spilled_[name] = std::move(sp);
  }
  tensors.clear();
  return Status::Ok();
}

Result<const PreparedTensor*> Prepared::Find(const std::string& name) const {
  if (auto it = tensors.find(name); it != tensors.end()) return &it->second;
  auto it = spilled_.find(name);
  if (it == spilled_.end()) return static_cast<const PreparedTensor*>(nullptr);
  const Spilled& sp = it->second;
  loaded_ = sp.small;
  loaded_.values.resize(sp.values);
  loaded_.codes.resize(sp.codes);
  loaded_.scales.resize(sp.scales);
  uint64_t off = sp.offset;
  LMKIT_RETURN_IF_ERROR(spill_->Read(off, loaded_.values.data(), sp.values * sizeof(float)));
  off += sp.values * sizeof(float);
  LMKIT_RETURN_IF_ERROR(spill_->Read(off, loaded_.codes.data(), sp.codes));
  off += sp.codes;
  LMKIT_RETURN_IF_ERROR(spill_->Read(off, loaded_.scales.data(), sp.scales * sizeof(float)));
  return &loaded_;
}

Result<Prepared> RunSequential(const QuantizeRequest& o, const Plan& plan, const Matchers& matchers,
                               std::optional<double> alpha, const CalibrationWindows& cw, bool keep_in_memory,
                               ThreadPool& pool, ProgressSink* progress) {
  const bool gptq = o.method == QuantMethod::kGptq, smooth = alpha.has_value();
  const uint32_t T = cw.seq_len;
  const uint64_t samples = cw.samples;
  uint32_t layers = 0, H = 0;
  // The current layer's inputs, [samples, T, hidden] each: through the float (smoothed) layers for SmoothQuant's
  // ranges, through the quantized layers for GPTQ's Hessians (llm-compressor's independent pipeline: a sequential
  // pass per modifier, SmoothQuant's first).
  std::vector<float> float_acts, quant_acts, acts;
  {
    model::ModelParts parts;
    parts.layer_count = 0;
    parts.head = false;
    LMKIT_ASSIGN_OR_RETURN(model::LlamaModel m, model::LlamaModel::Load(o.input, parts));
    layers = m.config().layers;
    H = m.config().hidden;
    acts.resize(samples * T * H);
    for (uint64_t w = 0; w < samples; ++w)
      LMKIT_RETURN_IF_ERROR(m.Embed(std::span<const uint32_t>(cw.ids.data() + w * T, T), acts.data() + w * T * H));
  }
  // The second stream is copied once the embedding table is gone, so that the two are never resident together.
  if (smooth && gptq) float_acts = acts;
  (smooth && !gptq ? float_acts : quant_acts) = std::move(acts);
  Prepared all;
  std::vector<float> x(size_t{T} * H);
  if (progress) progress->Begin("calibrating", layers, "layers");
  for (uint32_t l = 0; l < layers; ++l) {
    model::ModelParts parts;
    parts.embeddings = false;
    parts.head = false;
    parts.first_layer = l;
    parts.layer_count = 1;
    std::vector<Input> inputs;
    {
      LMKIT_ASSIGN_OR_RETURN(model::LlamaModel m, model::LlamaModel::Load(o.input, parts));
      std::vector<size_t> input_of;
      LMKIT_RETURN_IF_ERROR(AddInputs(o, plan, matchers, m, gptq, smooth, inputs, input_of, all.unsmoothed));
      model::KvCache cache = m.NewCache(T);
      // The first layer's two streams are the same embeddings: one pass feeds both statistics.
      const bool one_pass = smooth && gptq && l == 0;
      if (smooth) {
        // The float stream goes through the float layer in place: smoothing keeps the float function.
        StatsObserver ranges(inputs, input_of, pool, one_pass, true);
        for (uint64_t w = 0; w < samples; ++w) {
          cache.Clear();
          LMKIT_RETURN_IF_ERROR(m.ForwardLayer(l, float_acts.data() + w * T * H, T, cache, &pool, &ranges));
        }
      }
      if (gptq && !one_pass) {
        StatsObserver hessians(inputs, input_of, pool, true, false);
        for (uint64_t w = 0; w < samples; ++w) {
          std::copy_n(quant_acts.data() + w * T * H, x.size(), x.data());
          cache.Clear();
          LMKIT_RETURN_IF_ERROR(m.ForwardLayer(l, x.data(), T, cache, &pool, &hessians));
        }
      }
    }
    // GPTQ's Hessians are of the smoothed inputs (D⁻¹ H D⁻¹), as GPTQ's hooks see the smoothed model.
    Prepared layer;
    LMKIT_RETURN_IF_ERROR(BuildInputs(o, plan, inputs, alpha, true, pool, layer));
    inputs.clear();
    if (gptq && l + 1 < layers) {
      std::map<std::string, std::vector<float>> replace;
      for (const auto& [name, t] : layer.tensors) {
        if (t.has_codes) {
          const io::TensorInfo* info = Find(plan, name).info;
          const uint64_t rows = info->shape[0], cols = info->shape[1];
          std::vector<float> w(rows * cols);
          DequantizeMatrix(t.codes.data(), t.scales.data(), rows, cols, o.granularity, w.data());
          LMKIT_RETURN_IF_ERROR(RoundToDtype(plan, name, w));
          replace[name] = std::move(w);
        } else if (!t.values.empty()) {
          replace[name] = t.values;
        }
      }
      parts.replace = &replace;
      LMKIT_ASSIGN_OR_RETURN(model::LlamaModel m, model::LlamaModel::Load(o.input, parts));
      model::KvCache cache = m.NewCache(T);
      for (uint64_t w = 0; w < samples; ++w) {
        cache.Clear();
        LMKIT_RETURN_IF_ERROR(m.ForwardLayer(l, quant_acts.data() + w * T * H, T, cache, &pool));
      }
    }
    for (auto& [name, t] : layer.tensors) all.tensors[name] = std::move(t);
    for (SmoothReport& r : layer.smooth) all.smooth.push_back(std::move(r));
    if (!keep_in_memory) {
      LMKIT_RETURN_IF_ERROR(all.Spill(o.output));
#ifdef __GLIBC__
      // The layer's matrices were freed between long-lived small allocations; glibc keeps such holes resident (its
      // mmap threshold rises after the first large free), and the heap would grow layer after layer. Give them back.
      malloc_trim(0);
#endif
    }
    if (progress) progress->Update(l + 1);
  }
  if (progress) progress->Finish();
  return all;
}

}  // namespace lmkit::quant::detail
