// The compressed-tensors writer of `lmkit quantize` (checkpoint_writer.h): the layouts of docs/quant.md, "Output
// format: compressed-tensors". Performance notes: the pool's workers pread >= 128 KiB of rows at a time into their
// own buffers, code them, and pwrite the codes into a region of the output reserved for the tensor, so reading, coding
// and writing all run on every thread; the main thread only writes the scales. Copied tensors go through one 8 MiB
// buffer. History (bf16 1e9 parameters, 2 threads, tmpfs): the first version read the memory map and wrote the codes
// from the main thread: 2.6 s. pread instead of the map: 1.0 s (touching the map page by page ran at 1.8 GB/s, pread
// at 8.6). AVX2 intrinsics in the coding loop: 0.9 s. Workers writing their own codes: see docs/benchmarks/quant.md.
// No pages of the input are mapped, so peak RSS is the buffers, not the checkpoint.

// GCC 12 reports a false -Wmaybe-uninitialized inside libstdc++'s <regex> (std::function in _StateT) at -O1 with
// sanitizers, which is the CI's ASan configuration with -Werror; the code at fault is the library's, not ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>

#include "lmkit/common/atomic_file.h"
#include "lmkit/common/json.h"
#include "lmkit/common/mapped_file.h"
#include "lmkit/formats/fp8.h"
#include "lmkit/formats/pack_quantized.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/quant/calibrate.h"
#include "lmkit/quant/calibrated.h"
#include "lmkit/quant/checkpoint_writer.h"
#include "lmkit/quant/fp8_quantizer.h"
#include "lmkit/quant/gptq.h"
#include "lmkit/quant/loader_rules.h"
#include "lmkit/quant/quantizer.h"

namespace lmkit::quant::detail {
namespace fs = std::filesystem;
namespace {

constexpr size_t kCopyPiece = 8u << 20;

// Stored scale values -> bytes of `dtype`.
std::vector<uint8_t> ScaleBytes(const std::vector<float>& scales, io::DType dtype) {
  std::vector<uint8_t> out(scales.size() * io::DTypeSize(dtype));
  (void)io::ConvertFromF32(dtype, scales.data(), out.data(), scales.size());  // F32/F16/BF16: cannot fail
  return out;
}

// Removes the output directory this run created when the run fails. Declared before the shard writers, so it runs
// after their destructors have removed the temporary files; fs::remove only removes an empty directory.
struct CreatedDirGuard {
  std::string path;
  ~CreatedDirGuard() {
    std::error_code ec;
    if (!path.empty()) fs::remove(path, ec);
  }
};

bool IsFp8(QuantScheme s) { return s == QuantScheme::kFp8 || s == QuantScheme::kFp8Static; }
// Weight-only int schemes are stored pack-quantized (compressed-tensors infers that format for them anyway).
bool IsPacked(QuantScheme s) { return s == QuantScheme::kW8A16 || s == QuantScheme::kW4A16; }
uint64_t PackedRowBytes(QuantScheme s, uint64_t cols) {
  return (InfoOf(s).weight_bits == 4 ? formats::PackedWords4(cols) : formats::PackedWords(cols)) * 4;
}

// The scheme of the routed experts (per-expert Linears, and the fused 3-D experts written per expert) under `s`.
// transformers 5 (5.24) holds the experts as fused 3-D parameters, not Linear modules: it decompresses a routed
// expert's tensors while merging them (integrations/compressed_tensors.py, CompressedTensorsDequantize), which reads
// int codes only as pack-quantized `weight_packed` (int-quantized `weight` int8 fails the merge: "issues during
// automatic conversion of the weights") and FP8 as `weight` + `weight_scale`, and loads no `input_scale` (unexpected
// keys). So under w8a8 the experts are w8a16 (the same int8 codes, pack-quantized, 16-bit activations: vLLM's WNA16
// MoE path), and under fp8-static they are fp8 with dynamic activations.
QuantScheme ExpertScheme(QuantScheme s) {
  if (s == QuantScheme::kW8A8) return QuantScheme::kW8A16;
  if (s == QuantScheme::kFp8Static) return QuantScheme::kFp8;
  return s;
}

// The module regex of the routed experts' group (quantize_plan.h's IsRoutedExpert, as compressed-tensors' "re:"
// targets match module names).
constexpr const char* kExpertTarget = "re:.*\\.experts\\.[0-9]+\\.(w1|w2|w3|gate_proj|up_proj|down_proj)$";

// One config group: `scheme`'s weights (o's granularity) and activations (static per-tensor when `static_acts`).
Json GroupJson(const QuantizeRequest& o, QuantScheme scheme, bool static_acts, const Json& targets) {
  const SchemeInfo& info = InfoOf(scheme);
  const char* type = IsFp8(scheme) ? "float" : "int";
  Json weights;
  weights["num_bits"] = info.weight_bits;
  weights["type"] = type;
  weights["symmetric"] = true;
  weights["strategy"] = StrategyName(o.granularity);
  weights["group_size"] =
      o.granularity.kind == Granularity::Kind::kGroup ? Json(o.granularity.group_size) : Json(nullptr);
  weights["dynamic"] = false;
  Json group;
  group["targets"] = targets;
  group["weights"] = weights;
  group["format"] = info.ct_format;
  if (info.activations) {
    Json act;
    act["num_bits"] = 8;
    act["type"] = type;
    act["symmetric"] = true;
    act["strategy"] = static_acts ? "tensor" : "token";
    act["dynamic"] = !static_acts;
    group["input_activations"] = act;
  } else {
    group["input_activations"] = nullptr;
  }
  return group;
}

// The "quantization_config" object of config.json (the fields compressed-tensors' QuantizationConfig and vLLM's
// CompressedTensorsConfig read; docs/quant.md). `expert_group`: the routed experts were quantized in
// ExpertScheme(o.scheme) != o.scheme, which gets its own group (vLLM matches a "re:" target before a class name; the
// top-level format is then "mixed-precision" when the two formats differ, as compressed-tensors writes it).
Json QuantizationConfig(const QuantizeRequest& o, const std::vector<std::string>& ignore, bool expert_group) {
  Json qc;
  qc["quant_method"] = "compressed-tensors";
  qc["format"] = InfoOf(o.scheme).ct_format;
  qc["quantization_status"] = "compressed";
  qc["config_groups"]["group_0"] = GroupJson(o, o.scheme, !o.calibration.empty(), Json::array({"Linear"}));
  if (expert_group) {
    const QuantScheme es = ExpertScheme(o.scheme);
    qc["config_groups"]["group_1"] = GroupJson(o, es, false, Json::array({kExpertTarget}));
    if (InfoOf(es).ct_format != InfoOf(o.scheme).ct_format) qc["format"] = "mixed-precision";
  }
  qc["ignore"] = ignore;
  qc["kv_cache_scheme"] = nullptr;
  return qc;
}

class CompressedTensorsWriter final : public CheckpointWriter {
 public:
  CompressedTensorsWriter(const QuantizeRequest& o, const Prepared* prepared) : o_(o), prepared_(prepared) {}

  Status CheckRequest() override {
    const SchemeInfo& info = InfoOf(o_.scheme);
    if (!o_.calibration.empty() && !info.takes_calibration)
      return Status::InvalidArgument(Field("calibration") + " gives activation scales; it needs " + Field("scheme") +
                                     " w8a8 or fp8-static");
    if (o_.calibration.empty() && info.needs_calibration)
      return Status::InvalidArgument(Field("scheme") + " " + std::string(info.name) + " needs " + Field("calibration") +
                                     " (its static activation scales)");
    const Support s = CheckSupport(o_.scheme, QuantFormat::kCompressedTensors, o_.granularity, !o_.calibration.empty());
    if (s.policy == Support::Policy::kRefuse) return Status::InvalidArgument(s.message);
    if (s.policy == Support::Policy::kWarn) warnings_.push_back(s.message);
    return Status::Ok();
  }

  bool SingleOutputFile() const override { return false; }

  Status Prepare(const Plan& plan, const Matchers& matchers, QuantizeResult* rep) override {
    plan_ = &plan;
    if (!o_.calibration.empty()) {
      LMKIT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(o_.calibration));
      LMKIT_ASSIGN_OR_RETURN(calib_, ParseCalibrationAmax(text, o_.calibration));
    }
    // Validate the selection and the calibration for every shard before writing anything.
    std::vector<std::string> ignore = {"lm_head"}, quantized, kept;
    uint64_t selected_count = 0;
    bool expert_quantized = false;
    selected_.resize(plan.shards.size());
    slices_.resize(plan.shards.size());
    for (size_t si = 0; si < plan.shards.size(); ++si) {
      const Shard& s = plan.shards[si];
      for (const io::TensorInfo& t : s.file.tensors()) {
        // transformers 5's fused 3-D experts are quantized as the per-expert 2-D matrices they hold, all or none.
        std::vector<io::TensorInfo> slices = FusedExpertSlices(t, plan.model_type);
        if (!slices.empty()) {
          size_t n = 0;
          for (const io::TensorInfo& x : slices) n += Selected(x, matchers) ? 1 : 0;
          if (n != 0 && n != slices.size())
            return Status::InvalidArgument(
                fmt::format("the {} / {} patterns select {} of the {} expert matrices of "
                            "the fused tensor '{}'; select all of them or none",
                            Field("include"), Field("exclude"), n, slices.size(), t.name));
          if (n == 0) slices.clear();
        }
        const bool sel = !slices.empty() || Selected(t, matchers);
        selected_[si].push_back(sel);
        selected_count += sel ? 1 : 0;
        const std::string m = ModuleName(t.name);
        for (const io::TensorInfo& x : slices) {
          quantized.push_back(ModuleName(x.name));
          LMKIT_RETURN_IF_ERROR(CheckTensor(s, x));
        }
        if (sel) expert_quantized = expert_quantized || !slices.empty() || IsRoutedExpert(t.name);
        if (!slices.empty()) {
          slices_[si].push_back(std::move(slices));
          continue;
        }
        slices_[si].emplace_back();
        if (sel) {
          quantized.push_back(m);
          LMKIT_RETURN_IF_ERROR(CheckTensor(s, t));
        } else if (EndsWith(t.name, ".weight") && t.shape.size() == 2) {
          kept.push_back(m);
          if (std::find(ignore.begin(), ignore.end(), m) == ignore.end()) ignore.push_back(m);
        }
      }
    }
    // An --include with a typo (or an --exclude that takes everything) wrote a full-precision copy labelled as
    // quantized, with exit 0.
    if (selected_count == 0)
      return Status::InvalidInput(o_.input, o_.include.empty() && o_.exclude.empty()
                                                ? "no Linear weight to quantize (no 2-D float *.weight outside the "
                                                  "embeddings, norms and lm_head)"
                                                : "no Linear weight to quantize: the " + Field("include") + "/" +
                                                      Field("exclude") +
                                                      " patterns select none of the 2-D float *.weight tensors");
    if (auto split = FindSplitFusedGroup(quantized, kept)) {
      if (!o_.split_fused)
        return Status::InvalidArgument(*split + "; quantize all of them or none, or pass " + Field("split_fused") +
                                       " to write it anyway");
      warnings_.push_back(*split + ": vLLM will refuse this checkpoint (written as asked by " + Field("split_fused") +
                          "); transformers + compressed-tensors loads it");
    }
    for (std::string& w : warnings_) rep->warnings.push_back(std::move(w));
    warnings_.clear();
    // config.json is parsed before anything is written: a malformed one used to fail after the shards were in place.
    const std::string& cpath = plan.config_path;
    std::error_code ec;
    if (plan.directory && !cpath.empty()) {
      LMKIT_ASSIGN_OR_RETURN(cfg_, ParseJson(plan.config_text, cpath));
      if (!cfg_->is_object()) return Status::InvalidInput(cpath, "config.json is not a JSON object");
      (*cfg_)["quantization_config"] =
          QuantizationConfig(o_, ignore, expert_quantized && ExpertScheme(o_.scheme) != o_.scheme);
    }
    if (plan.directory) {
      // One level only, as for file outputs: a missing parent is an error, not a tree of directories left behind.
      if (fs::create_directory(o_.output, ec)) created_dir_.path = o_.output;
      if (ec) return Status::Io(o_.output, "cannot create the output directory: " + ec.message());
    }
    // Every shard stays uncommitted (a temporary file) until all of them are written: an error in a later shard must
    // not leave earlier ones in the destination.
    writers_.reserve(plan.shards.size());
    for (size_t si = 0; si < plan.shards.size(); ++si) {
      const Shard& s = plan.shards[si];
      std::vector<io::TensorSpec> specs;
      for (size_t i = 0; i < s.file.tensors().size(); ++i) {
        const io::TensorInfo& t = s.file.tensors()[i];
        if (!slices_[si][i].empty())
          for (const io::TensorInfo& x : slices_[si][i]) AddQuantizedSpecs(x, &specs);
        else if (selected_[si][i])
          AddQuantizedSpecs(t, &specs);
        else
          specs.push_back({t.name, t.dtype, t.shape});
      }
      for (const auto& sp : specs) weight_map_[sp.name] = s.file_name;
      LMKIT_ASSIGN_OR_RETURN(io::SafetensorsWriter w,
                             io::SafetensorsWriter::Create(s.out_path, specs, s.file.metadata()));
      writers_.push_back(std::move(w));
    }
    return Status::Ok();
  }

  Status WriteTensor(size_t si, size_t ti, const FileReader& in, ThreadPool& pool, TensorOutcome* out) override {
    const Shard& s = plan_->shards[si];
    const io::TensorInfo& t = s.file.tensors()[ti];
    io::SafetensorsWriter& w = writers_[si];
    const uint64_t base = s.file.data_offset() + t.begin;
    const PreparedTensor* pt = nullptr;
    if (prepared_) {
      LMKIT_ASSIGN_OR_RETURN(pt, prepared_->Find(t.name));
    }
    if (!selected_[si][ti] && pt && !pt->values.empty()) {
      std::vector<uint8_t> bytes(t.num_bytes());
      LMKIT_RETURN_IF_ERROR(io::ConvertFromF32(t.dtype, pt->values.data(), bytes.data(), pt->values.size()));
      LMKIT_RETURN_IF_ERROR(w.Write(bytes.data(), bytes.size()));
      out->kind = TensorOutcome::Kind::kCopied;
      out->bytes_written = t.num_bytes();
      return Status::Ok();
    }
    if (!selected_[si][ti] && prepared_) {
      // A fused 3-D expert tensor left unquantized whose experts SmoothQuant changed: the smoothed matrices in place.
      bool smoothed = false;
      std::vector<uint8_t> bytes;
      for (const io::TensorInfo& x : FusedExpertSlices(t, plan_->model_type)) {
        LMKIT_ASSIGN_OR_RETURN(const PreparedTensor* xt, prepared_->Find(x.name));
        if (!xt || xt->values.empty()) continue;
        if (!smoothed) {
          bytes.resize(t.num_bytes());
          LMKIT_RETURN_IF_ERROR(in.ReadAt(base, bytes.data(), bytes.size()));
          smoothed = true;
        }
        LMKIT_RETURN_IF_ERROR(
            io::ConvertFromF32(x.dtype, xt->values.data(), bytes.data() + (x.begin - t.begin), xt->values.size()));
      }
      if (smoothed) {
        LMKIT_RETURN_IF_ERROR(w.Write(bytes.data(), bytes.size()));
        out->kind = TensorOutcome::Kind::kCopied;
        out->bytes_written = t.num_bytes();
        return Status::Ok();
      }
    }
    if (!selected_[si][ti]) {
      copy_buf_.resize(std::min<uint64_t>(kCopyPiece, t.num_bytes()));
      for (uint64_t off = 0; off < t.num_bytes(); off += kCopyPiece) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kCopyPiece, t.num_bytes() - off));
        LMKIT_RETURN_IF_ERROR(in.ReadAt(base + off, copy_buf_.data(), n));
        LMKIT_RETURN_IF_ERROR(w.Write(copy_buf_.data(), n));
      }
      out->kind = TensorOutcome::Kind::kCopied;
      out->bytes_written = t.num_bytes();
      return Status::Ok();
    }
    if (!slices_[si][ti].empty()) return WriteFusedExperts(si, ti, in, pool, out);
    TensorReport& tr = out->report;
    tr.name = t.name;
    tr.shape = t.shape;
    tr.dtype = std::string(io::DTypeName(t.dtype));
    // Smoothed weights are quantized from memory, in the checkpoint's dtype as a loader of the smoothed model sees
    // them; GPTQ's codes and 4-bit codes are made from the whole matrix (WriteWholeMatrix).
    std::vector<uint8_t> smoothed;
    if (pt && !pt->values.empty() && !pt->has_codes) {
      smoothed.resize(t.num_bytes());
      LMKIT_RETURN_IF_ERROR(io::ConvertFromF32(t.dtype, pt->values.data(), smoothed.data(), pt->values.size()));
    }
    if ((pt && pt->has_codes) || InfoOf(SchemeOf(t.name)).weight_bits != 8) {
      LMKIT_RETURN_IF_ERROR(WriteWholeMatrix(s, t, in, pt, smoothed, w, out));
    } else {
      LMKIT_RETURN_IF_ERROR(WriteStreamed(s, t, in, pool, smoothed, w, out));
    }
    out->kind = TensorOutcome::Kind::kQuantized;
    return Status::Ok();
  }

  // A fused 3-D expert tensor written as its per-expert matrices (slices_), each quantized as a 2-D weight of that
  // name would be; one report for the whole tensor (its stats merged over the experts, GPTQ's errors the largest).
  Status WriteFusedExperts(size_t si, size_t ti, const FileReader& in, ThreadPool& pool, TensorOutcome* out) {
    const Shard& s = plan_->shards[si];
    const io::TensorInfo& t = s.file.tensors()[ti];
    TensorReport& tr = out->report;
    tr.name = t.name;
    tr.shape = t.shape;
    tr.dtype = std::string(io::DTypeName(t.dtype));
    io::SafetensorsWriter& w = writers_[si];
    bool first = true;
    for (const io::TensorInfo& x : slices_[si][ti]) {
      TensorOutcome part;
      const PreparedTensor* pt = nullptr;
      if (prepared_) {
        // Find, not tensors: the sequential run spills the finished layers' tensors to its scratch file.
        LMKIT_ASSIGN_OR_RETURN(pt, prepared_->Find(x.name));
      }
      std::vector<uint8_t> smoothed;
      if (pt && !pt->values.empty() && !pt->has_codes) {
        smoothed.resize(x.num_bytes());
        LMKIT_RETURN_IF_ERROR(io::ConvertFromF32(x.dtype, pt->values.data(), smoothed.data(), pt->values.size()));
      }
      if ((pt && pt->has_codes) || InfoOf(SchemeOf(x.name)).weight_bits != 8) {
        LMKIT_RETURN_IF_ERROR(WriteWholeMatrix(s, x, in, pt, smoothed, w, &part));
      } else {
        LMKIT_RETURN_IF_ERROR(WriteStreamed(s, x, in, pool, smoothed, w, &part));
      }
      tr.stats.Merge(part.report.stats);
      // GPTQ: the worst expert's errors, every expert's dead columns.
      auto worst = [](std::optional<double>& a, const std::optional<double>& b) {
        if (b) a = a ? std::max(*a, *b) : *b;
      };
      worst(tr.gptq_error, part.report.gptq_error);
      worst(tr.rtn_error, part.report.rtn_error);
      tr.dead_columns += part.report.dead_columns;
      tr.cholesky_failed = tr.cholesky_failed || part.report.cholesky_failed;
      tr.scale_min = first ? part.report.scale_min : std::min(tr.scale_min, part.report.scale_min);
      tr.scale_max = first ? part.report.scale_max : std::max(tr.scale_max, part.report.scale_max);
      first = false;
      out->bytes_written += part.bytes_written;
    }
    out->kind = TensorOutcome::Kind::kQuantized;
    return Status::Ok();
  }

  // Quantizes by rows through the pool: read with pread (or from `smoothed`), codes written with pwrite by the pool's
  // workers (quantizer.h says why).
  Status WriteStreamed(const Shard& s, const io::TensorInfo& t, const FileReader& in, ThreadPool& pool,
                       const std::vector<uint8_t>& smoothed, io::SafetensorsWriter& w, TensorOutcome* out) {
    const uint64_t base = s.file.data_offset() + t.begin;
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    const uint64_t row_bytes = cols * io::DTypeSize(t.dtype);
    std::vector<float> scales(o_.granularity.ScaleCount(rows, cols), 0.0f);
    TensorReport& tr = out->report;
    RowStreams streams;
    if (!smoothed.empty()) {
      streams.read = [&](uint64_t first, uint64_t count, uint8_t* dst) {
        std::memcpy(dst, smoothed.data() + first * row_bytes, count * row_bytes);
        return Status::Ok();
      };
    } else {
      streams.read = [&](uint64_t first, uint64_t count, uint8_t* dst) {
        return in.ReadAt(base + first * row_bytes, dst, count * row_bytes);
      };
    }
    const QuantScheme scheme = SchemeOf(t.name);
    const bool packed = IsPacked(scheme);
    const uint64_t out_row = packed ? PackedRowBytes(scheme, cols) : cols;
    LMKIT_ASSIGN_OR_RETURN(io::SafetensorsWriter::Region region, w.Reserve(rows * out_row));
    if (packed) {
      streams.write = [&](uint64_t first, uint64_t count, const int8_t* codes) {
        thread_local std::vector<uint8_t> buf;
        buf.resize(count * out_row);
        for (uint64_t r = 0; r < count; ++r) formats::PackRow8(codes + r * cols, cols, buf.data() + r * out_row);
        return io::SafetensorsWriter::WriteRegion(region, first * out_row, buf.data(), buf.size());
      };
    } else {
      streams.write = [&](uint64_t first, uint64_t count, const int8_t* codes) {
        return io::SafetensorsWriter::WriteRegion(region, first * cols, codes, count * cols);
      };
    }
    Status st;
    if (IsFp8(scheme)) {
      st = QuantizeMatrixFp8(streams, t.dtype, rows, cols, Fp8MatrixOptions{o_.granularity, t.dtype}, &pool,
                             scales.data(), &tr.stats);
    } else {
      const QuantizeMatrixOptions qo{o_.granularity, formats::Int8Convention::kHalfStep, t.dtype};
      st = QuantizeMatrix(streams, t.dtype, rows, cols, qo, &pool, scales.data(), &tr.stats);
    }
    if (!st.ok()) {
      if (!st.subject().empty()) return st;  // an I/O error names its file already
      return Status::InvalidInput(s.in_path, "tensor '" + t.name + "': " + st.message());
    }
    out->bytes_written = rows * out_row;
    return WriteScalesAndShape(t, scales, w, out);
  }

  // GPTQ's codes (given) or 4-bit round-to-nearest codes of the whole matrix, written after the same checks as the
  // streamed path.
  Status WriteWholeMatrix(const Shard& s, const io::TensorInfo& t, const FileReader& in, const PreparedTensor* pt,
                          const std::vector<uint8_t>& smoothed, io::SafetensorsWriter& w, TensorOutcome* out) {
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    TensorReport& tr = out->report;
    auto fail = [&](const std::string& msg) {
      return Status::InvalidInput(s.in_path, "tensor '" + t.name + "': " + msg);
    };
    std::vector<float> values;
    if (pt && !pt->values.empty()) {
      values = pt->values;
    } else {
      std::vector<uint8_t> raw = smoothed;
      if (raw.empty()) {
        raw.resize(t.num_bytes());
        LMKIT_RETURN_IF_ERROR(in.ReadAt(s.file.data_offset() + t.begin, raw.data(), raw.size()));
      }
      values.resize(rows * cols);
      io::ConvertToF32(t.dtype, raw.data(), values.data(), values.size());
    }
    const QuantScheme scheme = SchemeOf(t.name);
    const int bits = InfoOf(scheme).weight_bits;
    std::vector<int8_t> codes;
    std::vector<float> scales;
    if (pt && pt->has_codes) {
      codes = pt->codes;
      scales = pt->scales;
      tr.gptq_error = pt->gptq_error;
      tr.rtn_error = pt->rtn_error;
      tr.dead_columns = pt->dead_columns;
      tr.cholesky_failed = pt->cholesky_failed;
    } else {
      GptqOptions go;
      go.bits = bits;
      go.granularity = o_.granularity;
      go.scale_dtype = t.dtype;
      codes.resize(rows * cols);
      scales.resize(o_.granularity.ScaleCount(rows, cols));
      if (Status st = RtnQuantize(values.data(), rows, cols, go, codes.data(), scales.data()); !st.ok())
        return fail(st.message());
    }
    const IntGrid grid = SymmetricGrid(bits);
    for (float sc : scales)
      if (!DequantizesFinite(sc, -grid.lo, t.dtype))
        return fail("a weight whose code " + std::to_string(static_cast<int>(grid.lo)) + " times its scale overflows " +
                    std::string(io::DTypeName(t.dtype)));
    std::vector<float> deq(rows * cols);
    DequantizeMatrix(codes.data(), scales.data(), rows, cols, o_.granularity, deq.data());
    tr.stats = CompareValues(values.data(), deq.data(), values.size());
    const bool packed = IsPacked(scheme);
    const uint64_t out_row = packed ? PackedRowBytes(scheme, cols) : cols;
    if (packed) {
      std::vector<uint8_t> buf(rows * out_row);
      for (uint64_t r = 0; r < rows; ++r) {
        if (bits == 4)
          formats::PackRow4(codes.data() + r * cols, cols, buf.data() + r * out_row);
        else
          formats::PackRow8(codes.data() + r * cols, cols, buf.data() + r * out_row);
      }
      LMKIT_RETURN_IF_ERROR(w.Write(buf.data(), buf.size()));
    } else {
      LMKIT_RETURN_IF_ERROR(w.Write(codes.data(), codes.size()));
    }
    out->bytes_written = rows * out_row;
    return WriteScalesAndShape(t, scales, w, out);
  }

  // The tensors after the codes: weight_scale, weight_shape (packed), input_scale (static activations).
  Status WriteScalesAndShape(const io::TensorInfo& t, const std::vector<float>& scales, io::SafetensorsWriter& w,
                             TensorOutcome* out) {
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    TensorReport& tr = out->report;
    const bool packed = IsPacked(SchemeOf(t.name));
    if (!scales.empty()) {
      auto [mn, mx] = std::minmax_element(scales.begin(), scales.end());
      tr.scale_min = *mn;
      tr.scale_max = *mx;
    }
    const std::vector<uint8_t> sb = ScaleBytes(scales, t.dtype);
    LMKIT_RETURN_IF_ERROR(w.Write(sb.data(), sb.size()));
    out->bytes_written += sb.size();
    if (packed) {
      const int64_t shape[2] = {static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
      LMKIT_RETURN_IF_ERROR(w.Write(shape, sizeof shape));
      out->bytes_written += sizeof shape;
    }
    if (StaticInput(t.name)) {
      const std::vector<float> in_scale = {InputScale(*Amax(ModuleName(t.name)), t.dtype)};
      const std::vector<uint8_t> ib = ScaleBytes(in_scale, t.dtype);
      LMKIT_RETURN_IF_ERROR(w.Write(ib.data(), ib.size()));
      out->bytes_written += ib.size();
    }
    return Status::Ok();
  }

  Status Commit() override {
    std::vector<std::pair<std::string, std::string>> files;  // (path, content) written after the shards
    if (plan_->directory) {
      if (!plan_->index_name.empty()) {
        uint64_t total = 0;
        for (const io::SafetensorsWriter& w : writers_) total += w.data_total();
        Json idx;
        idx["metadata"]["total_size"] = total;
        Json wm = Json::object();
        for (const auto& [k, v] : weight_map_) wm[k] = v;
        idx["weight_map"] = wm;
        files.emplace_back((fs::path(o_.output) / plan_->index_name).string(), DumpJson(idx) + "\n");
      }
      if (cfg_) files.emplace_back((fs::path(o_.output) / "config.json").string(), DumpJson(*cfg_) + "\n");
      LMKIT_RETURN_IF_ERROR(CollectRegularFiles(&files));
    }
    for (io::SafetensorsWriter& w : writers_) LMKIT_RETURN_IF_ERROR(w.Commit());
    for (const auto& [path, content] : files) LMKIT_RETURN_IF_ERROR(WriteFileAtomically(path, content));
    created_dir_.path.clear();  // success: keep it
    return Status::Ok();
  }

 private:
  // The scheme weight `name` is written in (ExpertScheme for the routed experts), and whether it has a static
  // input_scale.
  QuantScheme SchemeOf(const std::string& name) const {
    return IsRoutedExpert(name) ? ExpertScheme(o_.scheme) : o_.scheme;
  }
  bool StaticInput(const std::string& name) const { return !o_.calibration.empty() && !IsRoutedExpert(name); }

  // The amax of module m's input in the calibration table (key m or m.input), if any.
  std::optional<double> Amax(const std::string& m) const {
    if (auto it = calib_.find(m); it != calib_.end()) return it->second;
    if (auto it = calib_.find(m + ".input"); it != calib_.end()) return it->second;
    return std::nullopt;
  }

  float InputScale(double amax, io::DType dtype) const {
    return IsFp8(o_.scheme) ? Fp8Scale(static_cast<float>(amax), dtype)
                            : StoredScale(static_cast<float>(amax), formats::Int8Convention::kHalfStep, dtype);
  }

  // The checks of one selected tensor that need no data: the group size, and its calibrated input range.
  Status CheckTensor(const Shard& s, const io::TensorInfo& t) const {
    if (o_.granularity.kind == Granularity::Kind::kGroup && t.shape[1] % o_.granularity.group_size != 0)
      return Status::InvalidInput(s.in_path, fmt::format("tensor '{}': group size {} does not divide {} columns",
                                                         t.name, o_.granularity.group_size, t.shape[1]));
    if (!StaticInput(t.name)) return Status::Ok();
    const std::string m = ModuleName(t.name);
    const std::optional<double> amax = Amax(m);
    if (!amax)
      return Status::InvalidInput(o_.calibration, "no activation range for '" + m + "' (or '" + m + ".input')");
    // An input_scale of 0 codes every activation of the layer as 0 (and the loaders divide by it).
    if (*amax == 0)
      return Status::InvalidInput(o_.calibration, "amax 0 for '" + m +
                                                      "': its input_scale would be 0 and every activation of the layer "
                                                      "would be coded as 0; calibrate on inputs that reach it, or "
                                                      "exclude it");
    // The scale is stored in the weight's dtype; past its range it became an infinite input_scale (F32 above 3.4e38,
    // F16 above 8.4e6) in a checkpoint reported as a success.
    if (!(*amax <= std::numeric_limits<float>::max()) || !std::isfinite(InputScale(*amax, t.dtype)))
      return Status::InvalidInput(o_.calibration, fmt::format("amax {:g} for '{}' gives an input_scale beyond the "
                                                              "range of {}",
                                                              *amax, m, io::DTypeName(t.dtype)));
    return Status::Ok();
  }

  // The output tensors of one quantized weight, in data order.
  void AddQuantizedSpecs(const io::TensorInfo& t, std::vector<io::TensorSpec>* specs) const {
    const std::string m = ModuleName(t.name);
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    const std::vector<uint64_t> scale_shape = o_.granularity.ScaleShape(rows, cols);
    const QuantScheme scheme = SchemeOf(t.name);
    if (IsPacked(scheme)) {
      specs->push_back({m + ".weight_packed", io::DType::kI32, {rows, PackedRowBytes(scheme, cols) / 4}});
      specs->push_back({m + ".weight_scale", t.dtype, scale_shape});
      specs->push_back({m + ".weight_shape", io::DType::kI64, {2}});
    } else {
      specs->push_back({t.name, IsFp8(scheme) ? io::DType::kF8E4M3 : io::DType::kI8, t.shape});
      specs->push_back({m + ".weight_scale", t.dtype, scale_shape});
    }
    if (StaticInput(t.name)) specs->push_back({m + ".input_scale", t.dtype, {1}});
  }

  // The other regular files of the input directory (tokenizer, generation config, ...), read before anything is
  // committed so that an unreadable one fails the run before the output changes.
  Status CollectRegularFiles(std::vector<std::pair<std::string, std::string>>* files) const {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(o_.input, ec)) {
      if (!entry.is_regular_file()) continue;
      const std::string name = entry.path().filename().string();
      if (name == "config.json" || name == plan_->index_name || EndsWith(name, ".safetensors")) continue;
      // Copied as they are, whatever their size (not parsed): no whole-file cap.
      LMKIT_ASSIGN_OR_RETURN(std::string content, ReadFileToString(entry.path().string(), UINT64_MAX));
      files->emplace_back((fs::path(o_.output) / name).string(), std::move(content));
    }
    if (ec) return Status::Io(o_.input, "cannot list the directory: " + ec.message());
    return Status::Ok();
  }

  const QuantizeRequest& o_;
  const Prepared* prepared_ = nullptr;  // GPTQ / SmoothQuant's replaced tensors, or null
  const Plan* plan_ = nullptr;
  std::map<std::string, double> calib_;
  std::vector<std::string> warnings_;
  std::vector<std::vector<bool>> selected_;  // [shard][tensor]
  // [shard][tensor]: a fused expert tensor's per-expert matrices when it is quantized, else empty
  std::vector<std::vector<std::vector<io::TensorInfo>>> slices_;
  std::optional<Json> cfg_;
  std::map<std::string, std::string> weight_map_;
  CreatedDirGuard created_dir_;  // before writers_: destroyed after them
  std::vector<io::SafetensorsWriter> writers_;
  std::vector<uint8_t> copy_buf_;
};

}  // namespace

std::unique_ptr<CheckpointWriter> MakeCompressedTensorsWriter(const QuantizeRequest& options,
                                                              const Prepared* prepared) {
  return std::make_unique<CompressedTensorsWriter>(options, prepared);
}

}  // namespace lmkit::quant::detail
