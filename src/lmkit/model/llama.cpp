// Performance notes: everything is fp32 with per-element work owned by one worker (Linear tiles, one (token, head)
// pair per attention item), so the output is the same for any thread count. The fp32 path reproduces the float64
// reference logits of stories260K within 1e-5 (tests/unit/model/llama_test.cpp); RoPE angles are computed in double
// for that reason (fp32 angles drift by ~1e-4 rad at position 500).
#include "lmkit/model/llama.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "lmkit/common/json.h"
#include "lmkit/formats/fp8.h"
#include "lmkit/formats/pack_quantized.h"
#include "lmkit/io/checkpoint.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/quant/quantizer.h"

namespace lmkit::model {

const char* WeightModeName(WeightMode m) {
  switch (m) {
    case WeightMode::kFloat:
      return "float";
    case WeightMode::kW8A16:
      return "w8a16";
    case WeightMode::kW8A8Static:
      return "w8a8-static";
    case WeightMode::kW8A8Dynamic:
      return "w8a8-dynamic";
    case WeightMode::kFp8Static:
      return "fp8-static";
    case WeightMode::kFp8Dynamic:
      return "fp8-dynamic";
  }
  return "";
}

KvCache::KvCache(const LlamaConfig& c, uint32_t capacity) : capacity_(capacity), kv_dim_(c.kv_heads * c.head_dim) {
  const size_t n = static_cast<size_t>(c.layers) * capacity * kv_dim_;
  k_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
}

namespace {

std::string ShapeText(const std::vector<uint64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

// Reads tensors by name across the checkpoint's files, checking shapes, and remembers which were used.
struct ModelLoader {
  std::string subject;  // the model path, for errors about the checkpoint as a whole
  std::vector<std::unique_ptr<io::SafetensorsFile>> files;
  std::map<std::string, std::pair<const io::SafetensorsFile*, const io::TensorInfo*>> index;
  std::set<std::string> used;
  bool w8a8 = false, dynamic = false;
  bool fp8 = false;  // float-quantized: E4M3 weights (and FP8 activations when w8a8 is set)

  Status AddFile(io::SafetensorsFile f) {
    files.push_back(std::make_unique<io::SafetensorsFile>(std::move(f)));
    const io::SafetensorsFile* sf = files.back().get();
    for (const io::TensorInfo& t : sf->tensors()) {
      if (index.count(t.name)) return Status::InvalidInput(sf->path(), "tensor '" + t.name + "' appears in two shards");
      index[t.name] = {sf, &t};
    }
    return Status::Ok();
  }

  const io::TensorInfo* Find(const std::string& name, const io::SafetensorsFile** file) {
    auto it = index.find(name);
    if (it == index.end()) return nullptr;
    used.insert(name);
    *file = it->second.first;
    return it->second.second;
  }

  Result<std::vector<float>> Float(const std::string& name, const std::vector<uint64_t>& shape) {
    const io::SafetensorsFile* f = nullptr;
    const io::TensorInfo* t = Find(name, &f);
    if (!t) return Status::InvalidInput(subject, "missing tensor '" + name + "'");
    if (t->shape != shape)
      return Status::InvalidInput(f->path(), fmt::format("tensor '{}' has shape {}; config.json implies {}", name,
                                                         ShapeText(t->shape), ShapeText(shape)));
    if (!io::IsFloatDType(t->dtype))
      return Status::InvalidInput(
          f->path(), fmt::format("tensor '{}' has dtype {}; expected a float dtype", name, io::DTypeName(t->dtype)));
    std::vector<float> out(t->num_elements());
    io::ConvertToF32(t->dtype, f->Data(*t).data(), out.data(), out.size());
    // A NaN or infinity in a weight makes every logit NaN downstream: refused here, naming where it is.
    for (size_t i = 0; i < out.size(); ++i) {
      if (std::isfinite(out[i])) continue;
      const uint64_t cols = shape.size() == 2 ? shape[1] : out.size();
      const std::string at = shape.size() == 2 ? fmt::format("[{}, {}]", i / cols, i % cols) : fmt::format("[{}]", i);
      return Status::InvalidInput(f->path(), fmt::format("tensor '{}': non-finite value at {}", name, at));
    }
    return out;
  }

  // The int8 codes of a pack-quantized weight: `m.weight_packed` I32 [out, ceil(in / 4)] with `m.weight_shape` I64
  // [2] = {out, in}.
  Result<std::vector<int8_t>> Unpacked(const std::string& m, uint32_t out, uint32_t in) {
    const io::SafetensorsFile* pf = nullptr;
    const io::SafetensorsFile* shf = nullptr;
    const io::TensorInfo* p = Find(m + ".weight_packed", &pf);
    const io::TensorInfo* sh = Find(m + ".weight_shape", &shf);
    if (!sh) return Status::InvalidInput(subject, "missing tensor '" + m + ".weight_shape' for a packed weight");
    if (sh->dtype != io::DType::kI64 || sh->num_elements() != 2)
      return Status::InvalidInput(shf->path(), "tensor '" + m + ".weight_shape' must be two I64 values");
    int64_t shape[2];
    std::memcpy(shape, shf->Data(*sh).data(), sizeof shape);
    if (shape[0] != out || shape[1] != in)
      return Status::InvalidInput(shf->path(), fmt::format("tensor '{}.weight_shape' is [{}, {}]; config.json implies "
                                                           "[{}, {}]",
                                                           m, shape[0], shape[1], out, in));
    const std::vector<uint64_t> want = {out, formats::PackedWords(in)};
    if (p->dtype != io::DType::kI32 || p->shape != want)
      return Status::InvalidInput(
          pf->path(), fmt::format("tensor '{}.weight_packed' is {} {}; expected I32 {}", m, io::DTypeName(p->dtype),
                                  ShapeText(p->shape), ShapeText(want)));
    const uint8_t* bytes = pf->Data(*p).data();
    const uint64_t row = formats::PackedWords(in) * 4;
    std::vector<int8_t> codes(static_cast<size_t>(out) * in);
    for (uint64_t r = 0; r < out; ++r)
      for (uint64_t c = 0; c < in; ++c) codes[r * in + c] = formats::UnpackCode8(bytes + r * row, c);
    return codes;
  }

  // One float scale tensor `name` of `count` finite non-negative values (1 or `out`).
  Result<std::vector<float>> Scales(const std::string& name, uint32_t out) {
    const io::SafetensorsFile* sf = nullptr;
    const io::TensorInfo* s = Find(name, &sf);
    if (!s) return Status::InvalidInput(subject, "missing tensor '" + name + "'");
    const auto& ss = s->shape;
    const bool tensor = s->num_elements() == 1, channel = ss.size() == 2 && ss[0] == out && ss[1] == 1;
    if (!io::IsFloatDType(s->dtype) || !(tensor || channel))
      return Status::InvalidInput(sf->path(), fmt::format("tensor '{}' is {} {}; expected a float [{}, 1] or [1]", name,
                                                          io::DTypeName(s->dtype), ShapeText(ss), out));
    std::vector<float> v(s->num_elements());
    io::ConvertToF32(s->dtype, sf->Data(*s).data(), v.data(), v.size());
    for (float x : v)
      if (!std::isfinite(x) || x < 0)
        return Status::InvalidInput(sf->path(), "tensor '" + name + "' has a negative or non-finite value");
    return v;
  }

  // float-quantized (FP8 E4M3) weights: dequantized to fp32 (code * scale, as the loaders compute it), with the
  // activations simulated in FP8 when the checkpoint quantizes them (Linear::Kind::kFp8*).
  Status LoadFp8(const std::string& m, const io::SafetensorsFile& f, const io::TensorInfo& w, uint32_t out, uint32_t in,
                 Linear* l) {
    if (!fp8)
      return Status::InvalidInput(f.path(),
                                  "tensor '" + m + ".weight' is F8_E4M3 but the config is not float-quantized");
    if (w.shape != std::vector<uint64_t>{out, in})
      return Status::InvalidInput(f.path(), fmt::format("tensor '{}.weight' has shape {}; config.json implies {}", m,
                                                        ShapeText(w.shape), ShapeText({out, in})));
    LMKIT_ASSIGN_OR_RETURN(std::vector<float> scales, Scales(m + ".weight_scale", out));
    const uint8_t* codes = f.Data(w).data();
    l->weight.resize(static_cast<size_t>(out) * in);
    for (uint64_t r = 0; r < out; ++r) {
      const float s = scales.size() == 1 ? scales[0] : scales[r];
      for (uint64_t c = 0; c < in; ++c) l->weight[r * in + c] = formats::E4M3ToF32(codes[r * in + c]) * s;
    }
    if (!w8a8) return Status::Ok();
    l->kind = dynamic ? Linear::Kind::kFp8Dynamic : Linear::Kind::kFp8Static;
    if (!dynamic) {
      LMKIT_ASSIGN_OR_RETURN(std::vector<float> xs, Scales(m + ".input_scale", 1));
      l->input_scale = xs[0];
    }
    return Status::Ok();
  }

  Result<Linear> LoadLinear(const std::string& m, uint32_t out, uint32_t in) {
    Linear l;
    l.name = m;
    l.out = out;
    l.in = in;
    const io::SafetensorsFile* f = nullptr;
    const io::TensorInfo* w = Find(m + ".weight", &f);
    // pack-quantized (formats/pack_quantized.h): the codes come packed into int32 words, with the original shape.
    std::vector<int8_t> unpacked;
    if (!w && index.count(m + ".weight_packed")) {
      LMKIT_ASSIGN_OR_RETURN(unpacked, Unpacked(m, out, in));
    } else if (!w) {
      return Status::InvalidInput(subject, "missing tensor '" + m + ".weight'");
    }
    if (w && w->dtype == io::DType::kF8E4M3) {
      LMKIT_RETURN_IF_ERROR(LoadFp8(m, *f, *w, out, in, &l));
    } else if (w && w->dtype != io::DType::kI8) {
      used.erase(m + ".weight");
      LMKIT_ASSIGN_OR_RETURN(l.weight, Float(m + ".weight", {out, in}));
    } else {
      if (w && w->shape != std::vector<uint64_t>{out, in})
        return Status::InvalidInput(f->path(), fmt::format("tensor '{}.weight' has shape {}; config.json implies {}", m,
                                                           ShapeText(w->shape), ShapeText({out, in})));
      const io::SafetensorsFile* sf = nullptr;
      const io::TensorInfo* s = Find(m + ".weight_scale", &sf);
      if (!s) return Status::InvalidInput(subject, "missing tensor '" + m + ".weight_scale' for int8 weight");
      if (!io::IsFloatDType(s->dtype))
        return Status::InvalidInput(sf->path(), "tensor '" + m + ".weight_scale' must be a float dtype");
      // The scale tensor's shape tells the granularity: [1] or [] tensor, [out, 1] channel, [out, G] groups.
      quant::Granularity g;
      const auto& ss = s->shape;
      if (s->num_elements() == 1 && (ss.size() <= 1 || (ss.size() == 2 && out != 1))) {
        g.kind = quant::Granularity::Kind::kTensor;
      } else if (ss.size() == 2 && ss[0] == out && ss[1] == 1) {
        g.kind = quant::Granularity::Kind::kChannel;
      } else if (ss.size() == 2 && ss[0] == out && ss[1] > 1 && in % ss[1] == 0) {
        g.kind = quant::Granularity::Kind::kGroup;
        g.group_size = in / ss[1];
      } else {
        return Status::InvalidInput(sf->path(), fmt::format("tensor '{}.weight_scale' has shape {}, which fits no "
                                                            "granularity of a [{}, {}] weight",
                                                            m, ShapeText(ss), out, in));
      }
      std::vector<float> scales(s->num_elements());
      io::ConvertToF32(s->dtype, sf->Data(*s).data(), scales.data(), scales.size());
      for (float v : scales)
        if (!std::isfinite(v) || v < 0)
          return Status::InvalidInput(sf->path(), "tensor '" + m + ".weight_scale' has a negative or non-finite value");
      const auto* codes = w ? reinterpret_cast<const int8_t*>(f->Data(*w).data()) : unpacked.data();
      if (!w8a8) {
        l.weight.resize(static_cast<size_t>(out) * in);
        quant::DequantizeMatrix(codes, scales.data(), out, in, g, l.weight.data());
      } else {
        if (g.kind == quant::Granularity::Kind::kGroup)
          return Status::Unsupported(sf->path(), "w8a8 with group-wise weight scales ('" + m + "') is not implemented");
        l.codes.assign(codes, codes + static_cast<size_t>(out) * in);
        l.weight_scale.resize(out);
        for (uint32_t r = 0; r < out; ++r) l.weight_scale[r] = scales.size() == 1 ? scales[0] : scales[r];
        l.kind = dynamic ? Linear::Kind::kInt8Dynamic : Linear::Kind::kInt8Static;
        if (!dynamic) {
          const io::SafetensorsFile* xf = nullptr;
          const io::TensorInfo* xs = Find(m + ".input_scale", &xf);
          if (!xs)
            return Status::InvalidInput(subject, "missing tensor '" + m + ".input_scale' (static w8a8 activations)");
          if (xs->num_elements() != 1 || !io::IsFloatDType(xs->dtype))
            return Status::InvalidInput(xf->path(), "tensor '" + m + ".input_scale' must be one float");
          io::ConvertToF32(xs->dtype, xf->Data(*xs).data(), &l.input_scale, 1);
          if (!std::isfinite(l.input_scale) || l.input_scale < 0)
            return Status::InvalidInput(xf->path(), "tensor '" + m + ".input_scale' is negative or non-finite");
        }
      }
    }
    if (index.count(m + ".bias")) {
      LMKIT_ASSIGN_OR_RETURN(l.bias, Float(m + ".bias", {out}));
    }
    return l;
  }
};

Result<LlamaModel> LlamaModel::Load(const std::string& path) {
  io::CheckpointOptions co;
  co.require_config = true;
  LMKIT_ASSIGN_OR_RETURN(io::Checkpoint ck, io::OpenCheckpoint(path, co));
  const std::string& config_path = ck.config_path;
  LMKIT_ASSIGN_OR_RETURN(Json cj, ParseJson(ck.config_text, config_path));
  LlamaModel model;
  model.path_ = path;
  LMKIT_ASSIGN_OR_RETURN(model.config_, ParseLlamaConfig(cj, config_path));
  const LlamaConfig& c = model.config_;
  // The forward pass indexes with 32-bit products of these; each bounds a real tensor's row count.
  if (uint64_t{c.heads} * c.head_dim > (uint64_t{1} << 30))
    return Status::InvalidInput(config_path, fmt::format("num_attention_heads x head_dim = {} is too large",
                                                         uint64_t{c.heads} * c.head_dim));

  ModelLoader ld;
  ld.subject = path;
  if (cj.contains("quantization_config") && !cj["quantization_config"].is_null()) {
    const Json& q = cj["quantization_config"];
    const std::string method =
        q.contains("quant_method") && q["quant_method"].is_string() ? q["quant_method"].get<std::string>() : "";
    const std::string format = q.contains("format") && q["format"].is_string() ? q["format"].get<std::string>() : "";
    if (method != "compressed-tensors" ||
        (format != "int-quantized" && format != "pack-quantized" && format != "float-quantized"))
      return Status::Unsupported(config_path, "quantization_config '" + method + "' / '" + format +
                                                  "' is not supported (compressed-tensors int-quantized, "
                                                  "pack-quantized or float-quantized only)");
    ld.fp8 = format == "float-quantized";
    if (!q.contains("config_groups") || !q["config_groups"].is_object() || q["config_groups"].size() != 1)
      return Status::Unsupported(config_path, "quantization_config must have exactly one config group");
    const Json& g = q["config_groups"].begin().value();
    // Compared with ==, which never throws on a value of another type (value() would).
    auto field = [](const Json& o, const char* key) { return o.is_object() && o.contains(key) ? o[key] : Json(); };
    // The weights are read as symmetric 8-bit codes (int, or FP8 E4M3 when float-quantized) times a scale; any other
    // scheme (4-bit, a zero point) would be read as that and give wrong numbers, so it is refused.
    const Json w = field(g, "weights");
    const char* wtype = ld.fp8 ? "float" : "int";
    if (!w.is_null() &&
        (!w.is_object() || field(w, "num_bits") != 8 || field(w, "type") != wtype || field(w, "symmetric") != true))
      return Status::Unsupported(config_path, std::string("weights must be symmetric 8-bit ") + wtype + " (num_bits " +
                                                  DumpJson(field(w, "num_bits"), -1) + ", type " +
                                                  DumpJson(field(w, "type"), -1) + ", symmetric " +
                                                  DumpJson(field(w, "symmetric"), -1) + ")");
    model.mode_ = WeightMode::kW8A16;
    if (g.is_object() && g.contains("input_activations") && !g["input_activations"].is_null()) {
      const Json& a = g["input_activations"];
      const char* type = ld.fp8 ? "float" : "int";
      if (!a.is_object() || field(a, "num_bits") != 8 || field(a, "type") != type || field(a, "symmetric") != true)
        return Status::Unsupported(config_path, std::string("input_activations must be symmetric 8-bit ") + type);
      ld.w8a8 = true;
      ld.dynamic = field(a, "dynamic") == true;
      if (ld.dynamic && field(a, "strategy") != "token")
        return Status::Unsupported(config_path, "dynamic input_activations must use strategy \"token\"");
      model.mode_ = ld.fp8 ? (ld.dynamic ? WeightMode::kFp8Dynamic : WeightMode::kFp8Static)
                           : (ld.dynamic ? WeightMode::kW8A8Dynamic : WeightMode::kW8A8Static);
    }
  }

  for (io::CheckpointFile& f : ck.files) LMKIT_RETURN_IF_ERROR(ld.AddFile(std::move(f.file)));

  const uint32_t H = c.hidden, qd = c.heads * c.head_dim, kvd = c.kv_heads * c.head_dim;
  LMKIT_ASSIGN_OR_RETURN(model.embed_, ld.Float("model.embed_tokens.weight", {c.vocab, H}));
  for (uint32_t i = 0; i < c.layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    Layer L;
    LMKIT_ASSIGN_OR_RETURN(L.attn_norm, ld.Float(p + "input_layernorm.weight", {H}));
    LMKIT_ASSIGN_OR_RETURN(L.mlp_norm, ld.Float(p + "post_attention_layernorm.weight", {H}));
    LMKIT_ASSIGN_OR_RETURN(L.q, ld.LoadLinear(p + "self_attn.q_proj", qd, H));
    LMKIT_ASSIGN_OR_RETURN(L.k, ld.LoadLinear(p + "self_attn.k_proj", kvd, H));
    LMKIT_ASSIGN_OR_RETURN(L.v, ld.LoadLinear(p + "self_attn.v_proj", kvd, H));
    LMKIT_ASSIGN_OR_RETURN(L.o, ld.LoadLinear(p + "self_attn.o_proj", H, qd));
    LMKIT_ASSIGN_OR_RETURN(L.gate, ld.LoadLinear(p + "mlp.gate_proj", c.intermediate, H));
    LMKIT_ASSIGN_OR_RETURN(L.up, ld.LoadLinear(p + "mlp.up_proj", c.intermediate, H));
    LMKIT_ASSIGN_OR_RETURN(L.down, ld.LoadLinear(p + "mlp.down_proj", H, c.intermediate));
    model.layers_.push_back(std::move(L));
  }
  LMKIT_ASSIGN_OR_RETURN(model.final_norm_, ld.Float("model.norm.weight", {H}));
  if (c.tie_embeddings) {
    ld.used.insert("lm_head.weight");  // transformers ignores a stored head when the embeddings are tied
    model.head_.name = "lm_head";
    model.head_.out = c.vocab;
    model.head_.in = H;
    model.head_.weight = model.embed_;
  } else {
    LMKIT_ASSIGN_OR_RETURN(model.head_, ld.LoadLinear("lm_head", c.vocab, H));
  }
  for (const auto& [name, ft] : ld.index) {
    if (ld.used.count(name) || name.ends_with("rotary_emb.inv_freq")) continue;
    return Status::InvalidInput(ft.first->path(), "tensor '" + name +
                                                      "' is not part of the model config.json describes "
                                                      "(config/weights mismatch)");
  }
  model.inv_freq_.resize(c.head_dim / 2);
  for (uint32_t i = 0; i < c.head_dim / 2; ++i)
    model.inv_freq_[i] = 1.0 / std::pow(c.rope_theta, 2.0 * i / static_cast<double>(c.head_dim));
  return model;
}

std::vector<std::string> LlamaModel::LinearNames() const {
  std::vector<std::string> out;
  for (const Layer& L : layers_)
    for (const Linear* l : {&L.q, &L.k, &L.v, &L.o, &L.gate, &L.up, &L.down}) out.push_back(l->name);
  return out;
}

namespace {

void RmsNorm(const float* x, const float* w, uint32_t n, double eps, float* y) {
  double ss = 0;
  for (uint32_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float r = static_cast<float>(1.0 / std::sqrt(ss / n + eps));
  for (uint32_t i = 0; i < n; ++i) y[i] = w[i] * (x[i] * r);
}

// Hugging Face rotate-half RoPE on one head vector: pairs (i, i + d/2).
void Rope(float* v, uint32_t d, const double* inv_freq, uint32_t pos) {
  const uint32_t h = d / 2;
  for (uint32_t i = 0; i < h; ++i) {
    const double a = pos * inv_freq[i];
    const float cs = static_cast<float>(std::cos(a)), sn = static_cast<float>(std::sin(a));
    const float x0 = v[i], x1 = v[i + h];
    v[i] = x0 * cs - x1 * sn;
    v[i + h] = x1 * cs + x0 * sn;
  }
}

void ForEach(ThreadPool* pool, size_t n, const std::function<void(size_t, unsigned)>& fn) {
  if (pool && n > 1) {
    pool->ParallelFor(n, fn);
  } else {
    for (size_t i = 0; i < n; ++i) fn(i, 0);
  }
}

}  // namespace

Status LlamaModel::Forward(std::span<const uint32_t> tokens, KvCache& cache, ThreadPool* pool, float* logits,
                           bool all_logits, ActivationObserver* observer) const {
  const LlamaConfig& c = config_;
  const uint32_t n = static_cast<uint32_t>(tokens.size());
  if (n == 0) return Status::Ok();
  for (uint32_t t = 0; t < n; ++t)
    if (tokens[t] >= c.vocab)
      return Status::InvalidInput(
          "", fmt::format("token id {} at position {} is >= vocab_size {}", tokens[t], cache.length_ + t, c.vocab));
  if (static_cast<uint64_t>(cache.length_) + n > cache.capacity_)
    return Status::InvalidInput(
        "", fmt::format("sequence of {} tokens exceeds the KV cache capacity {}", cache.length_ + n, cache.capacity_));
  const uint32_t H = c.hidden, hd = c.head_dim, qd = c.heads * hd, kvd = c.kv_heads * hd, I = c.intermediate;
  const uint32_t p0 = cache.length_, group = c.heads / c.kv_heads;
  std::vector<float> x(static_cast<size_t>(n) * H), xn(x.size()), tmp(x.size());
  std::vector<float> q(static_cast<size_t>(n) * qd), att(q.size()), k(static_cast<size_t>(n) * kvd), v(k.size());
  std::vector<float> g(static_cast<size_t>(n) * I), u(g.size());
  for (uint32_t t = 0; t < n; ++t)
    std::copy_n(embed_.data() + static_cast<size_t>(tokens[t]) * H, H, x.data() + static_cast<size_t>(t) * H);
  const unsigned workers = pool ? pool->size() : 1;
  std::vector<std::vector<float>> scores(workers, std::vector<float>(p0 + n));
  const float inv_sqrt = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  size_t li = 0;  // index into LinearNames()
  auto observe = [&](const std::vector<float>& in, uint32_t cols, int count) -> Status {
    for (int r = 0; r < count; ++r, ++li)
      if (observer) LMKIT_RETURN_IF_ERROR(observer->Observe(li, in.data(), n, cols));
    return Status::Ok();
  };

  for (uint32_t l = 0; l < c.layers; ++l) {
    const Layer& L = layers_[l];
    for (uint32_t t = 0; t < n; ++t) RmsNorm(&x[size_t{t} * H], L.attn_norm.data(), H, c.rms_eps, &xn[size_t{t} * H]);
    LMKIT_RETURN_IF_ERROR(observe(xn, H, 3));
    L.q.Apply(xn.data(), n, q.data(), pool);
    L.k.Apply(xn.data(), n, k.data(), pool);
    L.v.Apply(xn.data(), n, v.data(), pool);
    float* kc = cache.k_.data() + static_cast<size_t>(l) * cache.capacity_ * kvd;
    float* vc = cache.v_.data() + static_cast<size_t>(l) * cache.capacity_ * kvd;
    for (uint32_t t = 0; t < n; ++t) {
      for (uint32_t h = 0; h < c.heads; ++h) Rope(&q[size_t{t} * qd + h * hd], hd, inv_freq_.data(), p0 + t);
      for (uint32_t h = 0; h < c.kv_heads; ++h) Rope(&k[size_t{t} * kvd + h * hd], hd, inv_freq_.data(), p0 + t);
      std::copy_n(&k[size_t{t} * kvd], kvd, kc + size_t{p0 + t} * kvd);
      std::copy_n(&v[size_t{t} * kvd], kvd, vc + size_t{p0 + t} * kvd);
    }
    // Attention of a single decoding step over a short cache is too little work to hand out (see linear.cpp).
    ThreadPool* attn_pool = uint64_t{n} * c.heads * (p0 + n) * hd >= (uint64_t{1} << 16) ? pool : nullptr;
    ForEach(attn_pool, size_t{n} * c.heads, [&](size_t item, unsigned w) {
      const uint32_t t = static_cast<uint32_t>(item / c.heads), h = static_cast<uint32_t>(item % c.heads);
      const uint32_t kvh = h / group, len = p0 + t + 1;
      const float* qv = &q[size_t{t} * qd + h * hd];
      float* sc = scores[w].data();
      float mx = -INFINITY;
      for (uint32_t s = 0; s < len; ++s) {
        sc[s] = Dot(qv, kc + size_t{s} * kvd + kvh * hd, hd) * inv_sqrt;
        mx = std::max(mx, sc[s]);
      }
      float sum = 0;
      for (uint32_t s = 0; s < len; ++s) {
        sc[s] = std::exp(sc[s] - mx);
        sum += sc[s];
      }
      float* o = &att[size_t{t} * qd + h * hd];
      std::fill_n(o, hd, 0.0f);
      for (uint32_t s = 0; s < len; ++s) {
        const float p = sc[s] / sum;
        const float* vv = vc + size_t{s} * kvd + kvh * hd;
        for (uint32_t i = 0; i < hd; ++i) o[i] += p * vv[i];
      }
    });
    LMKIT_RETURN_IF_ERROR(observe(att, qd, 1));
    L.o.Apply(att.data(), n, tmp.data(), pool);
    for (size_t i = 0; i < x.size(); ++i) x[i] += tmp[i];

    for (uint32_t t = 0; t < n; ++t) RmsNorm(&x[size_t{t} * H], L.mlp_norm.data(), H, c.rms_eps, &xn[size_t{t} * H]);
    LMKIT_RETURN_IF_ERROR(observe(xn, H, 2));
    L.gate.Apply(xn.data(), n, g.data(), pool);
    L.up.Apply(xn.data(), n, u.data(), pool);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    LMKIT_RETURN_IF_ERROR(observe(g, I, 1));
    L.down.Apply(g.data(), n, tmp.data(), pool);
    for (size_t i = 0; i < x.size(); ++i) x[i] += tmp[i];
  }
  cache.length_ += n;
  const uint32_t first = all_logits ? 0 : n - 1;
  for (uint32_t t = first; t < n; ++t)
    RmsNorm(&x[size_t{t} * H], final_norm_.data(), H, c.rms_eps, &xn[size_t{t - first} * H]);
  head_.Apply(xn.data(), n - first, logits, pool);
  return Status::Ok();
}

}  // namespace lmkit::model
