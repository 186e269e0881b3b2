// Performance notes: everything is fp32 with per-element work owned by one worker (Linear tiles, one (query block,
// kv head) per attention item, attention.h), so the output is the same for any thread count. The fp32 path reproduces
// the float64 reference logits of stories260K within 1e-5 (tests/unit/model/llama_test.cpp); RoPE angles are computed
// in double for that reason (fp32 angles drift by ~1e-4 rad at position 500).
#include "lmkit/model/llama.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "lmkit/common/json.h"
#include "lmkit/formats/fp8.h"
#include "lmkit/formats/pack_quantized.h"
#include "lmkit/io/checkpoint.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/model/attention.h"
#include "lmkit/quant/quantizer.h"

namespace lmkit::model {

const char* WeightModeName(WeightMode m) {
  switch (m) {
    case WeightMode::kFloat:
      return "float";
    case WeightMode::kW8A16:
      return "w8a16";
    case WeightMode::kW4A16:
      return "w4a16";
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

KvCache::KvCache(const LlamaConfig& c, uint32_t capacity, uint32_t layers)
    : capacity_(capacity), k_dim_(c.kv_heads * c.head_dim), v_dim_(c.kv_heads * c.v_head_dim) {
  k_.assign(static_cast<size_t>(layers) * capacity * k_dim_, 0.0f);
  v_.assign(static_cast<size_t>(layers) * capacity * v_dim_, 0.0f);
}

namespace {

std::string ShapeText(const std::vector<uint64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

// One config group of a compressed-tensors quantization_config: the Linears it targets and how they are stored.
struct QuantGroup {
  std::vector<std::string> classes;  // class-name targets ("Linear")
  std::vector<std::regex> patterns;  // "re:" targets, matched from the start of the module name (Python's re.match)
  bool w8a8 = false, dynamic = false;
  bool fp8 = false;  // float-quantized: E4M3 weights (and FP8 activations when w8a8 is set)
  int bits = 8;      // int weights: 8, or 4 (weight-only; pack-quantized nibbles)
  WeightMode mode = WeightMode::kFloat;
};

// Reads tensors by name across the checkpoint's files, checking shapes, and remembers which were used.
struct ModelLoader {
  std::string subject;  // the model path, for errors about the checkpoint as a whole
  std::vector<std::unique_ptr<io::SafetensorsFile>> files;
  std::map<std::string, std::pair<const io::SafetensorsFile*, const io::TensorInfo*>> index;
  std::set<std::string> used;
  std::vector<QuantGroup> groups;

  // The group of Linear `m`: a "re:" target that matches it first (as vLLM and compressed-tensors rank them), else a
  // group targeting "Linear"; a module no group targets has the float group (its weights are read by dtype).
  const QuantGroup& GroupOf(const std::string& m) const {
    static const QuantGroup kNone;
    for (const QuantGroup& g : groups)
      for (const std::regex& r : g.patterns)
        if (std::regex_search(m, r, std::regex_constants::match_continuous)) return g;
    for (const QuantGroup& g : groups)
      if (std::find(g.classes.begin(), g.classes.end(), "Linear") != g.classes.end()) return g;
    return kNone;
  }
  const std::map<std::string, std::vector<float>>* replace = nullptr;

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

  // The replacement for `name`, or null.
  const std::vector<float>* Replaced(const std::string& name) const {
    if (!replace) return nullptr;
    auto it = replace->find(name);
    return it == replace->end() ? nullptr : &it->second;
  }

  Result<std::vector<float>> Float(const std::string& name, const std::vector<uint64_t>& shape) {
    if (const std::vector<float>* r = Replaced(name)) {
      uint64_t n = 1;
      for (uint64_t d : shape) n *= d;
      if (r->size() != n)
        return Status::InvalidInput(subject, fmt::format("replacement for tensor '{}' has {} values; config.json "
                                                         "implies {}",
                                                         name, r->size(), ShapeText(shape)));
      used.insert(name);
      return *r;
    }
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
    for (size_t i = 0; i < out.size(); ++i)
      if (!std::isfinite(out[i])) return NonFinite(*f, name, shape, i);
    Release(*f, *t);
    return out;
  }

  // Drops a consumed tensor's pages (bytes [b, b + n) of it) from this process (the page cache keeps them), so that
  // the file mapping does not stay resident beside the copies made from it.
  static void Release(const io::SafetensorsFile& f, const io::TensorInfo& t, uint64_t b = 0, uint64_t n = UINT64_MAX) {
    f.mapped().Advise(MappedFile::Advice::kDontNeed, f.data_offset() + t.begin + b, std::min(n, t.num_bytes() - b));
  }

  // A BF16/F16 [out, in] tensor packed into `l` piece by piece, each piece checked for NaN/infinity and its pages
  // dropped once read: peak memory is the packed copy plus about 1 MiB, even for an embedding-sized tensor.
  static Status PackHalfReleasing(const std::string& name, const io::SafetensorsFile& f, const io::TensorInfo& t,
                                  uint32_t in, Linear* l) {
    Status bad = Status::Ok();
    l->PackHalf(t.dtype == io::DType::kBF16 ? Linear::Kind::kBf16 : Linear::Kind::kFp16, f.Data(t).data(),
                [&](uint32_t r0, uint32_t r1) {
                  if (bad.ok()) bad = CheckFiniteHalf(name, f, t, uint64_t{r0} * in, uint64_t{r1} * in);
                  Release(f, t, uint64_t{r0} * in * 2, uint64_t{r1 - r0} * in * 2);
                });
    return bad;
  }

  // Whether no element [b, e) of the little-endian T words at `bytes` has all exponent bits (`mask`) set: a
  // branch-free pass the compiler vectorises; the caller then looks for the element only when one is there.
  template <class T>
  static bool AllFinite(const uint8_t* bytes, uint64_t b, uint64_t e, T mask) {
    T any = 0;
    for (uint64_t i = b; i < e; ++i) {
      T v;
      std::memcpy(&v, bytes + sizeof(T) * i, sizeof(T));
      any |= static_cast<T>((v & mask) == mask);
    }
    return any == 0;
  }

  // An F32 [out, in] tensor packed into `l` straight from the mapped file, as PackHalfReleasing (no fp32 copy
  // before the panels: one pass over the bytes instead of convert, copy and pack).
  static Status PackF32Releasing(const std::string& name, const io::SafetensorsFile& f, const io::TensorInfo& t,
                                 uint32_t in, Linear* l) {
    Status bad = Status::Ok();
    const uint8_t* bytes = f.Data(t).data();
    l->PackF32(bytes, [&](uint32_t r0, uint32_t r1) {
      const uint64_t b = uint64_t{r0} * in, e = uint64_t{r1} * in;
      if (bad.ok() && !AllFinite<uint32_t>(bytes, b, e, 0x7F800000u))
        for (uint64_t i = b; bad.ok() && i < e; ++i) {
          float v;
          std::memcpy(&v, bytes + 4 * i, 4);
          if (!std::isfinite(v)) bad = NonFinite(f, name, t.shape, i);
        }
      Release(f, t, b * 4, (e - b) * 4);
    });
    return bad;
  }

  // A float [out, in] matrix used by rows (the embedding) into `l`, kept in its stored form: BF16/F16 as 16-bit values,
  // other float dtypes as fp32. With `pack` (a tied head) the values go straight into the GEMM's panels (one copy;
  // the embedding then reads its rows from there). Errors as Float.
  Status Matrix(const std::string& name, uint32_t out, uint32_t in, bool pack, Linear* l) {
    const io::SafetensorsFile* f = nullptr;
    const io::TensorInfo* t = Find(name, &f);
    const std::vector<uint64_t> shape = {out, in};
    l->out = out;
    l->in = in;
    if (t && t->shape == shape && (t->dtype == io::DType::kBF16 || t->dtype == io::DType::kF16)) {
      if (pack) return PackHalfReleasing(name, *f, *t, in, l);
      l->kind = t->dtype == io::DType::kBF16 ? Linear::Kind::kBf16 : Linear::Kind::kFp16;
      l->half.resize(t->num_elements());
      const uint64_t piece = uint64_t{1} << 19;  // values: 1 MiB copied, checked and dropped at a time
      for (uint64_t i = 0; i < l->half.size(); i += piece) {
        const uint64_t e = std::min<uint64_t>(l->half.size(), i + piece);
        LMKIT_RETURN_IF_ERROR(CheckFiniteHalf(name, *f, *t, i, e));
        std::memcpy(l->half.data() + i, f->Data(*t).data() + 2 * i, 2 * (e - i));
        Release(*f, *t, 2 * i, 2 * (e - i));
      }
      return Status::Ok();
    }
    if (pack && t && t->shape == shape && t->dtype == io::DType::kF32 && !Replaced(name))
      return PackF32Releasing(name, *f, *t, in, l);
    LMKIT_ASSIGN_OR_RETURN(l->weight, Float(name, shape));
    if (pack) l->Pack();
    return Status::Ok();
  }

  // The error for a NaN or infinity at flat index `i` of tensor `name` of `shape`, naming its row and column.
  static Status NonFinite(const io::SafetensorsFile& f, const std::string& name, const std::vector<uint64_t>& shape,
                          uint64_t i) {
    const std::string at =
        shape.size() == 2 ? fmt::format("[{}, {}]", i / shape[1], i % shape[1]) : fmt::format("[{}]", i);
    return Status::InvalidInput(f.path(), fmt::format("tensor '{}': non-finite value at {}", name, at));
  }

  // Elements [first, end) of a BF16/F16 tensor with no NaN or infinity (all exponent bits set), else the error Float
  // gives.
  static Status CheckFiniteHalf(const std::string& name, const io::SafetensorsFile& f, const io::TensorInfo& t,
                                uint64_t first = 0, uint64_t end = UINT64_MAX) {
    const uint16_t exp_mask = t.dtype == io::DType::kBF16 ? 0x7F80 : 0x7C00;
    const uint8_t* bytes = f.Data(t).data();
    const uint64_t n = std::min(end, t.num_elements());
    if (AllFinite<uint16_t>(bytes, first, n, exp_mask)) return Status::Ok();
    for (uint64_t i = first; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, bytes + 2 * i, 2);
      if ((v & exp_mask) == exp_mask) return NonFinite(f, name, t.shape, i);
    }
    return Status::Ok();
  }

  // The int codes of a pack-quantized weight (formats/pack_quantized.h): `m.weight_packed` I32 [out, ceil(in / 4)]
  // (8-bit) or [out, ceil(in / 8)] (4-bit) with `m.weight_shape` I64 [2] = {out, in}.
  Result<std::vector<int8_t>> Unpacked(const std::string& m, uint32_t out, uint32_t in, int bits) {
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
    const uint64_t words = bits == 4 ? formats::PackedWords4(in) : formats::PackedWords(in);
    const std::vector<uint64_t> want = {out, words};
    if (p->dtype != io::DType::kI32 || p->shape != want)
      return Status::InvalidInput(
          pf->path(), fmt::format("tensor '{}.weight_packed' is {} {}; expected I32 {}", m, io::DTypeName(p->dtype),
                                  ShapeText(p->shape), ShapeText(want)));
    const uint8_t* bytes = pf->Data(*p).data();
    const uint64_t row = words * 4;
    std::vector<int8_t> codes(static_cast<size_t>(out) * in);
    for (uint64_t r = 0; r < out; ++r)
      for (uint64_t c = 0; c < in; ++c)
        codes[r * in + c] =
            bits == 4 ? formats::UnpackCode4(bytes + r * row, c) : formats::UnpackCode8(bytes + r * row, c);
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
  Status LoadFp8(const std::string& m, const QuantGroup& g, const io::SafetensorsFile& f, const io::TensorInfo& w,
                 uint32_t out, uint32_t in, Linear* l) {
    if (!g.fp8)
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
    if (!g.w8a8) return Status::Ok();
    l->kind = g.dynamic ? Linear::Kind::kFp8Dynamic : Linear::Kind::kFp8Static;
    if (!g.dynamic) {
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
    if (Replaced(m + ".weight")) {
      LMKIT_ASSIGN_OR_RETURN(l.weight, Float(m + ".weight", {out, in}));
      if (index.count(m + ".bias")) {
        LMKIT_ASSIGN_OR_RETURN(l.bias, Float(m + ".bias", {out}));
      }
      return l;
    }
    const QuantGroup& g = GroupOf(m);
    const io::SafetensorsFile* f = nullptr;
    const io::TensorInfo* w = Find(m + ".weight", &f);
    // pack-quantized (formats/pack_quantized.h): the codes come packed into int32 words, with the original shape.
    std::vector<int8_t> unpacked;
    if (!w && index.count(m + ".weight_packed")) {
      LMKIT_ASSIGN_OR_RETURN(unpacked, Unpacked(m, out, in, g.bits));
    } else if (!w) {
      return Status::InvalidInput(subject, "missing tensor '" + m + ".weight'");
    }
    if (w && w->dtype == io::DType::kF8E4M3) {
      LMKIT_RETURN_IF_ERROR(LoadFp8(m, g, *f, *w, out, in, &l));
    } else if (w && (w->dtype == io::DType::kBF16 || w->dtype == io::DType::kF16) &&
               w->shape == std::vector<uint64_t>{out, in}) {
      // Kept as stored (2 bytes a weight, widened inside the GEMM): a bf16 checkpoint is never upcast whole.
      LMKIT_RETURN_IF_ERROR(PackHalfReleasing(m + ".weight", *f, *w, in, &l));
    } else if (w && w->dtype == io::DType::kF32 && w->shape == std::vector<uint64_t>{out, in}) {
      LMKIT_RETURN_IF_ERROR(PackF32Releasing(m + ".weight", *f, *w, in, &l));
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
      quant::Granularity gran;
      const auto& ss = s->shape;
      if (s->num_elements() == 1 && (ss.size() <= 1 || (ss.size() == 2 && out != 1))) {
        gran.kind = quant::Granularity::Kind::kTensor;
      } else if (ss.size() == 2 && ss[0] == out && ss[1] == 1) {
        gran.kind = quant::Granularity::Kind::kChannel;
      } else if (ss.size() == 2 && ss[0] == out && ss[1] > 1 && in % ss[1] == 0) {
        gran.kind = quant::Granularity::Kind::kGroup;
        gran.group_size = in / ss[1];
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
      if (w && g.bits != 8)
        return Status::InvalidInput(f->path(), fmt::format("tensor '{}.weight' is I8 but the config says {}-bit "
                                                           "weights (pack-quantized)",
                                                           m, g.bits));
      const auto* codes = w ? reinterpret_cast<const int8_t*>(f->Data(*w).data()) : unpacked.data();
      if (!g.w8a8) {
        // Weight-only (w8a16, w4a16): code x its row's or group's scale, in fp32.
        l.weight.resize(static_cast<size_t>(out) * in);
        quant::DequantizeMatrix(codes, scales.data(), out, in, gran, l.weight.data());
      } else {
        if (gran.kind == quant::Granularity::Kind::kGroup)
          return Status::Unsupported(sf->path(), "w8a8 with group-wise weight scales ('" + m + "') is not implemented");
        l.codes.assign(codes, codes + static_cast<size_t>(out) * in);
        if (w) Release(*f, *w);
        l.weight_scale.resize(out);
        for (uint32_t r = 0; r < out; ++r) l.weight_scale[r] = scales.size() == 1 ? scales[0] : scales[r];
        l.kind = g.dynamic ? Linear::Kind::kInt8Dynamic : Linear::Kind::kInt8Static;
        if (!g.dynamic) {
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

Result<LlamaModel> LlamaModel::Load(const std::string& path, const ModelParts& parts) {
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
    return Status::InvalidInput(
        config_path, fmt::format("num_attention_heads x head_dim = {} is too large", uint64_t{c.heads} * c.head_dim));
  if (uint64_t{c.heads} * (uint64_t{c.qk_nope} + c.v_head_dim) > (uint64_t{1} << 30))
    return Status::InvalidInput(config_path,
                                fmt::format("num_attention_heads x (qk_nope_head_dim + v_head_dim) = {} is "
                                            "too large",
                                            uint64_t{c.heads} * (uint64_t{c.qk_nope} + c.v_head_dim)));

  ModelLoader ld;
  ld.subject = path;
  ld.replace = parts.replace;
  const uint32_t first = std::min(parts.first_layer, c.layers);
  const uint32_t last = first + std::min(parts.layer_count, c.layers - first);
  const bool whole = parts.embeddings && parts.head && first == 0 && last == c.layers;
  model.first_layer_ = first;
  model.has_embeddings_ = parts.embeddings;
  model.has_head_ = parts.head;
  if (cj.contains("quantization_config") && !cj.at("quantization_config").is_null()) {
    const Json& q = cj.at("quantization_config");
    const std::string method =
        q.contains("quant_method") && q["quant_method"].is_string() ? q["quant_method"].get<std::string>() : "";
    const std::string format = q.contains("format") && q["format"].is_string() ? q["format"].get<std::string>() : "";
    auto known = [](const std::string& f) {
      return f == "int-quantized" || f == "pack-quantized" || f == "float-quantized";
    };
    if (method != "compressed-tensors" || (!known(format) && format != "mixed-precision"))
      return Status::Unsupported(config_path, "quantization_config '" + method + "' / '" + format +
                                                  "' is not supported (compressed-tensors int-quantized, "
                                                  "pack-quantized, float-quantized or mixed-precision of them only)");
    if (!q.contains("config_groups") || !q["config_groups"].is_object() || q["config_groups"].empty())
      return Status::Unsupported(config_path, "quantization_config has no config group");
    // Compared with ==, which never throws on a value of another type (value() would).
    auto field = [](const Json& o, const char* key) { return o.is_object() && o.contains(key) ? o[key] : Json(); };
    for (const auto& [gname, g] : q["config_groups"].items()) {
      QuantGroup qg;
      const std::string where = "quantization_config group '" + gname + "': ";
      const Json gf = field(g, "format");
      const std::string gformat = gf.is_string() ? gf.get<std::string>() : format;
      if (!known(gformat)) return Status::Unsupported(config_path, where + "format '" + gformat + "' is not supported");
      qg.fp8 = gformat == "float-quantized";
      // No targets: "Linear", as a one-group config has always been read.
      const Json targets = g.is_object() && g.contains("targets") ? g["targets"] : Json::array({"Linear"});
      if (!targets.is_array() || targets.empty())
        return Status::Unsupported(config_path, where + "targets must be a non-empty list");
      for (const Json& t : targets) {
        if (!t.is_string()) return Status::Unsupported(config_path, where + "a target is not a string");
        const std::string ts = t.get<std::string>();
        if (ts.rfind("re:", 0) != 0) {
          qg.classes.push_back(ts);
          continue;
        }
        try {
          qg.patterns.emplace_back(ts.substr(3), std::regex::ECMAScript);
        } catch (const std::regex_error&) {
          return Status::InvalidInput(config_path, where + "target '" + ts + "' is not a valid regex");
        }
      }
      // The weights are read as symmetric codes (8-bit int, 4-bit int pack-quantized, or FP8 E4M3 when
      // float-quantized) times a scale; any other scheme (a zero point, other widths) would be read as that and give
      // wrong numbers, so it is refused.
      const Json w = field(g, "weights");
      const char* wtype = qg.fp8 ? "float" : "int";
      const bool four = !qg.fp8 && gformat == "pack-quantized" && field(w, "num_bits") == 4;
      if (!w.is_null() && (!w.is_object() || (field(w, "num_bits") != 8 && !four) || field(w, "type") != wtype ||
                           field(w, "symmetric") != true))
        return Status::Unsupported(config_path, where + "weights must be symmetric 8-bit " + wtype +
                                                    (qg.fp8 ? "" : " (or 4-bit pack-quantized)") + " (num_bits " +
                                                    DumpJson(field(w, "num_bits"), -1) + ", type " +
                                                    DumpJson(field(w, "type"), -1) + ", symmetric " +
                                                    DumpJson(field(w, "symmetric"), -1) + ")");
      qg.bits = four ? 4 : 8;
      qg.mode = four ? WeightMode::kW4A16 : WeightMode::kW8A16;
      if (g.is_object() && g.contains("input_activations") && !g["input_activations"].is_null()) {
        const Json& a = g["input_activations"];
        if (four) return Status::Unsupported(config_path, where + "4-bit weights with quantized activations");
        if (!a.is_object() || field(a, "num_bits") != 8 || field(a, "type") != wtype || field(a, "symmetric") != true)
          return Status::Unsupported(config_path, where + "input_activations must be symmetric 8-bit " + wtype);
        qg.w8a8 = true;
        qg.dynamic = field(a, "dynamic") == true;
        if (qg.dynamic && field(a, "strategy") != "token")
          return Status::Unsupported(config_path, where + "dynamic input_activations must use strategy \"token\"");
        qg.mode = qg.fp8 ? (qg.dynamic ? WeightMode::kFp8Dynamic : WeightMode::kFp8Static)
                         : (qg.dynamic ? WeightMode::kW8A8Dynamic : WeightMode::kW8A8Static);
      }
      ld.groups.push_back(std::move(qg));
    }
    // The model's mode is the dense layers' (the group targeting "Linear"); a routed-experts group may differ.
    model.mode_ = ld.GroupOf("").mode == WeightMode::kFloat ? ld.groups.front().mode : ld.GroupOf("").mode;
  }

  for (io::CheckpointFile& f : ck.files) LMKIT_RETURN_IF_ERROR(ld.AddFile(std::move(f.file)));

  // Gemma3ForConditionalGeneration keeps its language model under a prefix; its vision tower is not run.
  std::string pre = "model.", head_name = "lm_head";
  if (c.model_type == "gemma3" && ld.index.count("language_model.model.embed_tokens.weight")) {
    pre = "language_model.model.";
    head_name = "language_model.lm_head";
  } else if (c.model_type == "gemma3" && ld.index.count("model.language_model.embed_tokens.weight")) {
    pre = "model.language_model.";
  }
  const uint32_t H = c.hidden, hd = c.head_dim, qd = c.heads * hd, kvd = c.kv_heads * hd;
  auto norm = [&](const std::string& name, uint32_t n) -> Result<std::vector<float>> {
    LMKIT_ASSIGN_OR_RETURN(std::vector<float> w, ld.Float(name, {n}));
    if (c.unit_offset_norms)
      for (float& v : w) v = 1.0f + v;  // Gemma's RMSNorm multiplies by (1 + w), in fp32
    return w;
  };
  // A Linear whose bias must be there exactly when the config says so (attention_bias, mlp_bias, qwen2's q/k/v).
  auto lin = [&](const std::string& m, uint32_t out, uint32_t in, bool bias) -> Result<Linear> {
    LMKIT_ASSIGN_OR_RETURN(Linear l, ld.LoadLinear(m, out, in));
    if (bias && l.bias.empty()) return Status::InvalidInput(path, "missing tensor '" + m + ".bias'");
    if (!bias && !l.bias.empty())
      return Status::InvalidInput(path, "tensor '" + m +
                                            ".bias' is not part of the model config.json describes "
                                            "(attention_bias / mlp_bias is false)");
    return l;
  };
  auto mlp = [&](const std::string& p, uint32_t inter, bool bias, bool fused, const char* g, const char* u,
                 const char* d) -> Result<Mlp> {
    Mlp m;
    if (fused) {
      LMKIT_ASSIGN_OR_RETURN(m.gate, lin(p + "gate_up_proj", 2 * inter, H, bias));
    } else {
      LMKIT_ASSIGN_OR_RETURN(m.gate, lin(p + g, inter, H, bias));
      LMKIT_ASSIGN_OR_RETURN(m.up, lin(p + u, inter, H, bias));
    }
    LMKIT_ASSIGN_OR_RETURN(m.down, lin(p + d, H, inter, bias));
    return m;
  };

  {
    const io::SafetensorsFile* ef = nullptr;
    const io::TensorInfo* et = ld.Find(pre + "embed_tokens.weight", &ef);
    if (et && c.scale_embeddings) {
      // transformers multiplies by sqrt(hidden) cast to the embeddings' dtype (55.5 rather than 55.43 in bf16).
      float s = static_cast<float>(std::sqrt(static_cast<double>(H)));
      if (et->dtype == io::DType::kBF16) s = io::Bf16ToF32(io::F32ToBf16(s));
      if (et->dtype == io::DType::kF16) s = io::F16ToF32(io::F32ToF16(s));
      model.embed_scale_ = s;
    }
  }
  // Tied: one copy, the head's panels, which the embedding lookup reads rows from; else the embedding as stored.
  if (c.tie_embeddings && (parts.embeddings || parts.head)) {
    LMKIT_RETURN_IF_ERROR(ld.Matrix(pre + "embed_tokens.weight", c.vocab, H, true, &model.head_));
  } else if (parts.embeddings) {
    LMKIT_RETURN_IF_ERROR(ld.Matrix(pre + "embed_tokens.weight", c.vocab, H, false, &model.embed_));
  }
  for (uint32_t i = first; i < last; ++i) {
    const std::string p = fmt::format("{}layers.{}.", pre, i);
    Layer L;
    L.moe = c.experts > 0 && c.moe[i];
    switch (c.norms) {
      case NormPlacement::kPre: {
        LMKIT_ASSIGN_OR_RETURN(L.pre_attn, norm(p + "input_layernorm.weight", H));
        LMKIT_ASSIGN_OR_RETURN(L.pre_mlp, norm(p + "post_attention_layernorm.weight", H));
        break;
      }
      case NormPlacement::kSandwich: {
        LMKIT_ASSIGN_OR_RETURN(L.pre_attn, norm(p + "input_layernorm.weight", H));
        LMKIT_ASSIGN_OR_RETURN(L.post_attn, norm(p + "post_attention_layernorm.weight", H));
        LMKIT_ASSIGN_OR_RETURN(L.pre_mlp, norm(p + "pre_feedforward_layernorm.weight", H));
        LMKIT_ASSIGN_OR_RETURN(L.post_mlp, norm(p + "post_feedforward_layernorm.weight", H));
        break;
      }
      case NormPlacement::kPost: {
        LMKIT_ASSIGN_OR_RETURN(L.post_attn, norm(p + "post_attention_layernorm.weight", H));
        LMKIT_ASSIGN_OR_RETURN(L.post_mlp, norm(p + "post_feedforward_layernorm.weight", H));
        break;
      }
    }
    if (c.qk_norm != io::QkNorm::kNone) {
      const bool head = c.qk_norm == io::QkNorm::kPerHead;
      LMKIT_ASSIGN_OR_RETURN(L.q_norm, norm(p + "self_attn.q_norm.weight", head ? hd : qd));
      LMKIT_ASSIGN_OR_RETURN(L.k_norm, norm(p + "self_attn.k_norm.weight", head ? hd : kvd));
    }
    if (c.mla) {
      // DeepseekV2/V3Attention: the RMSNorms inside attention keep their class's eps (1e-6), not rms_norm_eps.
      const std::string a = p + "self_attn.";
      if (c.q_lora_rank > 0) {
        LMKIT_ASSIGN_OR_RETURN(L.q_a, lin(a + "q_a_proj", c.q_lora_rank, H, c.mla_bias));
        LMKIT_ASSIGN_OR_RETURN(L.q_a_norm, ld.Float(a + "q_a_layernorm.weight", {c.q_lora_rank}));
        LMKIT_ASSIGN_OR_RETURN(L.q, lin(a + "q_b_proj", qd, c.q_lora_rank, false));
      } else {
        LMKIT_ASSIGN_OR_RETURN(L.q, lin(a + "q_proj", qd, H, false));
      }
      LMKIT_ASSIGN_OR_RETURN(L.kv_a, lin(a + "kv_a_proj_with_mqa", c.kv_lora_rank + c.qk_rope, H, c.mla_bias));
      LMKIT_ASSIGN_OR_RETURN(L.kv_a_norm, ld.Float(a + "kv_a_layernorm.weight", {c.kv_lora_rank}));
      LMKIT_ASSIGN_OR_RETURN(L.kv_b, lin(a + "kv_b_proj", c.heads * (c.qk_nope + c.v_head_dim), c.kv_lora_rank, false));
    } else if (c.fused_qkv) {
      LMKIT_ASSIGN_OR_RETURN(L.q, lin(p + "self_attn.qkv_proj", qd + 2 * kvd, H, c.qkv_bias));
    } else {
      LMKIT_ASSIGN_OR_RETURN(L.q, lin(p + "self_attn.q_proj", qd, H, c.qkv_bias));
      LMKIT_ASSIGN_OR_RETURN(L.k, lin(p + "self_attn.k_proj", kvd, H, c.qkv_bias));
      LMKIT_ASSIGN_OR_RETURN(L.v, lin(p + "self_attn.v_proj", kvd, H, c.qkv_bias));
    }
    LMKIT_ASSIGN_OR_RETURN(L.o, lin(p + "self_attn.o_proj", H, c.heads * c.v_head_dim, c.mla ? c.mla_bias : c.o_bias));
    if (!L.moe) {
      LMKIT_ASSIGN_OR_RETURN(
          L.mlp, mlp(p + "mlp.", c.intermediate, c.mlp_bias, c.fused_gate_up, "gate_proj", "up_proj", "down_proj"));
    } else {
      // Mixtral's Hub checkpoints call the block block_sparse_moe and its experts' projections w1 (gate), w3 (up),
      // w2 (down); transformers 5 keeps the fused 3-D experts.gate_up_proj [E, 2I, H] / experts.down_proj [E, H, I]
      // in memory and may be handed either.
      const std::string bs = p + "block_sparse_moe.gate.weight";
      const std::string mp =
          ld.index.count(bs) || ld.index.count(bs + "_packed") ? p + "block_sparse_moe." : p + "mlp.";
      const uint32_t E = c.experts, I = c.expert_intermediate;
      LMKIT_ASSIGN_OR_RETURN(L.router, lin(mp + "gate", E, H, false));
      if (c.router_bias) {
        LMKIT_ASSIGN_OR_RETURN(L.router_bias, ld.Float(mp + "gate.e_score_correction_bias", {E}));
      }
      if (ld.index.count(mp + "experts.gate_up_proj")) {
        LMKIT_ASSIGN_OR_RETURN(std::vector<float> gu, ld.Float(mp + "experts.gate_up_proj", {E, 2 * I, H}));
        LMKIT_ASSIGN_OR_RETURN(std::vector<float> dn, ld.Float(mp + "experts.down_proj", {E, H, I}));
        const size_t slab = size_t{I} * H;
        for (uint32_t e = 0; e < E; ++e) {
          Mlp m;
          auto fill = [&](Linear& l, const char* leaf, uint32_t out, uint32_t in, const float* w) {
            l.name = fmt::format("{}experts.{}.{}", mp, e, leaf);
            l.out = out;
            l.in = in;
            l.weight.assign(w, w + size_t{out} * in);
          };
          // Named as the per-expert layout names them (quantize_plan.h's FusedExpertSlices, GPTQ's Hessians).
          const bool w123 = c.model_type == "mixtral";
          fill(m.gate, w123 ? "w1" : "gate_proj", I, H, gu.data() + 2 * slab * e);
          fill(m.up, w123 ? "w3" : "up_proj", I, H, gu.data() + 2 * slab * e + slab);
          fill(m.down, w123 ? "w2" : "down_proj", H, I, dn.data() + slab * e);
          L.experts.push_back(std::move(m));
        }
      } else {
        const bool w123 =
            ld.index.count(mp + "experts.0.w1.weight") || ld.index.count(mp + "experts.0.w1.weight_packed");
        for (uint32_t e = 0; e < E; ++e) {
          LMKIT_ASSIGN_OR_RETURN(Mlp m,
                                 mlp(fmt::format("{}experts.{}.", mp, e), I, false, false, w123 ? "w1" : "gate_proj",
                                     w123 ? "w3" : "up_proj", w123 ? "w2" : "down_proj"));
          L.experts.push_back(std::move(m));
        }
      }
      if (c.shared_intermediate > 0) {
        // qwen2_moe's one shared_expert; DeepSeek's n_shared_experts as one MLP (mlp_bias: DeepseekV2MLP).
        LMKIT_ASSIGN_OR_RETURN(L.shared, mlp(mp + (c.mla ? "shared_experts." : "shared_expert."), c.shared_intermediate,
                                             c.mla && c.mlp_bias, false, "gate_proj", "up_proj", "down_proj"));
        if (c.shared_gate) {
          LMKIT_ASSIGN_OR_RETURN(L.shared_gate, lin(mp + "shared_expert_gate", 1, H, false));
        }
      }
    }
    model.layers_.push_back(std::move(L));
  }
  if (parts.head) {
    LMKIT_ASSIGN_OR_RETURN(model.final_norm_, norm(pre + "norm.weight", H));
    if (c.tie_embeddings) {
      ld.used.insert(head_name + ".weight");  // transformers ignores a stored head when the embeddings are tied
      model.head_.name = head_name;
    } else {
      LMKIT_ASSIGN_OR_RETURN(model.head_, lin(head_name, c.vocab, H, false));
    }
    model.head_.Pack();
  }
  // The GEMMs read weights as panels (linear.h): packed once, after everything above that reads rows.
  for (const auto& [l, source] : model.Linears()) const_cast<Linear*>(l)->Pack();
  // deepseek_v3's multi-token-prediction layers follow the decoder's (model.layers.61. in DeepSeek-V3); transformers
  // does not load them either.
  std::vector<std::string> mtp;
  for (uint32_t i = 0; i < c.mtp_layers; ++i) mtp.push_back(fmt::format("{}layers.{}.", pre, c.layers + i));
  for (const auto& [name, ft] : ld.index) {
    if (!whole) break;  // a part's tensors are checked; the others are not read
    if (ld.used.count(name) || name.ends_with("rotary_emb.inv_freq")) continue;
    if (std::any_of(mtp.begin(), mtp.end(), [&](const std::string& m) { return name.rfind(m, 0) == 0; })) continue;
    if (c.model_type == "gemma3" &&
        (name.find("vision_tower.") != std::string::npos || name.find("multi_modal_projector.") != std::string::npos))
      continue;
    return Status::InvalidInput(ft.first->path(), "tensor '" + name +
                                                      "' is not part of the model config.json describes "
                                                      "(config/weights mismatch)");
  }
  LMKIT_ASSIGN_OR_RETURN(model.rope_, RopeSchedule::Make(c.rope, c.rope_head_dim(), c.max_positions, config_path));
  LMKIT_ASSIGN_OR_RETURN(model.rope_local_,
                         RopeSchedule::Make(c.rope_local, c.rope_head_dim(), c.max_positions, config_path));
  return model;
}

std::vector<std::pair<const Linear*, size_t>> LlamaModel::Linears() const {
  std::vector<std::pair<const Linear*, size_t>> out;
  for (const Layer& L : layers_) AddLinears(L, out);
  return out;
}

void LlamaModel::AddLinears(const Layer& L, std::vector<std::pair<const Linear*, size_t>>& out) {
  auto add = [&](const Linear& l, size_t source) { out.emplace_back(&l, source); };
  auto add_mlp = [&](const Mlp& m, size_t source) {
    add(m.gate, source);
    if (!m.up.name.empty()) add(m.up, source);
    add(m.down, out.size());
  };
  {
    const size_t a = out.size();
    if (!L.kv_a.name.empty()) {  // MLA
      if (!L.q_a.name.empty()) add(L.q_a, a);
      add(L.q, L.q_a.name.empty() ? a : out.size());
      add(L.kv_a, a);
      add(L.kv_b, out.size());
    } else {
      add(L.q, a);
    }
    if (!L.k.name.empty()) {
      add(L.k, a);
      add(L.v, a);
    }
    add(L.o, out.size());
    if (!L.moe) {
      add_mlp(L.mlp, out.size());
      return;
    }
    const size_t r = out.size();
    add(L.router, r);
    for (const Mlp& e : L.experts) add_mlp(e, out.size());
    if (!L.shared.gate.name.empty()) add_mlp(L.shared, r);
    if (!L.shared_gate.name.empty()) add(L.shared_gate, r);
  }
}

std::vector<std::string> LlamaModel::LinearNames() const {
  std::vector<std::string> out;
  for (const auto& [l, source] : Linears()) out.push_back(l->name);
  return out;
}

std::vector<size_t> LlamaModel::LinearInputSource() const {
  std::vector<size_t> out;
  for (const auto& [l, source] : Linears()) out.push_back(source);
  return out;
}

namespace {

// y = x / rms(x) * w (w already holds gemma's 1 + w); y may alias x.
void RmsNorm(const float* x, const float* w, uint32_t n, double eps, float* y) {
  double ss = 0;
  for (uint32_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float r = static_cast<float>(1.0 / std::sqrt(ss / n + eps));
  for (uint32_t i = 0; i < n; ++i) y[i] = w[i] * (x[i] * r);
}

void RmsNormRows(const float* x, const std::vector<float>& w, uint32_t rows, double eps, float* y) {
  const uint32_t n = static_cast<uint32_t>(w.size());
  for (uint32_t t = 0; t < rows; ++t) RmsNorm(x + size_t{t} * n, w.data(), n, eps, y + size_t{t} * n);
}

float Act(Activation a, float g) {
  switch (a) {
    case Activation::kSilu:
      return g / (1.0f + Exp(-g));
    case Activation::kGeluTanh: {
      const float k = 0.7978845608028654f;  // sqrt(2 / pi)
      return 0.5f * g * (1.0f + std::tanh(k * (g + 0.044715f * g * g * g)));
    }
    case Activation::kGelu:
      return 0.5f * g * (1.0f + std::erf(g * 0.7071067811865476f));
  }
  return g;
}

}  // namespace

// cos/sin [n][rot_dim / 2] of positions p0 ... p0 + n - 1, times the rope's attention factor (as transformers scales
// them).
struct detail::RopeTable {
  uint32_t half = 0;
  std::vector<float> cos, sin;
};

namespace {

using detail::RopeTable;

RopeTable MakeTable(const RopeSchedule& s, uint32_t p0, uint32_t n) {
  const RopeFreqs f = s.At(uint64_t{p0} + n);
  RopeTable t;
  t.half = f.rot_dim / 2;
  t.cos.resize(size_t{n} * t.half);
  t.sin.resize(t.cos.size());
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j = 0; j < t.half; ++j) {
      const double a = static_cast<double>(p0 + i) * f.inv_freq[j];
      t.cos[size_t{i} * t.half + j] = static_cast<float>(std::cos(a) * f.attention_factor);
      t.sin[size_t{i} * t.half + j] = static_cast<float>(std::sin(a) * f.attention_factor);
    }
  return t;
}

}  // namespace

Status LlamaModel::RunMlp(const Mlp& m, const float* x, uint64_t rows, float* y, ThreadPool* pool,
                          ActivationObserver* observer, size_t first_linear, bool observe_input) const {
  const uint32_t H = config_.hidden;
  const bool fused = m.up.name.empty();
  const uint32_t I = fused ? m.gate.out / 2 : m.gate.out;
  std::vector<float> g(rows * (fused ? 2 * I : I)), u(fused ? 0 : rows * I), a(rows * I);
  size_t li = first_linear;
  if (observer && observe_input) {
    LMKIT_RETURN_IF_ERROR(observer->Observe(li, x, rows, H));
    if (!fused) LMKIT_RETURN_IF_ERROR(observer->Observe(li + 1, x, rows, H));
  }
  li += fused ? 1 : 2;
  m.gate.Apply(x, rows, g.data(), pool);
  if (!fused) m.up.Apply(x, rows, u.data(), pool);
  for (uint64_t t = 0; t < rows; ++t) {
    // phi3's gate_up_proj: the first half of each row is the gate, the second the up projection.
    const float* gr = fused ? &g[t * 2 * I] : &g[t * I];
    const float* ur = fused ? gr + I : &u[t * I];
    if (config_.act == Activation::kSilu) {
      SiluMul(gr, ur, &a[t * I], I);
    } else {
      for (uint32_t i = 0; i < I; ++i) a[t * I + i] = Act(config_.act, gr[i]) * ur[i];
    }
  }
  if (observer) LMKIT_RETURN_IF_ERROR(observer->Observe(li, a.data(), rows, I));
  m.down.Apply(a.data(), rows, y, pool);
  return Status::Ok();
}

Status LlamaModel::Embed(std::span<const uint32_t> tokens, float* x, uint32_t p0) const {
  const LlamaConfig& c = config_;
  if (!has_embeddings_) return Status::InvalidArgument("the embeddings are not loaded");
  const uint32_t H = c.hidden;
  const Linear& embed = c.tie_embeddings ? head_ : embed_;
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] >= c.vocab)
      return Status::InvalidInput(
          "", fmt::format("token id {} at position {} is >= vocab_size {}", tokens[t], p0 + t, c.vocab));
    float* xt = x + t * H;
    embed.Row(tokens[t], xt);
    if (c.scale_embeddings)
      for (uint32_t i = 0; i < H; ++i) xt[i] *= embed_scale_;
  }
  return Status::Ok();
}

Status LlamaModel::ForwardLayer(uint32_t layer, float* x, uint32_t n, KvCache& cache, ThreadPool* pool,
                                ActivationObserver* observer) const {
  if (layer < first_layer_ || layer - first_layer_ >= layers_.size())
    return Status::InvalidArgument(fmt::format("decoder layer {} is not loaded", layer));
  if (static_cast<uint64_t>(cache.length_) + n > cache.capacity_)
    return Status::InvalidInput(
        "", fmt::format("sequence of {} tokens exceeds the KV cache capacity {}", cache.length_ + n, cache.capacity_));
  if (n == 0) return Status::Ok();
  const size_t slot = layer - first_layer_;
  std::vector<std::pair<const Linear*, size_t>> before;
  for (size_t i = 0; i < slot; ++i) AddLinears(layers_[i], before);
  const bool local = config_.local_rope[layer];
  const RopeTable table = MakeTable(local ? rope_local_ : rope_, cache.length_, n);
  return RunLayer(slot, x, n, cache.length_, table, table, cache, pool, observer, before.size());
}

Status LlamaModel::Forward(std::span<const uint32_t> tokens, KvCache& cache, ThreadPool* pool, float* logits,
                           bool all_logits, ActivationObserver* observer) const {
  const LlamaConfig& c = config_;
  if (!has_embeddings_ || !has_head_ || layers_.size() != c.layers)
    return Status::InvalidArgument("Forward needs the whole model loaded");
  const uint32_t n = static_cast<uint32_t>(tokens.size());
  if (n == 0) return Status::Ok();
  if (static_cast<uint64_t>(cache.length_) + n > cache.capacity_)
    return Status::InvalidInput(
        "", fmt::format("sequence of {} tokens exceeds the KV cache capacity {}", cache.length_ + n, cache.capacity_));
  const uint32_t H = c.hidden;
  const uint32_t p0 = cache.length_;
  std::vector<float> x(static_cast<size_t>(n) * H), xn(x.size());
  LMKIT_RETURN_IF_ERROR(Embed(tokens, x.data(), p0));
  const RopeTable global = MakeTable(rope_, p0, n);
  RopeTable local;
  if (std::find(c.local_rope.begin(), c.local_rope.end(), true) != c.local_rope.end())
    local = MakeTable(rope_local_, p0, n);
  std::vector<std::pair<const Linear*, size_t>> linears;
  for (size_t slot = 0; slot < layers_.size(); ++slot) {
    const size_t li = linears.size();  // index into LinearNames() of the layer's first Linear
    AddLinears(layers_[slot], linears);
    LMKIT_RETURN_IF_ERROR(RunLayer(slot, x.data(), n, p0, global, local, cache, pool, observer, li));
  }
  cache.length_ += n;
  const uint32_t first = all_logits ? 0 : n - 1;
  RmsNormRows(&x[size_t{first} * H], final_norm_, n - first, c.rms_eps, xn.data());
  head_.Apply(xn.data(), n - first, logits, pool);
  if (c.final_softcap > 0) {
    const float cap = static_cast<float>(c.final_softcap);
    for (size_t i = 0; i < size_t{n - first} * c.vocab; ++i) logits[i] = cap * std::tanh(logits[i] / cap);
  }
  return Status::Ok();
}

Status LlamaModel::RunLayer(size_t slot, float* x, uint32_t n, uint32_t p0, const RopeTable& global,
                            const RopeTable& local, KvCache& cache, ThreadPool* pool, ActivationObserver* observer,
                            size_t li) const {
  const LlamaConfig& c = config_;
  const uint32_t l = first_layer_ + static_cast<uint32_t>(slot);
  const uint32_t H = c.hidden, hd = c.head_dim, qd = c.heads * hd, kvd = c.kv_heads * hd;
  const uint32_t vd = c.kv_heads * c.v_head_dim, od = c.heads * c.v_head_dim;
  const size_t xs = static_cast<size_t>(n) * H;
  std::vector<float> xn(xs), tmp(xs);
  std::vector<float> q(static_cast<size_t>(n) * qd), att(static_cast<size_t>(n) * od), k(static_cast<size_t>(n) * kvd),
      v(static_cast<size_t>(n) * vd);
  std::vector<float> qkv(c.fused_qkv ? static_cast<size_t>(n) * (qd + 2 * kvd) : 0);
  auto observe = [&](const float* in, uint64_t rows, uint32_t cols, int count) -> Status {
    for (int r = 0; r < count; ++r, ++li)
      if (observer) LMKIT_RETURN_IF_ERROR(observer->Observe(li, in, rows, cols));
    return Status::Ok();
  };
  const Layer& L = layers_[slot];
  const float* ain = x;
  if (!L.pre_attn.empty()) {
    RmsNormRows(x, L.pre_attn, n, c.rms_eps, xn.data());
    ain = xn.data();
  }
  const RopeTable& rt = c.local_rope[l] ? local : global;
  if (c.mla) {
    LMKIT_RETURN_IF_ERROR(
        MlaProject(L, ain, n, rt.half, rt.cos.data(), rt.sin.data(), q.data(), k.data(), v.data(), pool, observer, li));
  } else if (c.fused_qkv) {
    LMKIT_RETURN_IF_ERROR(observe(ain, n, H, 1));
    L.q.Apply(ain, n, qkv.data(), pool);
    for (uint32_t t = 0; t < n; ++t) {
      const float* r = &qkv[size_t{t} * (qd + 2 * kvd)];
      std::copy_n(r, qd, &q[size_t{t} * qd]);
      std::copy_n(r + qd, kvd, &k[size_t{t} * kvd]);
      std::copy_n(r + qd + kvd, kvd, &v[size_t{t} * kvd]);
    }
  } else {
    LMKIT_RETURN_IF_ERROR(observe(ain, n, H, 3));
    L.q.Apply(ain, n, q.data(), pool);
    L.k.Apply(ain, n, k.data(), pool);
    L.v.Apply(ain, n, v.data(), pool);
  }
  if (c.qk_norm == io::QkNorm::kPerHead) {
    RmsNormRows(q.data(), L.q_norm, n * c.heads, c.rms_eps, q.data());
    RmsNormRows(k.data(), L.k_norm, n * c.kv_heads, c.rms_eps, k.data());
  } else if (c.qk_norm == io::QkNorm::kFullWidth) {
    RmsNormRows(q.data(), L.q_norm, n, c.rms_eps, q.data());
    RmsNormRows(k.data(), L.k_norm, n, c.rms_eps, k.data());
  }
  float* kc = cache.k_.data() + slot * cache.capacity_ * kvd;
  float* vc = cache.v_.data() + slot * cache.capacity_ * vd;
  for (uint32_t t = 0; t < n; ++t) {
    const float* cs = &rt.cos[size_t{t} * rt.half];
    const float* sn = &rt.sin[size_t{t} * rt.half];
    if (!c.mla) {  // MlaProject rotated its own
      for (uint32_t h = 0; h < c.heads; ++h) ApplyRope(&q[size_t{t} * qd + h * hd], 2 * rt.half, cs, sn);
      for (uint32_t h = 0; h < c.kv_heads; ++h) ApplyRope(&k[size_t{t} * kvd + h * hd], 2 * rt.half, cs, sn);
    }
    std::copy_n(&k[size_t{t} * kvd], kvd, kc + size_t{p0 + t} * kvd);
    std::copy_n(&v[size_t{t} * vd], vd, vc + size_t{p0 + t} * vd);
  }
  Attention({q.data(), kc, vc, att.data(), n, p0, c.heads, c.kv_heads, hd, c.v_head_dim, c.window[l],
             static_cast<float>(c.attn_scale), static_cast<float>(c.attn_softcap)},
            pool);
  LMKIT_RETURN_IF_ERROR(observe(att.data(), n, od, 1));
  L.o.Apply(att.data(), n, tmp.data(), pool);
  if (!L.post_attn.empty()) RmsNormRows(tmp.data(), L.post_attn, n, c.rms_eps, tmp.data());
  for (size_t i = 0; i < xs; ++i) x[i] += tmp[i];

  const float* min = x;
  if (!L.pre_mlp.empty()) {
    RmsNormRows(x, L.pre_mlp, n, c.rms_eps, xn.data());
    min = xn.data();
  }
  if (!L.moe) {
    LMKIT_RETURN_IF_ERROR(RunMlp(L.mlp, min, n, tmp.data(), pool, observer, li, true));
    li += L.mlp.up.name.empty() ? 2 : 3;
  } else {
    LMKIT_RETURN_IF_ERROR(MoeBlock(L, min, n, tmp.data(), pool, observer, li));
  }
  if (!L.post_mlp.empty()) RmsNormRows(tmp.data(), L.post_mlp, n, c.rms_eps, tmp.data());
  for (size_t i = 0; i < xs; ++i) x[i] += tmp[i];
  return Status::Ok();
}

// DeepseekV2/V3Attention: the no-position part of each head's query and key (qk_nope dims) is followed by the rotary
// part (qk_rope dims); the rotary key is one vector shared by every head, rotated once.
Status LlamaModel::MlaProject(const Layer& L, const float* x, uint32_t n, uint32_t half, const float* rope_cos,
                              const float* rope_sin, float* q, float* k, float* v, ThreadPool* pool,
                              ActivationObserver* observer, size_t& li) const {
  const LlamaConfig& c = config_;
  const uint32_t H = c.hidden, hd = c.head_dim, nope = c.qk_nope, rope = c.qk_rope, vhd = c.v_head_dim;
  const uint32_t R = c.kv_lora_rank, heads = c.heads;
  constexpr double kInnerEps = 1e-6;  // DeepseekV2RMSNorm's default: q_a_layernorm / kv_a_layernorm
  auto observe = [&](const float* in, uint32_t cols) -> Status {
    if (observer) LMKIT_RETURN_IF_ERROR(observer->Observe(li, in, n, cols));
    ++li;
    return Status::Ok();
  };
  if (!L.q_a.name.empty()) {
    std::vector<float> qa(size_t{n} * c.q_lora_rank);
    LMKIT_RETURN_IF_ERROR(observe(x, H));
    L.q_a.Apply(x, n, qa.data(), pool);
    RmsNormRows(qa.data(), L.q_a_norm, n, kInnerEps, qa.data());
    LMKIT_RETURN_IF_ERROR(observe(qa.data(), c.q_lora_rank));
    L.q.Apply(qa.data(), n, q, pool);
  } else {
    LMKIT_RETURN_IF_ERROR(observe(x, H));
    L.q.Apply(x, n, q, pool);
  }
  std::vector<float> ckv(size_t{n} * (R + rope)), latent(size_t{n} * R), kv(size_t{n} * heads * (nope + vhd));
  LMKIT_RETURN_IF_ERROR(observe(x, H));
  L.kv_a.Apply(x, n, ckv.data(), pool);
  for (uint32_t t = 0; t < n; ++t)
    RmsNorm(&ckv[size_t{t} * (R + rope)], L.kv_a_norm.data(), R, kInnerEps, &latent[size_t{t} * R]);
  LMKIT_RETURN_IF_ERROR(observe(latent.data(), R));
  L.kv_b.Apply(latent.data(), n, kv.data(), pool);
  for (uint32_t t = 0; t < n; ++t) {
    const float* cs = rope_cos + size_t{t} * half;
    const float* sn = rope_sin + size_t{t} * half;
    float* kr = &ckv[size_t{t} * (R + rope) + R];  // the shared rotary key
    auto rotate = [&](float* r) {
      if (c.rope_interleave) {
        ApplyRopeInterleaved(r, 2 * half, cs, sn);
      } else {
        ApplyRope(r, 2 * half, cs, sn);
      }
    };
    rotate(kr);
    for (uint32_t h = 0; h < heads; ++h) {
      rotate(q + (size_t{t} * heads + h) * hd + nope);
      const float* src = &kv[(size_t{t} * heads + h) * (nope + vhd)];
      float* kh = k + (size_t{t} * heads + h) * hd;
      std::copy_n(src, nope, kh);
      std::copy_n(kr, rope, kh + nope);
      std::copy_n(src + nope, vhd, v + (size_t{t} * heads + h) * vhd);
    }
  }
  return Status::Ok();
}

// Router scores (fp32): softmax over the experts, or (deepseek_v3) each logit's sigmoid plus e_score_correction_bias
// for the choice only; DeepSeek's group limit keeps the experts of the topk_group best groups (V2 masks the others to
// 0, V3 to -inf); top-k by that choice (ties to the lower index); weights are the scores (V2: the masked ones),
// renormalised when norm_topk_prob, times routed_scaling_factor. Each expert runs on the rows routed to it and its
// output, times the routing weight, is added in expert order, then the shared expert (times
// sigmoid(shared_expert_gate) for qwen2_moe).
Status LlamaModel::MoeBlock(const Layer& L, const float* x, uint32_t n, float* y, ThreadPool* pool,
                            ActivationObserver* observer, size_t& li) const {
  const LlamaConfig& c = config_;
  const uint32_t H = c.hidden, E = c.experts, K = c.top_k;
  if (observer) LMKIT_RETURN_IF_ERROR(observer->Observe(li, x, n, H));
  ++li;
  std::vector<float> rl(size_t{n} * E);
  L.router.Apply(x, n, rl.data(), pool);
  std::vector<std::vector<std::pair<uint32_t, float>>> routed(E);  // per expert: (row, weight)
  std::vector<uint32_t> order(E), gorder(c.n_group);
  std::vector<float> prob(E), choice(E), gscore(c.n_group), pair(2);
  const bool sigmoid = c.scoring == RouterScoring::kSigmoid;
  for (uint32_t t = 0; t < n; ++t) {
    const float* r = &rl[size_t{t} * E];
    if (sigmoid) {
      for (uint32_t e = 0; e < E; ++e) prob[e] = 1.0f / (1.0f + std::exp(-r[e]));
    } else {
      const float mx = *std::max_element(r, r + E);
      float sum = 0;
      for (uint32_t e = 0; e < E; ++e) sum += prob[e] = std::exp(r[e] - mx);
      for (uint32_t e = 0; e < E; ++e) prob[e] /= sum;
    }
    for (uint32_t e = 0; e < E; ++e) choice[e] = L.router_bias.empty() ? prob[e] : prob[e] + L.router_bias[e];
    if (c.group_limit != GroupLimit::kNone) {
      const uint32_t G = c.n_group, gs = E / G;
      for (uint32_t g = 0; g < G; ++g) {
        const float* cg = &choice[size_t{g} * gs];
        if (c.group_limit == GroupLimit::kMax) {
          gscore[g] = *std::max_element(cg, cg + gs);
        } else {  // the sum of the group's two best
          std::partial_sort_copy(cg, cg + gs, pair.begin(), pair.end(), std::greater<float>());
          gscore[g] = pair[0] + pair[1];
        }
        gorder[g] = g;
      }
      std::stable_sort(gorder.begin(), gorder.end(), [&](uint32_t a, uint32_t b) { return gscore[a] > gscore[b]; });
      const float masked = c.group_limit == GroupLimit::kMax ? 0.0f : -INFINITY;
      for (uint32_t j = c.topk_group; j < G; ++j) std::fill_n(&choice[size_t{gorder[j]} * gs], gs, masked);
    }
    for (uint32_t e = 0; e < E; ++e) order[e] = e;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return choice[a] > choice[b]; });
    // The weight of a chosen expert: its score (V3: without the correction bias; V2: after the group mask).
    auto weight = [&](uint32_t e) { return sigmoid ? prob[e] : choice[e]; };
    float top = 0;
    for (uint32_t j = 0; j < K; ++j) top += weight(order[j]);
    const float scale = static_cast<float>(c.routed_scale);
    for (uint32_t j = 0; j < K; ++j) {
      float w = c.norm_topk_prob ? weight(order[j]) / top : weight(order[j]);
      if (c.routed_scale != 1.0) w *= scale;
      routed[order[j]].emplace_back(t, w);
    }
  }
  std::fill_n(y, size_t{n} * H, 0.0f);
  const bool all = observer && observer->RouteAllExperts();
  std::vector<float> xe, ye;
  for (uint32_t e = 0; e < E; ++e) {
    const Mlp& m = L.experts[e];
    const size_t first = li;
    li += 3;
    const auto& rows = routed[e];
    if (rows.empty() && !all) continue;
    const uint32_t R = all ? n : static_cast<uint32_t>(rows.size());
    xe.resize(size_t{R} * H);
    ye.resize(size_t{R} * H);
    for (uint32_t i = 0; i < R; ++i) std::copy_n(x + size_t{all ? i : rows[i].first} * H, H, &xe[size_t{i} * H]);
    LMKIT_RETURN_IF_ERROR(RunMlp(m, xe.data(), R, ye.data(), pool, observer, first, true));
    for (size_t i = 0; i < rows.size(); ++i) {
      const uint32_t t = rows[i].first;
      const float w = rows[i].second;
      const float* src = &ye[(all ? t : i) * size_t{H}];
      for (uint32_t d = 0; d < H; ++d) y[size_t{t} * H + d] += src[d] * w;
    }
  }
  if (!L.shared.gate.name.empty()) {
    std::vector<float> sy(size_t{n} * H);
    LMKIT_RETURN_IF_ERROR(RunMlp(L.shared, x, n, sy.data(), pool, observer, li, true));
    li += 3;
    std::vector<float> sg(n, 0.0f);
    if (!L.shared_gate.name.empty()) {
      if (observer) LMKIT_RETURN_IF_ERROR(observer->Observe(li, x, n, H));
      ++li;
      L.shared_gate.Apply(x, n, sg.data(), pool);
    }
    for (uint32_t t = 0; t < n; ++t) {
      const float s = L.shared_gate.name.empty() ? 1.0f : 1.0f / (1.0f + std::exp(-sg[t]));
      for (uint32_t d = 0; d < H; ++d) y[size_t{t} * H + d] += s * sy[size_t{t} * H + d];
    }
  }
  return Status::Ok();
}

}  // namespace lmkit::model
