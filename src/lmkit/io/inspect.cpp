// Performance notes: statistics are memory-bound (one pass over the mapped bytes plus a second over a per-worker
// double buffer that stays in L2/L3 at 2 MB); chunks of kStatsChunkElements across all tensors are the parallel unit,
// so a model with one huge embedding still uses every thread. Partials merge with Chan et al.'s pairwise formula in
// chunk order, which keeps results bit-identical for any thread count.
#include "lmkit/io/inspect.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "lmkit/common/mapped_file.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/io/checkpoint.h"
#include "lmkit/io/npy.h"

namespace lmkit::io {
namespace {

struct Partial {
  uint64_t count = 0, nan = 0, inf = 0;
  double min = INFINITY, max = -INFINITY, absmax = 0, mean = 0, m2 = 0;
};

Partial ChunkStats(DType dtype, const uint8_t* data, uint64_t n, std::vector<double>* scratch) {
  scratch->resize(n);
  double* v = scratch->data();
  ConvertToF64(dtype, data, v, n);
  Partial p;
  double sum = 0;
  for (uint64_t i = 0; i < n; ++i) {
    double x = v[i];
    if (std::isnan(x)) {
      ++p.nan;
      continue;
    }
    if (std::isinf(x)) {
      ++p.inf;
      continue;
    }
    ++p.count;
    sum += x;
    p.min = std::min(p.min, x);
    p.max = std::max(p.max, x);
  }
  if (p.count == 0) return p;
  p.mean = sum / static_cast<double>(p.count);
  double m2 = 0;
  for (uint64_t i = 0; i < n; ++i) {
    double x = v[i];
    if (std::isfinite(x)) m2 += (x - p.mean) * (x - p.mean);
  }
  p.m2 = m2;
  p.absmax = std::max(std::fabs(p.min), std::fabs(p.max));
  return p;
}

void Merge(Partial* a, const Partial& b) {
  a->nan += b.nan;
  a->inf += b.inf;
  if (b.count == 0) return;
  if (a->count == 0) {
    uint64_t nan = a->nan, inf = a->inf;
    *a = b;
    a->nan = nan;
    a->inf = inf;
    return;
  }
  double na = static_cast<double>(a->count), nb = static_cast<double>(b.count), n = na + nb;
  double delta = b.mean - a->mean;
  a->mean += delta * nb / n;
  a->m2 += b.m2 + delta * delta * na * nb / n;
  a->count += b.count;
  a->min = std::min(a->min, b.min);
  a->max = std::max(a->max, b.max);
  a->absmax = std::max(a->absmax, b.absmax);
}

TensorStats Finish(const Partial& p) {
  TensorStats s;
  s.count = p.count;
  s.nan_count = p.nan;
  s.inf_count = p.inf;
  if (p.count == 0) return s;
  s.min = p.min;
  s.max = p.max;
  s.absmax = p.absmax;
  s.mean = p.mean;
  s.std = std::sqrt(p.m2 / static_cast<double>(p.count));
  return s;
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// What the statistics pass needs for one tensor.
struct Source {
  const uint8_t* data;
  DType dtype;
  uint64_t elements;
};

}  // namespace

TensorStats ComputeTensorStats(DType dtype, const uint8_t* data, uint64_t n) {
  std::vector<double> scratch;
  Partial total;
  size_t elem = DTypeSize(dtype);
  for (uint64_t start = 0; start < n; start += kStatsChunkElements) {
    uint64_t len = std::min<uint64_t>(kStatsChunkElements, n - start);
    Merge(&total, ChunkStats(dtype, data + start * elem, len, &scratch));
  }
  return Finish(total);
}

Result<InspectResult> InspectTensors(const InspectRequest& options, ProgressSink* progress) {
  InspectResult report;
  report.path = options.path;
  std::vector<SafetensorsFile> st_files;
  std::vector<NpyFile> npy_files;
  std::vector<Source> sources;

  std::vector<std::string> st_paths;
  if (IsDirectory(options.path)) {
    LMKIT_ASSIGN_OR_RETURN(Checkpoint ck, OpenCheckpoint(options.path));
    report.format = ck.index_path.empty() ? "safetensors" : "safetensors (sharded)";
    if (!ck.config_path.empty()) {
      LMKIT_ASSIGN_OR_RETURN(Json config, ParseJson(ck.config_text, ck.config_path));
      if (!config.is_object()) return Status::InvalidInput(ck.config_path, "config is not a JSON object");
      report.config = std::move(config);
    }
    for (CheckpointFile& f : ck.files) {
      st_paths.push_back(f.path);
      st_files.push_back(std::move(f.file));
    }
  } else {
    LMKIT_ASSIGN_OR_RETURN(MappedFile probe, MappedFile::Open(options.path));
    // A file named .npy is read as one even without the magic, so a damaged .npy gets the npy reader's error ("not a
    // .npy file (missing the \x93NUMPY magic)") rather than the safetensors reader's header-length complaints.
    const std::string& path = options.path;
    bool is_npy = (probe.size() >= 6 && std::memcmp(probe.data(), "\x93NUMPY", 6) == 0) ||
                  (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0);
    if (is_npy) {
      report.format = "npy";
      LMKIT_ASSIGN_OR_RETURN(NpyFile f, NpyFile::Open(options.path));
      InspectedTensor t;
      t.name = "(array)";
      t.dtype = f.dtype();
      t.shape = f.shape();
      t.elements = f.header().num_elements();
      t.bytes = f.header().num_bytes();
      t.file = options.path;
      sources.push_back({f.data().data(), t.dtype, t.elements});
      report.tensors.push_back(std::move(t));
      report.files.push_back(options.path);
      npy_files.push_back(std::move(f));
    } else {
      report.format = "safetensors";
      LMKIT_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::Open(options.path));
      st_paths.push_back(options.path);
      st_files.push_back(std::move(f));
    }
  }

  // OpenCheckpoint has checked that no tensor is in two shards and that each is where the index says.
  for (size_t fi = 0; fi < st_files.size(); ++fi) {
    const SafetensorsFile& f = st_files[fi];
    report.files.push_back(st_paths[fi]);
    if (fi == 0) report.metadata = f.metadata();
    for (const TensorInfo& info : f.tensors()) {
      InspectedTensor t;
      t.name = info.name;
      t.dtype = info.dtype;
      t.shape = info.shape;
      t.elements = info.num_elements();
      t.bytes = info.num_bytes();
      t.file = st_paths[fi];
      sources.push_back({f.Data(info).data(), info.dtype, t.elements});
      report.tensors.push_back(std::move(t));
    }
  }
  for (const auto& t : report.tensors) {
    report.parameter_count += t.elements;
    report.tensor_bytes += t.bytes;
  }
  if (!options.stats) return report;

  // Work items: fixed chunks of every tensor, independent of the thread count.
  struct Item {
    size_t tensor;
    uint64_t start;
    uint64_t len;
  };
  std::vector<Item> items;
  for (size_t ti = 0; ti < sources.size(); ++ti) {
    for (uint64_t s = 0; s < sources[ti].elements; s += kStatsChunkElements)
      items.push_back({ti, s, std::min<uint64_t>(kStatsChunkElements, sources[ti].elements - s)});
  }
  std::vector<Partial> partials(items.size());
  ThreadPool pool(std::max(1u, options.threads));
  std::vector<std::vector<double>> scratch(pool.size());
  std::atomic<uint64_t> done{0};
  if (progress) progress->Begin("scanning", report.tensor_bytes, "B");
  pool.ParallelFor(items.size(), [&](size_t i, unsigned worker) {
    const Item& it = items[i];
    const Source& src = sources[it.tensor];
    size_t elem = DTypeSize(src.dtype);
    partials[i] = ChunkStats(src.dtype, src.data + it.start * elem, it.len, &scratch[worker]);
    uint64_t d = done.fetch_add(it.len * elem) + it.len * elem;
    if (progress) progress->Update(d);
  });
  if (progress) progress->Finish();
  std::vector<Partial> totals(sources.size());
  for (size_t i = 0; i < items.size(); ++i) Merge(&totals[items[i].tensor], partials[i]);
  for (size_t ti = 0; ti < sources.size(); ++ti) report.tensors[ti].stats = Finish(totals[ti]);
  return report;
}

}  // namespace lmkit::io
