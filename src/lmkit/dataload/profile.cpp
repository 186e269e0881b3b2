// Performance notes (2-vCPU VM, warm page cache, B=12 T=1024 uint16 → int64):
// - A batch is ~24 KiB gathered and ~192 KiB written; gather + convert take a few tens of microseconds, so the
//   hand-off between producer and consumer (one mutex, two condition variables) is a visible share; batching more work
//   per hand-off was not needed to pass 10× nanoGPT's get_batch.
// - Timing every stage with steady_clock costs ~20 ns a call, negligible next to the work. Storage counters
//   (/proc/self/io, getrusage) are read once per run, not per batch: per-batch reads cost ~10 µs each.
// - cold-each evicts only the span each window can pull in (the window ± read_ahead_kb), not the whole file: whole-file
//   eviction from one thread throws away the pages another thread is faulting in and inflates the reads.
#include "lmkit/dataload/profile.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <tuple>

#include "lmkit/common/ordered_pipeline.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/cuda/dataload_h2d.h"
#include "lmkit/dataload/sampler.h"

namespace lmkit::dataload {
namespace {

struct Slot {
  std::vector<uint8_t> windows;  // B × (T+1) stored tokens
  std::vector<uint8_t> xy;       // x (B×T) then y (B×T), out dtype
  uint64_t batch = UINT64_MAX;
  double sample = 0, gather = 0, convert = 0, stage = 0, h2d = 0, evict = 0;
  Status status;
  VocabCheck vocab;
  std::string first_bad_where;
};

uint64_t ValueAt(const uint8_t* p, OutDtype d, size_t i) {
  switch (d) {
    case OutDtype::kInt64: {
      int64_t v;
      std::memcpy(&v, p + i * 8, 8);
      return static_cast<uint64_t>(v);
    }
    case OutDtype::kInt32: {
      int32_t v;
      std::memcpy(&v, p + i * 4, 4);
      return static_cast<uint64_t>(static_cast<uint32_t>(v));
    }
    case OutDtype::kUint16: {
      uint16_t v;
      std::memcpy(&v, p + i * 2, 2);
      return v;
    }
  }
  return 0;
}

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  return h;
}

// What the consumer "does" with a batch: reads the first and last token of each row of x and y, so the batch is
// really touched, and folds them into a digest that depends only on the batch's content.
uint64_t Digest(const Slot& s, const LoaderConfig& c) {
  const size_t bt = c.batch_size * c.context;
  const uint8_t* x = s.xy.data();
  const uint8_t* y = x + bt * OutDtypeBytes(c.out);
  uint64_t h = s.batch;
  for (size_t r = 0; r < c.batch_size; ++r) {
    h = Mix(h, ValueAt(x, c.out, r * c.context));
    h = Mix(h, ValueAt(x, c.out, r * c.context + c.context - 1));
    h = Mix(h, ValueAt(y, c.out, r * c.context + c.context - 1));
  }
  return h;
}

std::string Percent(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", x * 100);
  return b;
}

std::string Ms(double s) {
  char b[32];
  if (s < 1e-3) {
    std::snprintf(b, sizeof b, "%.0f us", s * 1e6);
  } else {
    std::snprintf(b, sizeof b, "%.2f ms", s * 1e3);
  }
  return b;
}

std::string Ratio(double x) {
  char b[32];
  std::snprintf(b, sizeof b, x >= 10 ? "%.0fx" : "%.2fx", x);
  return b;
}

// Reason and knob for a run with a verdict.
void Diagnose(RunResult* r) {
  const LoaderConfig& c = r->config;
  struct Named {
    const char* name;
    double mean;
  };
  Named stages[] = {{"sample", r->sample.mean_s},
                    {"gather", r->gather.mean_s},
                    {"convert", r->convert.mean_s},
                    {"stage", r->stage.mean_s},
                    {"h2d", r->h2d.mean_s}};
  const Named* top = &stages[0];
  for (const auto& s : stages)
    if (s.mean > top->mean) top = &s;
  const double share = r->produce.mean_s > 0 ? top->mean / r->produce.mean_s : 0;
  const std::string top_text =
      std::string(top->name) + " takes " + Percent(share) + " of the " + Ms(r->produce.mean_s) + " a batch takes";
  // More threads only help while there are CPUs left for them.
  const std::string next_threads =
      c.threads < DefaultThreadCount()
          ? "--threads " + std::to_string(c.threads + 1)
          : std::string("more CPUs (the ") + std::to_string(c.threads) + " loader threads already match the " +
                std::to_string(DefaultThreadCount()) + " CPUs) or less work per batch (--out-dtype uint16)";
  const bool read_around = c.access == Access::kMmap && c.advice == Advice::kNormal;

  if (r->level == InputBound::kNot) {
    r->reason = "the loader makes " + Ratio(r->capacity_ratio) + " the tokens the step eats and the consumer waits " +
                Percent(r->sim.wait_share) + " of step time";
    r->knob = "none needed";
    if (r->cold.available && r->cold_level != InputBound::kNot && c.cache != CacheMode::kColdEach) {
      r->knob = std::string("none on a warm cache; if the data outgrows RAM it projects to ") +
                InputBoundPhrase(r->cold_level) + " (" + Ratio(r->cold.read_amplification) + " read amplification)" +
                (c.access == Access::kMmap || c.advice == Advice::kNormal ? ": use --access pread --advice random"
                                                                          : ": add --threads or faster storage");
    }
    return;
  }
  if (r->capacity_ratio < 1.0) {
    r->reason = "the loader is slower than the step (" + Ratio(r->capacity_ratio) + " of demand); " + top_text;
  } else {
    r->reason = "the loader keeps up on average (" + Ratio(r->capacity_ratio) + " of demand) but slow batches (p99 " +
                Ms(r->produce.p99_s) + ", max " + Ms(r->produce.max_s) + ") outlast the " + Ms(r->demand.step_time_s) +
                " step";
    r->knob = "--prefetch " + std::to_string(std::max(2u, c.prefetch * 2)) + " to absorb the slow batches" +
              (c.threads < c.prefetch ? "" : ", with " + next_threads);
    return;
  }
  const std::string name = top->name;
  if (name == "gather") {
    if (read_around && r->read_amplification > 4) {
      r->knob = "--access pread --advice random: the storage reads " + Ratio(r->read_amplification) +
                " the useful bytes (mmap read-around); pread reads only the pages a window spans, a batch's windows "
                "in parallel";
    } else if (c.access == Access::kMmap && r->read_amplification > 0.5) {
      r->knob =
          "--access pread --advice random: page faults fetch one window at a time; pread with random advice "
          "requests a batch's windows together";
    } else if (c.cache == CacheMode::kCold || c.cache == CacheMode::kColdEach || r->read_amplification > 0.5) {
      r->knob = next_threads + " (more reads in flight), or keep the dataset in RAM / on faster storage";
    } else {
      r->knob = next_threads;
    }
  } else if (name == "convert") {
    r->knob = c.out != OutDtype::kUint16 ? "--out-dtype uint16 (widen on the GPU), or " + next_threads : next_threads;
  } else if (name == "stage") {
    r->knob = c.out != OutDtype::kUint16 ? "--out-dtype uint16: 4x fewer bytes to stage and copy" : next_threads;
  } else if (name == "h2d") {
    r->knob = !c.pinned ? "--pinned: copies from pageable memory go through a driver bounce buffer"
                        : (c.out != OutDtype::kUint16 ? "--out-dtype uint16: 4x fewer bytes over PCIe" : next_threads);
  } else {
    r->knob = next_threads;
  }
}

struct RunContext {
  const DataloadOptions* options;
  const std::vector<TokenShard>* shards;
  const std::vector<FileSystemFacts>* fs;
  const StorageProbe* probe;
  ProgressSink* progress;
};

Result<RunResult> RunOne(const RunContext& ctx, const LoaderConfig& c, std::vector<std::string>* notes) {
  const DataloadOptions& o = *ctx.options;
  const auto& shards = *ctx.shards;
  RunResult r;
  r.config = c;
  if (c.batch_size == 0) return Status::InvalidArgument("--batch-size must be at least 1");
  if (c.threads == 0) return Status::InvalidArgument("--threads must be at least 1");
  if (c.prefetch == 0) return Status::InvalidArgument("--prefetch must be at least 1");
  const unsigned tb = shards[0].token_bytes;
  LMKIT_RETURN_IF_ERROR(CheckOutDtype(c.out, tb));
  LMKIT_ASSIGN_OR_RETURN(r.demand, ResolveDemand(o.demand, c.batch_size * c.context, c.context));

  std::vector<uint64_t> counts;
  std::vector<std::string> names;
  for (const auto& s : shards) {
    counts.push_back(s.tokens);
    names.push_back(s.path);
  }
  LMKIT_ASSIGN_OR_RETURN(WindowSampler sampler, WindowSampler::Create(counts, names, c.context, o.seed));
  LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<TokenReader> reader, TokenReader::Open(shards, c.access, c.advice));

  // Host→device stage: one copier per producer thread, each with its own stream.
  const size_t xy_bytes = 2 * c.batch_size * c.context * OutDtypeBytes(c.out);
  std::vector<std::unique_ptr<cuda::HostToDevice>> h2d(c.threads);
  if (o.cuda) {
    for (unsigned t = 0; t < c.threads; ++t) {
      auto made = cuda::HostToDevice::Create(o.cuda_device, xy_bytes, c.pinned);
      if (!made.ok()) {
        if (made.status().code() != ErrorCode::kUnsupported) return made.status();
        r.h2d_skipped = made.status().message();
        h2d.clear();
        break;
      }
      h2d[t] = std::move(made).value();
    }
    if (!h2d.empty()) r.h2d_ran = true;
  } else {
    r.h2d_skipped = "--device cpu";
    h2d.clear();
  }

  // Page cache preparation, then the counters the run is measured against.
  for (const auto& s : shards) {
    auto res = ResidentBytes(s.path);
    r.resident_before.push_back(res.ok() ? *res : 0);
  }
  if (c.cache == CacheMode::kWarm) {
    for (const auto& s : shards) LMKIT_RETURN_IF_ERROR(WarmFile(s.path));
  } else if (c.cache == CacheMode::kCold || c.cache == CacheMode::kColdEach) {
    LMKIT_RETURN_IF_ERROR(reader->EvictAll());
    uint64_t left = 0;
    for (const auto& s : shards) {
      auto res = ResidentBytes(s.path);
      if (res.ok()) left += *res;
    }
    uint64_t total = 0;
    for (const auto& s : shards) total += s.file_bytes;
    // Some pages may stay (mapped elsewhere, being written); most must go for the mode to mean anything.
    if (total > 0 && left * 2 > total) {
      r.eviction_effective = false;
      notes->push_back("posix_fadvise(DONTNEED) evicted almost nothing on this file system (" + (*ctx.fs)[0].fs_type +
                       "); --cache " + CacheModeName(c.cache) + " measures a warm cache here");
    }
  }

  const uint64_t K = c.prefetch;
  const uint64_t limit = o.steps > 0 ? o.warmup + o.steps : UINT64_MAX;
  const size_t row_bytes = (c.context + 1) * tb;
  const int64_t ra_kb = (*ctx.fs)[0].read_ahead_kb;
  const uint64_t margin = static_cast<uint64_t>(ra_kb > 0 ? ra_kb : 128) * 1024 + PageSize();
  const bool cold_each = c.cache == CacheMode::kColdEach && c.access != Access::kDirect;
  const bool prefetch_windows = c.advice == Advice::kRandom && c.access != Access::kDirect;

  std::vector<Slot> slots(K);
  for (auto& s : slots) {
    s.windows.resize(c.batch_size * row_bytes);
    s.xy.resize(xy_bytes);
  }
  // Per loader thread: its reader scratch, window list and host->device copier.
  std::vector<ReaderScratch> scratches(c.threads);
  std::vector<std::vector<Window>> windows(c.threads, std::vector<Window>(c.batch_size));
  std::atomic<uint64_t> produced{0};
  uint64_t next = 0;
  const IoCounters io0 = ReadIoCounters();
  const double t_start = MonotonicSeconds();

  std::vector<double> v_sample, v_gather, v_convert, v_stage, v_h2d, v_produce, v_evict, v_wait;
  double t_steady = o.warmup == 0 ? t_start : 0;
  double t_end = 0;
  uint64_t checksum = 0;
  double want = t_start;  // when the consumer became ready for the next batch
  // The loader threads produce batches 0, 1, 2, ... into K slots; the consumer takes them in order
  // (RunOrderedPipeline). All c.threads must run: a smaller pool would be measured under this one's name.
  PipelineOptions po;
  po.workers = c.threads;
  po.ring = K;
  po.all_workers = true;
  PipelineStages stages;
  stages.produce = [&](size_t slot) -> Result<bool> {
    if (next >= limit) return false;
    slots[slot].batch = next++;
    return true;
  };
  stages.work = [&](size_t slot, unsigned id) -> Status {
    Slot& s = slots[slot];
    const uint64_t j = s.batch;
    ReaderScratch& scratch = scratches[id];
    std::vector<Window>& wins = windows[id];
    cuda::HostToDevice* copier = h2d.empty() ? nullptr : h2d[id].get();
    Status st;
    double t0 = MonotonicSeconds();
    sampler.SampleBatch(j, c.batch_size, wins.data());
    double t1 = MonotonicSeconds();
    s.sample = t1 - t0;
    s.evict = 0;
    if (cold_each) {
      for (const auto& w : wins) {
        st = reader->EvictRange(w.shard, w.start, c.context + 1, margin);
        if (!st.ok()) break;
      }
      double te = MonotonicSeconds();
      s.evict = te - t1;
      t1 = te;
    }
    if (prefetch_windows) {
      for (const auto& w : wins) reader->Prefetch(w.shard, w.start, c.context + 1);
    }
    for (size_t i = 0; i < wins.size() && st.ok(); ++i) {
      st = reader->Read(wins[i].shard, wins[i].start, c.context + 1, s.windows.data() + i * row_bytes, &scratch);
    }
    double t2 = MonotonicSeconds();
    s.gather = t2 - t1;
    s.vocab = VocabCheck{};
    s.first_bad_where.clear();
    ConvertWindows(s.windows.data(), tb, c.batch_size, c.context, c.out, s.xy.data(), s.xy.data() + xy_bytes / 2,
                   o.vocab_size, &s.vocab);
    if (s.vocab.first_bad_row >= 0) {
      const Window& w = wins[static_cast<size_t>(s.vocab.first_bad_row)];
      s.first_bad_where = shards[w.shard].path + " token " + std::to_string(w.start + s.vocab.first_bad_col);
    }
    double t3 = MonotonicSeconds();
    s.convert = t3 - t2;
    s.stage = 0;
    s.h2d = 0;
    if (copier != nullptr && st.ok()) {
      cuda::HostToDeviceTiming ht;
      st = copier->Copy(s.xy.data(), xy_bytes, &ht);
      s.stage = ht.stage_s;
      s.h2d = ht.copy_s;
    }
    produced.fetch_add(1);
    return st;
  };
  stages.consume = [&](size_t slot_index) -> Result<bool> {
    const uint64_t s = r.batches;
    const Slot& slot = slots[slot_index];
    const double got = MonotonicSeconds();
    checksum = Mix(checksum, Digest(slot, c));
    if (o.vocab_size > 0) {
      r.vocab.ids_checked += slot.vocab.ids_checked;
      r.vocab.out_of_range += slot.vocab.out_of_range;
      r.vocab.max_id = std::max(r.vocab.max_id, slot.vocab.max_id);
      if (r.vocab.first_bad_row < 0 && slot.vocab.first_bad_row >= 0) {
        r.vocab.first_bad_row = slot.vocab.first_bad_row;
        r.vocab.first_bad_col = slot.vocab.first_bad_col;
        r.vocab.first_bad_id = slot.vocab.first_bad_id;
        r.vocab_first_bad_where = slot.first_bad_where;
      }
    }
    if (s == 0) r.first_batch_s = got - t_start;
    if (s >= o.warmup) {
      v_sample.push_back(slot.sample);
      v_gather.push_back(slot.gather);
      v_convert.push_back(slot.convert);
      v_stage.push_back(slot.stage);
      v_h2d.push_back(slot.h2d);
      v_evict.push_back(slot.evict);
      v_produce.push_back(slot.sample + slot.gather + slot.convert + slot.stage + slot.h2d);
      v_wait.push_back(got - want);
    }
    r.batches = s + 1;
    if (ctx.progress != nullptr) ctx.progress->Update(r.batches);
    const double now = MonotonicSeconds();
    want = now;
    if (s + 1 == o.warmup) t_steady = now;
    if ((o.steps > 0 && r.batches >= o.warmup + o.steps) ||
        (o.steps == 0 && s + 1 > o.warmup && now - t_steady >= o.duration_s)) {
      t_end = now;
      return false;
    }
    return true;
  };
  if (ctx.progress != nullptr) ctx.progress->Begin("dataload", o.steps > 0 ? o.warmup + o.steps : 0, "batches");
  const Status failure = RunOrderedPipeline(po, stages).status();
  if (ctx.progress != nullptr) ctx.progress->Finish();
  if (!failure.ok()) return failure;
  const IoCounters io1 = ReadIoCounters();

  r.warmup_s = t_steady - t_start;
  r.steady_batches = v_produce.size();
  r.steady_s = t_end - t_steady;
  r.checksum = checksum;
  if (r.steady_s > 0) {
    r.batches_per_s = static_cast<double>(r.steady_batches) / r.steady_s;
    r.tokens_per_s = r.batches_per_s * static_cast<double>(c.batch_size * c.context);
  }
  r.sample = Summarize(v_sample);
  r.gather = Summarize(v_gather);
  r.convert = Summarize(v_convert);
  r.stage = Summarize(v_stage);
  r.h2d = Summarize(v_h2d);
  r.evict = Summarize(v_evict);
  r.wait = Summarize(v_wait);
  r.produce = Summarize(v_produce);
  r.produced_batches = produced.load();
  r.useful_bytes = r.produced_batches * c.batch_size * row_bytes;
  r.read_bytes = io1.read_bytes - io0.read_bytes;
  r.read_amplification = r.useful_bytes > 0 ? static_cast<double>(r.read_bytes) / r.useful_bytes : 0;
  r.minor_faults = io1.minor_faults - io0.minor_faults;
  r.major_faults = io1.major_faults - io0.major_faults;
  reader.reset();  // drop our mappings so mincore sees the page cache, not our page tables
  for (const auto& s : shards) {
    auto res = ResidentBytes(s.path);
    r.resident_after.push_back(res.ok() ? *res : 0);
  }

  // Cold-cache projection: measured when this run was cold per batch, modelled otherwise.
  const double cpu_batch_s = r.sample.mean_s + r.convert.mean_s + r.stage.mean_s + r.h2d.mean_s;
  if (c.cache == CacheMode::kColdEach && r.eviction_effective) {
    r.cold.available = true;
    r.cold.tokens_per_s = r.tokens_per_s;
    r.cold.read_amplification = r.read_amplification;
    r.cold.bytes_per_window = r.read_amplification * static_cast<double>(row_bytes);
    r.cold.batch_s = r.produce.mean_s;
    r.cold.model = "measured (--cache cold-each)";
  } else {
    r.cold =
        ProjectColdCache(*ctx.probe, c.access, c.advice, c.batch_size, c.context, tb, ra_kb, c.threads, cpu_batch_s);
  }

  if (r.demand.given && !v_produce.empty()) {
    // Replays the measured per-batch times (in consumption order) at the demand's step time.
    const uint64_t steps = std::max<uint64_t>(2000, v_produce.size());
    r.sim = SimulateConsumer(v_produce, c.threads, c.prefetch, r.demand.step_time_s, steps);
    r.level = ClassifyWaitShare(r.sim.wait_share);
    r.capacity_ratio = r.tokens_per_s / r.demand.tokens_per_s;
    if (r.cold.available && r.cold.tokens_per_s > 0) {
      // A constant per-batch time per thread that gives the projected throughput.
      const double per_batch = static_cast<double>(c.threads * c.batch_size * c.context) / r.cold.tokens_per_s;
      ConsumerSimulation cs = SimulateConsumer({per_batch}, c.threads, c.prefetch, r.demand.step_time_s, 2000);
      r.cold_wait_share = cs.wait_share;
      r.cold_level = ClassifyWaitShare(cs.wait_share);
    }
    Diagnose(&r);
  }
  return r;
}

}  // namespace

std::string ConfigValue(const LoaderConfig& c, const std::string& knob) {
  if (knob == "threads") return "threads=" + std::to_string(c.threads);
  if (knob == "prefetch") return "prefetch=" + std::to_string(c.prefetch);
  if (knob == "access") return std::string("access=") + AccessName(c.access);
  if (knob == "advice") return std::string("advice=") + AdviceName(c.advice);
  if (knob == "cache") return std::string("cache=") + CacheModeName(c.cache);
  if (knob == "batch-size") return "batch-size=" + std::to_string(c.batch_size);
  if (knob == "context-length") return "context-length=" + std::to_string(c.context);
  if (knob == "out-dtype") return std::string("out-dtype=") + OutDtypeName(c.out);
  if (knob == "memory") return std::string("memory=") + (c.pinned ? "pinned" : "pageable");
  return knob;
}

StageStats Summarize(std::vector<double> v) {
  StageStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.count = v.size();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean_s = sum / static_cast<double>(v.size());
  auto rank = [&](double q) {
    size_t i = static_cast<size_t>(q * static_cast<double>(v.size()));
    return v[std::min(i, v.size() - 1)];
  };
  s.p50_s = rank(0.50);
  s.p90_s = rank(0.90);
  s.p99_s = rank(0.99);
  s.max_s = v.back();
  return s;
}

Result<SweepAxis> ParseSweepAxis(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return Status::InvalidArgument("--sweep takes NAME=V1,V2,... (got '" + text + "')");
  }
  SweepAxis a;
  a.name = text.substr(0, eq);
  if (a.name == "b" || a.name == "batch") a.name = "batch-size";
  if (a.name == "t" || a.name == "context") a.name = "context-length";
  static const char* kNames[] = {"threads",    "prefetch",       "access",    "advice", "cache",
                                 "batch-size", "context-length", "out-dtype", "memory"};
  bool known = false;
  for (const char* n : kNames) known = known || a.name == n;
  if (!known) {
    return Status::InvalidArgument(
        "--sweep: unknown knob '" + a.name +
        "' (knobs: threads, prefetch, access, advice, cache, batch-size, context-length, out-dtype, "
        "memory)");
  }
  std::string rest = text.substr(eq + 1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    if (comma == std::string::npos) comma = rest.size();
    std::string v = rest.substr(pos, comma - pos);
    if (v.empty()) return Status::InvalidArgument("--sweep " + a.name + ": empty value in '" + rest + "'");
    LoaderConfig probe;
    LMKIT_RETURN_IF_ERROR(ApplyAxisValue(a.name, v, &probe));
    a.values.push_back(v);
    pos = comma + 1;
  }
  return a;
}

Status ApplyAxisValue(const std::string& name, const std::string& value, LoaderConfig* c) {
  auto bad = [&] { return Status::InvalidArgument("--sweep " + name + ": invalid value '" + value + "'"); };
  auto number = [&](uint64_t* out) -> bool {
    if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos || value.size() > 12) return false;
    *out = std::stoull(value);
    return *out > 0;
  };
  uint64_t n = 0;
  if (name == "threads" || name == "prefetch") {
    if (!number(&n) || n > 4096) return bad();
    (name == "threads" ? c->threads : c->prefetch) = static_cast<unsigned>(n);
  } else if (name == "batch-size" || name == "context-length") {
    if (!number(&n)) return bad();
    (name == "batch-size" ? c->batch_size : c->context) = n;
  } else if (name == "access") {
    if (value == "mmap")
      c->access = Access::kMmap;
    else if (value == "pread")
      c->access = Access::kPread;
    else if (value == "direct")
      c->access = Access::kDirect;
    else
      return bad();
  } else if (name == "advice") {
    if (value == "normal")
      c->advice = Advice::kNormal;
    else if (value == "random")
      c->advice = Advice::kRandom;
    else
      return bad();
  } else if (name == "cache") {
    if (value == "as-is")
      c->cache = CacheMode::kAsIs;
    else if (value == "warm")
      c->cache = CacheMode::kWarm;
    else if (value == "cold")
      c->cache = CacheMode::kCold;
    else if (value == "cold-each")
      c->cache = CacheMode::kColdEach;
    else
      return bad();
  } else if (name == "out-dtype") {
    if (value == "int64")
      c->out = OutDtype::kInt64;
    else if (value == "int32")
      c->out = OutDtype::kInt32;
    else if (value == "uint16")
      c->out = OutDtype::kUint16;
    else
      return bad();
  } else if (name == "memory") {
    if (value == "pinned")
      c->pinned = true;
    else if (value == "pageable")
      c->pinned = false;
    else
      return bad();
  } else {
    return Status::InvalidArgument("--sweep: unknown knob '" + name + "'");
  }
  return Status::Ok();
}

Result<DataloadReport> RunDataload(const DataloadOptions& o, ProgressSink* progress) {
  if (o.steps == 0 && !(o.duration_s > 0)) return Status::InvalidArgument("--duration must be positive");
  DataloadReport rep;
  LMKIT_ASSIGN_OR_RETURN(rep.shards, OpenTokenShards(o.paths, o.dtype, o.vocab_size));
  for (const auto& s : rep.shards) rep.fs.push_back(FileSystemFactsFor(s.path));
  rep.device = o.cuda ? "cuda:" + std::to_string(o.cuda_device) : "cpu";
  // The largest shard gives the most representative random reads.
  size_t biggest = 0;
  for (size_t i = 1; i < rep.shards.size(); ++i)
    if (rep.shards[i].file_bytes > rep.shards[biggest].file_bytes) biggest = i;
  rep.probe = ProbeStorage(rep.shards[biggest], o.seed);

  // The sweep's points: the cartesian product of its axes, the first axis outermost.
  std::vector<LoaderConfig> points{o.config};
  for (const auto& axis : o.sweep) {
    std::vector<LoaderConfig> next;
    for (const auto& base : points) {
      for (const auto& v : axis.values) {
        LoaderConfig c = base;
        LMKIT_RETURN_IF_ERROR(ApplyAxisValue(axis.name, v, &c));
        next.push_back(c);
      }
    }
    points = std::move(next);
  }
  rep.sweep = !o.sweep.empty();
  for (const auto& axis : o.sweep) rep.sweep_axes.push_back(axis.name);
  RunContext ctx{&o, &rep.shards, &rep.fs, &rep.probe, progress};
  for (const auto& c : points) {
    LMKIT_ASSIGN_OR_RETURN(RunResult r, RunOne(ctx, c, &rep.notes));
    if (!r.h2d_skipped.empty() && o.cuda) {
      std::string note = "host->device stage skipped: " + r.h2d_skipped;
      if (std::find(rep.notes.begin(), rep.notes.end(), note) == rep.notes.end()) rep.notes.push_back(note);
    }
    rep.runs.push_back(std::move(r));
  }
  // De-duplicate notes (a sweep repeats them).
  std::vector<std::string> uniq;
  for (auto& n : rep.notes)
    if (std::find(uniq.begin(), uniq.end(), n) == uniq.end()) uniq.push_back(n);
  rep.notes = std::move(uniq);

  if (rep.sweep && !rep.runs.empty()) {
    // With a demand: the least waiting; among points within half a point of it, the fewest threads, then the
    // shallowest prefetch, then the most tokens/s. Without: the most tokens/s, preferring fewer threads within 5%.
    const bool demand = rep.runs[0].demand.given;
    double best_wait = 1e300, best_tps = 0;
    for (const auto& r : rep.runs) {
      best_wait = std::min(best_wait, r.sim.wait_share);
      best_tps = std::max(best_tps, r.tokens_per_s);
    }
    int pick = -1;
    for (size_t i = 0; i < rep.runs.size(); ++i) {
      const auto& r = rep.runs[i];
      const bool ok = demand ? r.sim.wait_share <= best_wait + 0.005 : r.tokens_per_s >= 0.95 * best_tps;
      if (!ok) continue;
      if (pick < 0) {
        pick = static_cast<int>(i);
        continue;
      }
      const auto& p = rep.runs[static_cast<size_t>(pick)];
      auto key = [](const RunResult& x) {
        return std::make_tuple(x.config.threads, x.config.prefetch, -x.tokens_per_s);
      };
      if (key(r) < key(p)) pick = static_cast<int>(i);
    }
    rep.recommended = pick;
    if (pick >= 0) {
      const RunResult& r = rep.runs[static_cast<size_t>(pick)];
      std::string knobs;
      for (const auto& axis : rep.sweep_axes) {
        if (!knobs.empty()) knobs += ' ';
        knobs += ConfigValue(r.config, axis);
      }
      char buf[160];
      if (demand) {
        std::snprintf(buf, sizeof buf, ": %s (waits %.1f%% of step time, %.1f M tokens/s, %.2fx demand)",
                      InputBoundPhrase(r.level), r.sim.wait_share * 100, r.tokens_per_s / 1e6, r.capacity_ratio);
      } else {
        std::snprintf(buf, sizeof buf, ": %.1f M tokens/s (no demand given, so the fastest with the fewest threads)",
                      r.tokens_per_s / 1e6);
      }
      rep.recommendation = knobs + buf;
    }
  }
  return rep;
}

InputBound GateLevel(const DataloadReport& report) {
  if (report.runs.empty()) return InputBound::kUnknown;
  if (report.recommended >= 0) return report.runs[static_cast<size_t>(report.recommended)].level;
  return report.runs[0].level;
}

const char* CacheModeName(CacheMode c) {
  switch (c) {
    case CacheMode::kAsIs:
      return "as-is";
    case CacheMode::kWarm:
      return "warm";
    case CacheMode::kCold:
      return "cold";
    case CacheMode::kColdEach:
      return "cold-each";
  }
  return "?";
}

}  // namespace lmkit::dataload
