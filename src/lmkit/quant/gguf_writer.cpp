// The GGUF Q8_0 writer of `lmkit quantize` (checkpoint_writer.h): a Hugging Face Llama-family model directory to one
// GGUF file that llama.cpp loads (architecture "llama"), with the selected Linear weights in Q8_0 and everything else
// in full precision.
//
// What llama.cpp expects, and so what this writes (docs/quant.md, "GGUF Q8_0", has the table): its tensor names
// (blk.N.attn_q.weight, ...), the hyperparameters as llama.* keys, and the rows of q_proj / k_proj in the interleaved
// rotary order of Meta's original checkpoints — Hugging Face's conversion permuted them for rotate_half, and
// convert_hf_to_gguf.py permutes them back (per head: view the rows as [2, head_dim / 2], transpose). Row permutations
// commute with Q8_0 (blocks run along rows), so the rows are quantized as they are and written in the new order.
// Norms and other 1-D tensors are stored as F32 (what ggml's CPU kernels take for them); 2-D tensors that are not
// quantized keep their dtype (F32, F16 or BF16). A selected weight whose rows are not a multiple of 32 long cannot be
// Q8_0 and is kept too; the report lists it. No tokenizer is embedded (tokenizer.ggml.model = "none" with
// llama.vocab_size): llama.cpp then loads the model and evaluates token ids, and the Hugging Face tokenizer files
// stay the way to turn text into ids.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "lmkit/common/atomic_file.h"
#include "lmkit/common/file_reader.h"
#include "lmkit/common/json.h"
#include "lmkit/common/mapped_file.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/io/dtype.h"
#include "lmkit/quant/checkpoint_writer.h"
#include "lmkit/quant/gguf.h"
#include "lmkit/quant/quantize_plan.h"

namespace lmkit::quant::detail {
namespace fs = std::filesystem;
namespace {

using gguf::GgmlType;

// LLAMA_FTYPE_MOSTLY_Q8_0 (general.file_type) and ggml's quantization format version (general.quantization_version).
constexpr uint32_t kFileTypeQ8_0 = 7;
constexpr uint32_t kQuantizationVersion = 2;
// Rows quantized per work item: enough to amortise the hand-out, few enough to balance 2-16 threads on a 64-row q_proj.
constexpr uint64_t kRowsPerItem = 16;
// Input bytes per chunk of a tensor (a multiple of whole rows, at least one head of q/k rows).
constexpr uint64_t kChunkBytes = 8u << 20;

struct LlamaHparams {
  uint32_t vocab = 0, context = 0, embd = 0, layers = 0, ffn = 0, heads = 0, heads_kv = 0, head_dim = 0;
  float rms_eps = 1e-6f, rope_theta = 10000.0f;
  std::optional<float> linear_rope_factor;
  bool head_dim_explicit = false;
};

Result<uint32_t> PositiveU32(const Json& cfg, const char* key, const std::string& path, std::optional<uint32_t> dflt) {
  if (!cfg.contains(key) || cfg[key].is_null()) {
    if (dflt) return *dflt;
    return Status::InvalidInput(path, fmt::format("no \"{}\" (needed for the GGUF header)", key));
  }
  const Json& v = cfg[key];
  if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > int64_t{UINT32_MAX})
    return Status::InvalidInput(path, fmt::format("\"{}\" is not a positive 32-bit integer", key));
  return static_cast<uint32_t>(v.get<int64_t>());
}

Result<float> PositiveF32(const Json& cfg, const char* key, const std::string& path, float dflt) {
  if (!cfg.contains(key) || cfg[key].is_null()) return dflt;
  const Json& v = cfg[key];
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(static_cast<float>(v.get<double>())))
    return Status::InvalidInput(path, fmt::format("\"{}\" is not a positive number", key));
  return static_cast<float>(v.get<double>());
}

Result<LlamaHparams> ReadLlamaConfig(const Json& cfg, const std::string& path) {
  const bool typed = cfg.contains("model_type") && cfg["model_type"].is_string();
  const std::string type = typed ? cfg["model_type"].get<std::string>() : "";
  if (type != "llama" && type != "mistral")
    return Status::Unsupported(path, Field("format") +
                                         " gguf-q8_0 writes Llama-architecture models (model_type llama or mistral), "
                                         "not model_type '" +
                                         type + "'");
  LlamaHparams h;
  LMKIT_ASSIGN_OR_RETURN(h.vocab, PositiveU32(cfg, "vocab_size", path, std::nullopt));
  LMKIT_ASSIGN_OR_RETURN(h.context, PositiveU32(cfg, "max_position_embeddings", path, std::nullopt));
  LMKIT_ASSIGN_OR_RETURN(h.embd, PositiveU32(cfg, "hidden_size", path, std::nullopt));
  LMKIT_ASSIGN_OR_RETURN(h.layers, PositiveU32(cfg, "num_hidden_layers", path, std::nullopt));
  LMKIT_ASSIGN_OR_RETURN(h.ffn, PositiveU32(cfg, "intermediate_size", path, std::nullopt));
  LMKIT_ASSIGN_OR_RETURN(h.heads, PositiveU32(cfg, "num_attention_heads", path, std::nullopt));
  LMKIT_ASSIGN_OR_RETURN(h.heads_kv, PositiveU32(cfg, "num_key_value_heads", path, h.heads));
  h.head_dim_explicit = cfg.contains("head_dim") && !cfg["head_dim"].is_null();
  if (!h.head_dim_explicit && h.embd % h.heads != 0)
    return Status::InvalidInput(path, "hidden_size is not a multiple of num_attention_heads (and no head_dim)");
  LMKIT_ASSIGN_OR_RETURN(h.head_dim, PositiveU32(cfg, "head_dim", path, h.embd / h.heads));
  if (h.head_dim % 2 != 0) return Status::InvalidInput(path, "the head dimension is odd (rotary pairs need it even)");
  if (h.heads % h.heads_kv != 0)
    return Status::InvalidInput(path, "num_attention_heads is not a multiple of num_key_value_heads");
  LMKIT_ASSIGN_OR_RETURN(h.rms_eps, PositiveF32(cfg, "rms_norm_eps", path, 1e-6f));
  LMKIT_ASSIGN_OR_RETURN(h.rope_theta, PositiveF32(cfg, "rope_theta", path, 10000.0f));
  if (cfg.contains("rope_scaling") && !cfg["rope_scaling"].is_null()) {
    const Json& rs = cfg["rope_scaling"];
    std::string kind;
    if (rs.is_object()) {
      for (const char* k : {"rope_type", "type"})
        if (rs.contains(k) && rs[k].is_string()) kind = rs[k].get<std::string>();
    }
    if (kind != "linear")
      return Status::Unsupported(path, "rope_scaling '" + (kind.empty() ? rs.dump() : kind) + "' is not supported by " +
                                           Field("format") + " gguf-q8_0 (only linear)");
    LMKIT_ASSIGN_OR_RETURN(float f, PositiveF32(rs, "factor", path, 1.0f));
    h.linear_rope_factor = f;
  }
  return h;
}

// One output tensor: where it comes from and how it is stored.
struct Entry {
  size_t shard = 0, index = 0;  // the input tensor
  std::string name;             // GGUF name
  GgmlType type = GgmlType::kF32;
  std::vector<uint64_t> ne;    // ggml order (reversed shape)
  uint32_t permute_heads = 0;  // > 0: q/k rows to put back in rotary-pair order, with this many heads
  bool quantized = false;
};

// The GGUF name of a Hugging Face Llama tensor; "" for tensors llama.cpp does not take (rotary caches).
Result<std::string> LlamaName(const std::string& hf, const LlamaHparams& h, uint32_t* permute_heads,
                              const std::string& path) {
  *permute_heads = 0;
  std::string n = hf;
  if (n.rfind("model.", 0) == 0) n = n.substr(6);
  if (n == "embed_tokens.weight") return std::string("token_embd.weight");
  if (n == "norm.weight") return std::string("output_norm.weight");
  if (hf == "lm_head.weight") return std::string("output.weight");
  static const std::map<std::string, std::string> kLayer = {
      {"self_attn.q_proj", "attn_q"},      {"self_attn.k_proj", "attn_k"},   {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"}, {"mlp.gate_proj", "ffn_gate"},    {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},       {"input_layernorm", "attn_norm"}, {"post_attention_layernorm", "ffn_norm"}};
  if (n.rfind("layers.", 0) == 0) {
    const size_t dot = n.find('.', 7);
    const std::string num = n.substr(7, dot == std::string::npos ? std::string::npos : dot - 7);
    auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
    const bool digits = !num.empty() && num.size() <= 6 && std::all_of(num.begin(), num.end(), is_digit);
    if (digits && dot != std::string::npos) {
      const uint32_t layer = static_cast<uint32_t>(std::stoul(num));
      std::string rest = n.substr(dot + 1);
      if (rest == "self_attn.rotary_emb.inv_freq") return std::string();
      std::string suffix;
      for (const char* s : {".weight", ".bias"})
        if (EndsWith(rest, s)) suffix = s;
      const std::string module = rest.substr(0, rest.size() - suffix.size());
      auto it = kLayer.find(module);
      // Biases only where llama.cpp's llama graph has them (the attention projections).
      const bool ok =
          it != kLayer.end() && !suffix.empty() && (suffix == ".weight" || module.rfind("self_attn.", 0) == 0);
      if (ok && layer >= h.layers)
        return Status::InvalidInput(
            path, fmt::format("tensor '{}': layer {} but num_hidden_layers is {}", hf, layer, h.layers));
      if (ok) {
        if (module == "self_attn.q_proj") *permute_heads = h.heads;
        if (module == "self_attn.k_proj") *permute_heads = h.heads_kv;
        return fmt::format("blk.{}.{}{}", layer, it->second, suffix);
      }
    }
  }
  return Status::Unsupported(path, "tensor '" + hf + "' has no place in llama.cpp's Llama layout");
}

// Output row r of a q/k projection with `heads` heads of `rows / heads` rows: the input row it comes from. Within a
// head, rows [0, d/2) hold the first element of each rotary pair and [d/2, d) the second; llama.cpp wants them
// interleaved (pair i at rows 2i, 2i + 1).
uint64_t SourceRow(uint64_t r, uint64_t rows, uint32_t heads) {
  if (heads == 0) return r;
  const uint64_t d = rows / heads, head = r / d, k = r % d;
  return head * d + (k % 2) * (d / 2) + k / 2;
}

// A byte buffer that grows without zero-filling or copying (std::vector::resize did both, on every growth: 15% of the
// run on a 200M-parameter model).
class ScratchBytes {
 public:
  uint8_t* Get(size_t n) {
    if (n > capacity_) {
      data_.reset();
      data_.reset(new uint8_t[n]);
      capacity_ = n;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_ = 0;
};

// Per work item of a Q8_0 tensor.
struct ItemResult {
  ErrorStats stats;
  float scale_min = 0, scale_max = 0;
  bool non_finite = false, scale_overflow = false;
};

class GgufWriter final : public CheckpointWriter {
 public:
  explicit GgufWriter(const QuantizeRequest& o) : o_(o) {}

  Status CheckRequest() override {
    if (o_.scheme != QuantScheme::kW8A16 || !o_.calibration.empty())
      return Status::InvalidArgument(Field("format") + " gguf-q8_0 stores weights only: " + Field("scheme") +
                                     " w8a16, no " + Field("calibration"));
    if (o_.granularity.kind != Granularity::Kind::kGroup || o_.granularity.group_size != gguf::kQ8_0Block)
      return Status::InvalidArgument(
          Field("format") + " gguf-q8_0 quantizes in Q8_0 blocks of 32 weights along each row: " +
          Field("granularity") + " group:32 (the default with this format), not " + GranularityName(o_.granularity));
    std::error_code ec;
    if (!fs::is_directory(o_.input, ec)) {
      if (!fs::exists(o_.input, ec)) return Status::NotFound(o_.input, "no such file or directory");
      return Status::InvalidArgument(Field("format") +
                                     " gguf-q8_0 needs a model directory (its config.json gives the architecture and "
                                     "the hyperparameters of the GGUF header), not a .safetensors file");
    }
    const std::string cpath = (fs::path(o_.input) / "config.json").string();
    if (!fs::exists(cpath, ec)) return Status::NotFound(cpath, "no config.json in the model directory");
    return Status::Ok();
  }

  bool SingleOutputFile() const override { return true; }

  Status Prepare(const Plan& plan, const Matchers& matchers, QuantizeResult* rep) override {
    plan_ = &plan;
    // The config text is the checkpoint opener's (io/checkpoint.h: a regular file, size-capped).
    LMKIT_ASSIGN_OR_RETURN(Json cfg, ParseJson(plan.config_text, plan.config_path));
    if (!cfg.is_object()) return Status::InvalidInput(plan.config_path, "config.json is not a JSON object");
    LMKIT_ASSIGN_OR_RETURN(hp_, ReadLlamaConfig(cfg, plan.config_path));
    // Decide every tensor's name and type before writing anything: a tensor llama.cpp cannot place fails the run here.
    std::set<std::string> names;
    entry_of_.resize(plan.shards.size());
    for (size_t si = 0; si < plan.shards.size(); ++si) {
      const Shard& s = plan.shards[si];
      const auto& tensors = s.file.tensors();
      entry_of_[si].assign(tensors.size(), kNoEntry);
      for (size_t ti = 0; ti < tensors.size(); ++ti) {
        const io::TensorInfo& t = tensors[ti];
        Entry e;
        e.shard = si;
        e.index = ti;
        LMKIT_ASSIGN_OR_RETURN(e.name, LlamaName(t.name, hp_, &e.permute_heads, s.in_path));
        if (e.name.empty()) continue;
        if (!names.insert(e.name).second)
          return Status::InvalidInput(s.in_path, "tensor '" + t.name + "' maps to GGUF name '" + e.name +
                                                     "', which another tensor already has");
        if (t.dtype != io::DType::kF32 && t.dtype != io::DType::kF16 && t.dtype != io::DType::kBF16)
          return Status::Unsupported(s.in_path, fmt::format("tensor '{}' is {}; GGUF output takes F32, F16 and BF16",
                                                            t.name, io::DTypeName(t.dtype)));
        if (t.shape.empty() || t.shape.size() > 2)
          return Status::InvalidInput(s.in_path, fmt::format("tensor '{}' has {} dimensions; a Llama tensor has 1 or 2",
                                                             t.name, t.shape.size()));
        e.ne.assign(t.shape.rbegin(), t.shape.rend());
        if (e.permute_heads > 0 && t.shape[0] % (2 * uint64_t{e.permute_heads}) != 0)
          return Status::InvalidInput(s.in_path, fmt::format("tensor '{}': {} rows do not split into {} heads of "
                                                             "rotary pairs",
                                                             t.name, t.shape[0], e.permute_heads));
        if (Selected(t, matchers)) {
          if (t.shape[1] % gguf::kQ8_0Block == 0) {
            e.type = GgmlType::kQ8_0;
            e.quantized = true;
          } else {
            rep->kept_unquantized.push_back(t.name);
          }
        }
        if (!e.quantized)
          e.type = t.shape.size() == 1 || t.dtype == io::DType::kF32 ? GgmlType::kF32
                   : t.dtype == io::DType::kF16                      ? GgmlType::kF16
                                                                     : GgmlType::kBF16;
        entry_of_[si][ti] = entries_.size();
        entries_.push_back(std::move(e));
      }
    }
    if (std::none_of(entries_.begin(), entries_.end(), [](const Entry& e) { return e.quantized; }))
      return Status::InvalidInput(o_.input, rep->kept_unquantized.empty()
                                                ? "no Linear weight to quantize (no selected 2-D float *.weight)"
                                                : "no selected weight has rows that are a multiple of 32 long (Q8_0 "
                                                  "blocks)");
    header_.AddString("general.architecture", "llama");
    fs::path in_path = fs::path(o_.input).lexically_normal();
    if (in_path.filename().empty()) in_path = in_path.parent_path();  // "dir/" names the directory "dir"
    header_.AddString("general.name", in_path.filename().string());
    header_.AddU32("general.file_type", kFileTypeQ8_0);
    header_.AddU32("general.quantization_version", kQuantizationVersion);
    header_.AddU32("llama.vocab_size", hp_.vocab);
    header_.AddU32("llama.context_length", hp_.context);
    header_.AddU32("llama.embedding_length", hp_.embd);
    header_.AddU32("llama.block_count", hp_.layers);
    header_.AddU32("llama.feed_forward_length", hp_.ffn);
    header_.AddU32("llama.attention.head_count", hp_.heads);
    header_.AddU32("llama.attention.head_count_kv", hp_.heads_kv);
    header_.AddU32("llama.rope.dimension_count", hp_.head_dim);
    if (hp_.head_dim_explicit) {
      header_.AddU32("llama.attention.key_length", hp_.head_dim);
      header_.AddU32("llama.attention.value_length", hp_.head_dim);
    }
    header_.AddF32("llama.attention.layer_norm_rms_epsilon", hp_.rms_eps);
    header_.AddF32("llama.rope.freq_base", hp_.rope_theta);
    if (hp_.linear_rope_factor) {
      header_.AddString("llama.rope.scaling.type", "linear");
      header_.AddF32("llama.rope.scaling.factor", *hp_.linear_rope_factor);
    }
    header_.AddString("tokenizer.ggml.model", "none");
    for (const Entry& e : entries_) (void)header_.AddTensor(e.name, e.ne, e.type);  // names are at most 30 bytes
    const std::string head = header_.Serialize();
    LMKIT_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(o_.output));
    out_ = std::move(out);
    return out_->Write(head);
  }

  Status WriteTensor(size_t si, size_t ti, const FileReader& in, ThreadPool& pool, TensorOutcome* outcome) override {
    const size_t ei = entry_of_[si][ti];
    if (ei == kNoEntry) {
      outcome->kind = TensorOutcome::Kind::kDropped;
      return Status::Ok();
    }
    const Entry& e = entries_[ei];
    const Shard& s = plan_->shards[e.shard];
    const io::TensorInfo& t = s.file.tensors()[e.index];
    const uint64_t base = s.file.data_offset() + t.begin;
    const size_t esize = io::DTypeSize(t.dtype);
    const uint64_t out_bytes = gguf::TensorBytes(e.type, e.ne);
    AtomicFile& out = *out_;
    if (t.shape.size() == 1) {
      // Norms and biases: small, in one piece; F16/BF16 widened to F32; a q/k bias permutes its elements like rows.
      const uint64_t n = t.shape[0];
      uint8_t* raw = raw_buf_.Get(t.num_bytes());
      LMKIT_RETURN_IF_ERROR(in.ReadAt(base, raw, t.num_bytes()));
      values_.resize(n);
      io::ConvertToF32(t.dtype, raw, values_.data(), n);
      uint8_t* bytes = out_buf_.Get(out_bytes);
      for (uint64_t i = 0; i < n; ++i) std::memcpy(bytes + i * 4, &values_[SourceRow(i, n, e.permute_heads)], 4);
      LMKIT_RETURN_IF_ERROR(out.Write(bytes, out_bytes));
      outcome->kind = TensorOutcome::Kind::kCopied;
    } else {
      const uint64_t rows = t.shape[0], cols = t.shape[1], in_row = cols * esize;
      const uint64_t out_row = rows > 0 ? out_bytes / rows : 0;
      const uint64_t unit = e.permute_heads > 0 ? rows / e.permute_heads : 1;
      const uint64_t chunk = std::max<uint64_t>(1, kChunkBytes / std::max<uint64_t>(in_row, 1) / unit) * unit;
      TensorReport& tr = outcome->report;
      if (e.quantized) {
        tr.name = t.name;
        tr.shape = t.shape;
        tr.dtype = std::string(io::DTypeName(t.dtype));
        tr.scale_min = INFINITY;
        tr.scale_max = -INFINITY;
      }
      scratch_.resize(pool.size());
      std::vector<ItemResult> results;
      for (uint64_t r0 = 0; r0 < rows && in_row > 0; r0 += chunk) {
        const uint64_t n = std::min(chunk, rows - r0);
        uint8_t* raw = raw_buf_.Get(n * in_row);
        LMKIT_RETURN_IF_ERROR(in.ReadAt(base + r0 * in_row, raw, n * in_row));
        // Output row r0 + i comes from input row SourceRow(r0 + i) - r0: a chunk holds whole heads.
        auto source = [&](uint64_t i) { return SourceRow(r0 + i, rows, e.permute_heads) - r0; };
        const uint8_t* bytes = raw;
        if (e.quantized) {
          uint8_t* q = out_buf_.Get(n * out_row);
          const uint64_t items = (n + kRowsPerItem - 1) / kRowsPerItem;
          results.assign(items, ItemResult{});
          pool.ParallelFor(items, [&](size_t item, unsigned worker) {
            std::vector<float>& x = scratch_[worker];
            x.resize(cols);
            ItemResult& res = results[item];
            res.scale_min = INFINITY;
            res.scale_max = -INFINITY;
            for (uint64_t i = item * kRowsPerItem; i < std::min(n, (item + 1) * kRowsPerItem); ++i) {
              io::ConvertToF32(t.dtype, raw + source(i) * in_row, x.data(), cols);
              const gguf::Q8_0Status st =
                  gguf::QuantizeQ8_0(x.data(), cols, q + i * out_row, &res.stats, &res.scale_min, &res.scale_max);
              res.non_finite = st == gguf::Q8_0Status::kNonFinite;
              res.scale_overflow = st == gguf::Q8_0Status::kScaleOverflow;
              if (st != gguf::Q8_0Status::kOk) return;
            }
          });
          for (const ItemResult& res : results) {  // in row order: the same sums for any thread count
            if (res.non_finite)
              return Status::InvalidInput(s.in_path, "tensor '" + t.name + "': NaN or Inf in the weight");
            if (res.scale_overflow)
              return Status::InvalidInput(s.in_path, "tensor '" + t.name +
                                                         "': a weight above 8.3e6 in magnitude "
                                                         "gives a Q8_0 block scale beyond the range of fp16");
            tr.stats.Merge(res.stats);
            tr.scale_min = std::min(tr.scale_min, res.scale_min);
            tr.scale_max = std::max(tr.scale_max, res.scale_max);
          }
          bytes = q;
        } else if (e.permute_heads > 0) {  // same dtype, rows reordered
          uint8_t* p = out_buf_.Get(n * out_row);
          for (uint64_t i = 0; i < n; ++i) std::memcpy(p + i * out_row, raw + source(i) * in_row, in_row);
          bytes = p;
        }
        LMKIT_RETURN_IF_ERROR(out.Write(bytes, n * out_row));
      }
      outcome->kind = e.quantized ? TensorOutcome::Kind::kQuantized : TensorOutcome::Kind::kCopied;
    }
    static constexpr char kZeros[gguf::kAlignment] = {};
    LMKIT_RETURN_IF_ERROR(out.Write(kZeros, header_.PaddingAfter(ei)));
    outcome->bytes_written = out_bytes;
    return Status::Ok();
  }

  Status Commit() override { return out_->Commit(); }

 private:
  static constexpr size_t kNoEntry = static_cast<size_t>(-1);
  const QuantizeRequest& o_;
  const Plan* plan_ = nullptr;
  LlamaHparams hp_;
  std::vector<Entry> entries_;
  std::vector<std::vector<size_t>> entry_of_;  // [shard][tensor] -> index in entries_, or kNoEntry (dropped)
  gguf::GgufHeader header_;
  std::optional<AtomicFile> out_;
  // Tensors stream through two reused buffers of about kChunkBytes, in chunks of whole rows (of whole heads for q/k,
  // whose rows move only within a head). Reading a tensor whole into a fresh buffer spent most of the run in page
  // faults on this VM (pread at 0.8 GB/s against 12 GB/s into warm pages).
  ScratchBytes raw_buf_, out_buf_;
  std::vector<float> values_;
  std::vector<std::vector<float>> scratch_;
};

}  // namespace

std::unique_ptr<CheckpointWriter> MakeGgufWriter(const QuantizeRequest& options) {
  return std::make_unique<GgufWriter>(options);
}

}  // namespace lmkit::quant::detail
