// Performance notes: the pipeline is one pass per tensor. The pool's workers pread >= 128 KiB of rows at a time into
// their own buffers, code them, and pwrite the codes into a region of the output reserved for the tensor, so reading,
// coding and writing all run on every thread; the main thread only writes the scales. Copied tensors go through one
// 8 MiB buffer. History (bf16 1e9 parameters, 2 threads, tmpfs): the first version read the memory map and wrote the
// codes from the main thread: 2.6 s. pread instead of the map: 1.0 s (touching the map page by page ran at 1.8 GB/s,
// pread at 8.6). AVX2 intrinsics in the coding loop: 0.9 s. Workers writing their own codes: see
// docs/benchmarks/quant.md. No pages of the input are mapped, so peak RSS is the buffers, not the checkpoint.
#include "lmkit/quant/quantize.h"

// GCC 12 reports a false -Wmaybe-uninitialized inside libstdc++'s <regex> (std::function in _StateT) at -O1 with
// sanitizers, which is the CI's ASan configuration with -Werror; the code at fault is the library's, not ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>

#include "lmkit/common/atomic_file.h"
#include "lmkit/common/file_reader.h"
#include "lmkit/common/mapped_file.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/io/dtype.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/quant/calibrate.h"
#include "lmkit/quant/quantize_plan.h"

namespace lmkit::quant {
namespace fs = std::filesystem;
namespace {

constexpr size_t kCopyPiece = 8u << 20;

// Stored scale values -> bytes of `dtype`.
std::vector<uint8_t> ScaleBytes(const std::vector<float>& scales, io::DType dtype) {
  std::vector<uint8_t> out(scales.size() * io::DTypeSize(dtype));
  (void)io::ConvertFromF32(dtype, scales.data(), out.data(), scales.size());  // F32/F16/BF16: cannot fail
  return out;
}

// The other regular files of the input directory (tokenizer, generation config, ...), read before anything is
// committed so that an unreadable one fails the run before the output changes.
Status CollectRegularFiles(const QuantizeOptions& o, const detail::Plan& plan,
                           std::vector<std::pair<std::string, std::string>>* files) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(o.input, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    if (name == "config.json" || name == plan.index_name || detail::EndsWith(name, ".safetensors")) continue;
    // Copied as they are, whatever their size (not parsed): no whole-file cap.
    LMKIT_ASSIGN_OR_RETURN(std::string content, ReadFileToString(entry.path().string(), UINT64_MAX));
    files->emplace_back((fs::path(o.output) / name).string(), std::move(content));
  }
  if (ec) return Status::Io(o.input, "cannot list the directory: " + ec.message());
  return Status::Ok();
}

// Removes the output directory this run created when the run fails. Declared before the shard writers, so it runs
// after their destructors have removed the temporary files; fs::remove only removes an empty directory.
struct QuantizeCreatedDirGuard {
  std::string path;
  ~QuantizeCreatedDirGuard() {
    std::error_code ec;
    if (!path.empty()) fs::remove(path, ec);
  }
};

Json ShapeJson(const std::vector<uint64_t>& shape) {
  Json a = Json::array();
  for (uint64_t d : shape) a.push_back(d);
  return a;
}

Json NumberOrNull(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

}  // namespace

Result<QuantScheme> ParseQuantScheme(const std::string& s) {
  if (s == "w8a16") return QuantScheme::kW8A16;
  if (s == "w8a8") return QuantScheme::kW8A8;
  return Status::InvalidArgument("--scheme must be w8a16 or w8a8, not '" + s + "'");
}

Result<QuantFormat> ParseQuantFormat(const std::string& s) {
  if (s == "compressed-tensors") return QuantFormat::kCompressedTensors;
  if (s == "gguf-q8_0") return QuantFormat::kGgufQ8_0;
  return Status::InvalidArgument("--format must be compressed-tensors or gguf-q8_0, not '" + s + "'");
}

Json QuantizationConfig(const QuantizeOptions& o, const std::vector<std::string>& ignore) {
  Json weights;
  weights["num_bits"] = 8;
  weights["type"] = "int";
  weights["symmetric"] = true;
  weights["strategy"] = StrategyName(o.granularity);
  weights["group_size"] =
      o.granularity.kind == Granularity::Kind::kGroup ? Json(o.granularity.group_size) : Json(nullptr);
  weights["dynamic"] = false;
  Json group;
  group["targets"] = Json::array({"Linear"});
  group["weights"] = weights;
  if (o.scheme == QuantScheme::kW8A8) {
    Json act;
    act["num_bits"] = 8;
    act["type"] = "int";
    act["symmetric"] = true;
    const bool dynamic = o.calibration.empty();
    act["strategy"] = dynamic ? "token" : "tensor";
    act["dynamic"] = dynamic;
    group["input_activations"] = act;
  } else {
    group["input_activations"] = nullptr;
  }
  Json qc;
  qc["quant_method"] = "compressed-tensors";
  qc["format"] = "int-quantized";
  qc["quantization_status"] = "compressed";
  qc["config_groups"]["group_0"] = group;
  qc["ignore"] = ignore;
  qc["kv_cache_scheme"] = nullptr;
  return qc;
}

Result<QuantizeReport> Quantize(const QuantizeOptions& o, ProgressSink* progress) {
  if (o.input.empty() || o.output.empty()) return Status::InvalidArgument("INPUT and -o OUTPUT are required");
  if (o.format == QuantFormat::kGgufQ8_0) return detail::QuantizeToGguf(o, progress);
  if (!o.calibration.empty() && o.scheme != QuantScheme::kW8A8)
    return Status::InvalidArgument("--calibration gives activation scales; it needs --scheme w8a8");
  const double t0 = MonotonicSeconds();
  LMKIT_ASSIGN_OR_RETURN(detail::Matchers matchers, detail::CompileMatchers(o));
  std::map<std::string, double> calib;
  if (!o.calibration.empty()) {
    LMKIT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(o.calibration));
    LMKIT_ASSIGN_OR_RETURN(calib, ParseCalibrationAmax(text, o.calibration));
  }
  LMKIT_ASSIGN_OR_RETURN(detail::Plan plan, detail::MakePlan(o, false));

  QuantizeReport rep;
  rep.input = o.input;
  rep.output = o.output;
  rep.scheme = o.scheme == QuantScheme::kW8A8 ? "w8a8" : "w8a16";
  rep.granularity = GranularityName(o.granularity);
  rep.format = "compressed-tensors";

  // Validate the selection and the calibration for every shard before writing anything.
  std::vector<std::string> ignore = {"lm_head"};
  uint64_t total_bytes = 0, selected_count = 0;
  for (const detail::Shard& s : plan.shards) {
    for (const io::TensorInfo& t : s.file.tensors()) {
      total_bytes += t.num_bytes();
      const bool sel = detail::Selected(t, matchers);
      selected_count += sel ? 1 : 0;
      if (sel && o.granularity.kind == Granularity::Kind::kGroup && t.shape[1] % o.granularity.group_size != 0)
        return Status::InvalidInput(s.in_path, fmt::format("tensor '{}': group size {} does not divide {} columns",
                                                           t.name, o.granularity.group_size, t.shape[1]));
      if (sel && !o.calibration.empty()) {
        const std::string m = detail::ModuleName(t.name);
        if (!calib.count(m) && !calib.count(m + ".input"))
          return Status::InvalidInput(o.calibration, "no activation range for '" + m + "' (or '" + m + ".input')");
        // amax / 127.5 is stored in the weight's dtype; past its range it became an infinite input_scale (F32 above
        // 3.4e38, F16 above 8.4e6) in a checkpoint reported as a success.
        const double amax = calib.count(m) ? calib[m] : calib[m + ".input"];
        if (!(amax <= std::numeric_limits<float>::max()) ||
            !std::isfinite(StoredScale(static_cast<float>(amax), Int8Convention::kHalfStep, t.dtype)))
          return Status::InvalidInput(o.calibration, fmt::format("amax {:g} for '{}' gives an input_scale beyond the "
                                                                 "range of {}",
                                                                 amax, m, io::DTypeName(t.dtype)));
      }
      if (!sel && detail::EndsWith(t.name, ".weight") && t.shape.size() == 2) {
        const std::string m = detail::ModuleName(t.name);
        if (std::find(ignore.begin(), ignore.end(), m) == ignore.end()) ignore.push_back(m);
      }
    }
  }

  // An --include with a typo (or an --exclude that takes everything) wrote a full-precision copy labelled as quantized,
  // with exit 0.
  if (selected_count == 0)
    return Status::InvalidInput(o.input, o.include.empty() && o.exclude.empty()
                                             ? "no Linear weight to quantize (no 2-D float *.weight outside the "
                                               "embeddings, norms and lm_head)"
                                             : "no Linear weight to quantize: the --include/--exclude patterns "
                                               "select none of the 2-D float *.weight tensors");
  // config.json is parsed before anything is written: a malformed one used to fail after the shards were in place.
  std::optional<Json> cfg;
  const std::string& cpath = plan.config_path;
  if (plan.directory && !cpath.empty()) {
    LMKIT_ASSIGN_OR_RETURN(cfg, ParseJson(plan.config_text, cpath));
    if (!cfg->is_object()) return Status::InvalidInput(cpath, "config.json is not a JSON object");
  }
  QuantizeCreatedDirGuard created_dir;
  if (plan.directory) {
    // One level only, as for file outputs: a missing parent is an error, not a tree of directories left behind.
    std::error_code ec;
    if (fs::create_directory(o.output, ec)) created_dir.path = o.output;
    if (ec) return Status::Io(o.output, "cannot create the output directory: " + ec.message());
  }
  // Every shard stays uncommitted (a temporary file) until all of them are written: an error in a later shard must
  // not leave earlier ones in the destination.
  std::vector<io::SafetensorsWriter> writers;
  writers.reserve(plan.shards.size());

  ThreadPool pool(std::max(1u, o.threads));
  std::vector<float> scales;
  std::vector<uint8_t> copy_buf;
  std::map<std::string, std::string> weight_map;
  uint64_t done_bytes = 0;
  if (progress) progress->Begin("quantizing", total_bytes, "B");
  for (detail::Shard& s : plan.shards) {
    const auto& tensors = s.file.tensors();
    // Declare the output tensors.
    std::vector<io::TensorSpec> specs;
    std::vector<bool> selected(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const io::TensorInfo& t = tensors[i];
      selected[i] = detail::Selected(t, matchers);
      if (!selected[i]) {
        specs.push_back({t.name, t.dtype, t.shape});
        continue;
      }
      const std::string m = detail::ModuleName(t.name);
      specs.push_back({t.name, io::DType::kI8, t.shape});
      specs.push_back({m + ".weight_scale", t.dtype, o.granularity.ScaleShape(t.shape[0], t.shape[1])});
      if (!o.calibration.empty()) specs.push_back({m + ".input_scale", t.dtype, {1}});
    }
    for (const auto& sp : specs) weight_map[sp.name] = s.file_name;
    LMKIT_ASSIGN_OR_RETURN(io::SafetensorsWriter created,
                           io::SafetensorsWriter::Create(s.out_path, specs, s.file.metadata()));
    writers.push_back(std::move(created));
    io::SafetensorsWriter& w = writers.back();
    // Tensor bytes are read with pread, not through the header's mapping (file_reader.h says why).
    LMKIT_ASSIGN_OR_RETURN(FileReader in, FileReader::Open(s.in_path));
    if (in.size() != s.file.file_bytes()) return Status::InvalidInput(s.in_path, "file changed while being read");
    for (size_t i = 0; i < tensors.size(); ++i) {
      const io::TensorInfo& t = tensors[i];
      const uint64_t base = s.file.data_offset() + t.begin;
      rep.bytes_before += t.num_bytes();
      if (!selected[i]) {
        copy_buf.resize(std::min<uint64_t>(kCopyPiece, t.num_bytes()));
        for (uint64_t off = 0; off < t.num_bytes(); off += kCopyPiece) {
          const size_t n = static_cast<size_t>(std::min<uint64_t>(kCopyPiece, t.num_bytes() - off));
          LMKIT_RETURN_IF_ERROR(in.ReadAt(base + off, copy_buf.data(), n));
          LMKIT_RETURN_IF_ERROR(w.Write(copy_buf.data(), n));
        }
        rep.bytes_after += t.num_bytes();
        ++rep.tensors_copied;
      } else {
        const uint64_t rows = t.shape[0], cols = t.shape[1];
        scales.assign(o.granularity.ScaleCount(rows, cols), 0.0f);
        TensorReport tr;
        tr.name = t.name;
        tr.shape = t.shape;
        tr.dtype = std::string(io::DTypeName(t.dtype));
        QuantizeMatrixOptions qo{o.granularity, Int8Convention::kHalfStep, t.dtype};
        // Rows are read with pread and codes written with pwrite by the pool's workers (quantizer.h says why).
        const uint64_t row_bytes = cols * io::DTypeSize(t.dtype);
        LMKIT_ASSIGN_OR_RETURN(io::SafetensorsWriter::Region region, w.Reserve(rows * cols));
        RowStreams streams;
        streams.read = [&](uint64_t first, uint64_t count, uint8_t* dst) {
          return in.ReadAt(base + first * row_bytes, dst, count * row_bytes);
        };
        streams.write = [&](uint64_t first, uint64_t count, const int8_t* block) {
          return io::SafetensorsWriter::WriteRegion(region, first * cols, block, count * cols);
        };
        Status st = QuantizeMatrix(streams, t.dtype, rows, cols, qo, &pool, scales.data(), &tr.stats);
        if (!st.ok()) {
          if (!st.subject().empty()) return st;  // an I/O error names its file already
          return Status::InvalidInput(s.in_path, "tensor '" + t.name + "': " + st.message());
        }
        if (!scales.empty()) {
          auto [mn, mx] = std::minmax_element(scales.begin(), scales.end());
          tr.scale_min = *mn;
          tr.scale_max = *mx;
        }
        std::vector<uint8_t> sb = ScaleBytes(scales, t.dtype);
        LMKIT_RETURN_IF_ERROR(w.Write(sb.data(), sb.size()));
        rep.bytes_after += rows * cols + sb.size();
        if (!o.calibration.empty()) {
          const std::string m = detail::ModuleName(t.name);
          double amax = calib.count(m) ? calib[m] : calib[m + ".input"];
          std::vector<float> in_scale = {StoredScale(static_cast<float>(amax), Int8Convention::kHalfStep, t.dtype)};
          std::vector<uint8_t> ib = ScaleBytes(in_scale, t.dtype);
          LMKIT_RETURN_IF_ERROR(w.Write(ib.data(), ib.size()));
          rep.bytes_after += ib.size();
        }
        rep.params_quantized += rows * cols;
        rep.total.Merge(tr.stats);
        rep.tensors.push_back(std::move(tr));
      }
      done_bytes += t.num_bytes();
      if (progress) progress->Update(done_bytes);
    }
  }
  if (progress) progress->Finish();

  std::vector<std::pair<std::string, std::string>> files;  // (path, content) written after the shards
  if (plan.directory) {
    if (!plan.index_name.empty()) {
      Json idx;
      idx["metadata"]["total_size"] = rep.bytes_after;
      Json wm = Json::object();
      for (const auto& [k, v] : weight_map) wm[k] = v;
      idx["weight_map"] = wm;
      files.emplace_back((fs::path(o.output) / plan.index_name).string(), DumpJson(idx) + "\n");
    }
    if (cfg) {
      (*cfg)["quantization_config"] = QuantizationConfig(o, ignore);
      files.emplace_back((fs::path(o.output) / "config.json").string(), DumpJson(*cfg) + "\n");
    }
    LMKIT_RETURN_IF_ERROR(CollectRegularFiles(o, plan, &files));
  }
  for (io::SafetensorsWriter& w : writers) LMKIT_RETURN_IF_ERROR(w.Commit());
  for (const auto& [path, content] : files) LMKIT_RETURN_IF_ERROR(WriteFileAtomically(path, content));
  created_dir.path.clear();  // success: keep it
  rep.seconds = MonotonicSeconds() - t0;
  rep.peak_rss_bytes = PeakRssBytes();
  return rep;
}

Json QuantizeReportToJson(const QuantizeReport& r) {
  Json j;
  j["input"] = r.input;
  j["output"] = r.output;
  j["scheme"] = r.scheme;
  j["granularity"] = r.granularity;
  j["format"] = r.format;
  Json ts = Json::array();
  for (const TensorReport& t : r.tensors) {
    Json e;
    e["name"] = t.name;
    e["shape"] = ShapeJson(t.shape);
    e["dtype"] = t.dtype;
    e["scale_min"] = t.scale_min;
    e["scale_max"] = t.scale_max;
    e["sqnr_db"] = NumberOrNull(t.stats.SqnrDb());
    e["cosine"] = t.stats.Cosine();
    e["max_abs_err"] = t.stats.max_abs_err;
    e["mse"] = t.stats.Mse();
    e["clipped_share"] = t.stats.ClippedShare();
    ts.push_back(std::move(e));
  }
  j["tensors"] = std::move(ts);
  j["kept_unquantized"] = r.kept_unquantized;
  Json tot;
  tot["tensors_quantized"] = r.tensors.size();
  tot["tensors_copied"] = r.tensors_copied;
  tot["params_quantized"] = r.params_quantized;
  tot["bytes_before"] = r.bytes_before;
  tot["bytes_after"] = r.bytes_after;
  tot["sqnr_db"] = NumberOrNull(r.total.SqnrDb());
  tot["cosine"] = r.total.Cosine();
  tot["max_abs_err"] = r.total.max_abs_err;
  tot["clipped_share"] = r.total.ClippedShare();
  tot["seconds"] = r.seconds;
  tot["gb_per_s"] = r.GbPerSecond();
  tot["peak_rss_bytes"] = r.peak_rss_bytes;
  j["totals"] = std::move(tot);
  return j;
}

std::string QuantizeReportToText(const QuantizeReport& r) {
  size_t w = 6;
  for (const auto& t : r.tensors) w = std::max(w, t.name.size());
  std::string out = fmt::format("{:<{}}  {:>13}  {:>4}  {:>10}  {:>10}  {:>8}  {:>10}  {:>10}  {:>8}\n", "tensor", w,
                                "shape", "type", "scale min", "scale max", "SQNR dB", "cosine", "max err", "clipped");
  for (const auto& t : r.tensors) {
    std::string shape = fmt::format("{}x{}", t.shape[0], t.shape[1]);
    out += fmt::format("{:<{}}  {:>13}  {:>4}  {:>10.4g}  {:>10.4g}  {:>8.2f}  {:>10.7f}  {:>10.4g}  {:>7.4f}%\n",
                       t.name, w, shape, t.dtype, t.scale_min, t.scale_max, t.stats.SqnrDb(), t.stats.Cosine(),
                       t.stats.max_abs_err, 100 * t.stats.ClippedShare());
  }
  out += fmt::format(
      "{} tensors quantized ({} params), {} copied; {} -> {}; SQNR {:.2f} dB, cosine {:.7f}; {:.2f} s, {:.2f} GB/s\n",
      r.tensors.size(), r.params_quantized, r.tensors_copied, FormatBytes(static_cast<double>(r.bytes_before)),
      FormatBytes(static_cast<double>(r.bytes_after)), r.total.SqnrDb(), r.total.Cosine(), r.seconds, r.GbPerSecond());
  if (!r.kept_unquantized.empty()) {
    out += fmt::format("{} selected weights kept in full precision (rows not a multiple of 32 long):",
                       r.kept_unquantized.size());
    for (const auto& n : r.kept_unquantized) out += " " + n;
    out += "\n";
  }
  return out;
}

}  // namespace lmkit::quant
