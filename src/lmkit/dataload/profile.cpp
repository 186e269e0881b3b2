// Performance notes: storage counters (/proc/self/io, getrusage) are read once per run, not per batch: per-batch reads
// cost ~10 µs each. Batch notes: batch_builder.cpp. A batch is a few tens of microseconds of work (B=12 T=1024), so
// the pipeline's hand-off (one mutex, two condition variables) is a visible share of it; batching more work per
// hand-off was not needed to pass 10x nanoGPT's get_batch.
#include "lmkit/dataload/profile.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>
#include <tuple>
#include <unordered_set>

#include "lmkit/common/ordered_pipeline.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/common/units.h"
#include "lmkit/cuda/dataload_h2d.h"
#include "lmkit/dataload/batch_builder.h"
#include "lmkit/dataload/judge.h"
#include "lmkit/dataload/sampler.h"

namespace lmkit::dataload {
namespace {

__extension__ typedef unsigned __int128 U128;

struct RunContext {
  const DataloadRequest* options;
  const std::vector<TokenShard>* shards;
  const std::vector<FileSystemFacts>* fs;
  const StorageProbe* probe;
  ProgressSink* progress;
};

// Per-batch samples of the steady state, in consumption order.
struct Samples {
  std::vector<double> sample, gather, convert, stage, h2d, produce, evict, wait;
};

Status ValidateConfig(const LoaderConfig& c, unsigned token_bytes) {
  if (c.batch_size == 0) return Status::InvalidArgument(Field("batch_size") + " must be at least 1");
  if (c.threads == 0) return Status::InvalidArgument(Field("threads") + " must be at least 1");
  if (c.prefetch == 0) return Status::InvalidArgument(Field("prefetch") + " must be at least 1");
  return CheckOutDtype(c.out, token_bytes);
}

// The ring's buffers must fit this machine: B × (T+1) × token size, plus x and y, times the batches in flight.
Status CheckBufferMemory(const LoaderConfig& c, unsigned token_bytes) {
  const U128 per_batch =
      static_cast<U128>(c.batch_size) * ((static_cast<U128>(c.context_length) + 1) * token_bytes +
                                         2 * static_cast<U128>(c.context_length) * OutDtypeBytes(c.out));
  const U128 need = per_batch * c.prefetch;
  const uint64_t total = TotalMemoryBytes();
  const U128 limit = total > 0 ? total : UINT64_MAX;
  if (need <= limit) return Status::Ok();
  const double need_d = static_cast<double>(need);
  return Status::InvalidArgument(Field("batch_size") + " " + std::to_string(c.batch_size) + " with " +
                                 Field("context_length") + " " + std::to_string(c.context_length) + " and " +
                                 Field("prefetch") + " " + std::to_string(c.prefetch) + " needs " +
                                 FormatBytes(need_d) + " of batch buffers, more than this machine's " +
                                 FormatBytes(static_cast<double>(total)) + " of memory");
}

// One copier per producer thread, each with its own stream; none (and the reason) without a device.
Status OpenCopiers(const DataloadRequest& o, const LoaderConfig& c, size_t xy_bytes,
                   std::vector<std::unique_ptr<cuda::HostToDevice>>* h2d, RunResult* r) {
  h2d->clear();
  if (!o.cuda) {
    r->h2d_skipped = Field("device") + " cpu";
    return Status::Ok();
  }
  for (unsigned t = 0; t < c.threads; ++t) {
    auto made = cuda::HostToDevice::Create(o.cuda_device, xy_bytes, c.pinned);
    if (!made.ok()) {
      if (made.status().code() != ErrorCode::kUnsupported) return made.status();
      r->h2d_skipped = made.status().message();
      h2d->clear();
      return Status::Ok();
    }
    h2d->push_back(std::move(made).value());
  }
  r->h2d_ran = true;
  return Status::Ok();
}

// Page cache preparation; records residency before and whether eviction took.
Status PrepareCache(const RunContext& ctx, const LoaderConfig& c, const TokenReader& reader, RunResult* r,
                    std::vector<std::string>* notes) {
  const auto& shards = *ctx.shards;
  for (const auto& s : shards) {
    auto res = ResidentBytes(s.path);
    r->resident_before.push_back(res.ok() ? *res : 0);
  }
  if (c.cache == CacheMode::kWarm) {
    for (const auto& s : shards) LMKIT_RETURN_IF_ERROR(WarmFile(s.path));
  } else if (c.cache == CacheMode::kCold || c.cache == CacheMode::kColdEach) {
    LMKIT_RETURN_IF_ERROR(reader.EvictAll());
    uint64_t left = 0, total = 0;
    for (const auto& s : shards) {
      auto res = ResidentBytes(s.path);
      if (res.ok()) left += *res;
      total += s.file_bytes;
    }
    // Some pages may stay (mapped elsewhere, being written); most must go for the mode to mean anything.
    if (total > 0 && left * 2 > total) {
      r->eviction_effective = false;
      notes->push_back("posix_fadvise(DONTNEED) evicted almost nothing on this file system (" + (*ctx.fs)[0].fs_type +
                       "); " + Field("cache") + " " + CacheModeName(c.cache) + " measures a warm cache here");
    }
  }
  return Status::Ok();
}

// Folds one batch's vocabulary check into the run's, counting each out-of-range position once.
void AddVocab(const Batch& b, uint64_t context, const std::vector<TokenShard>& shards,
              std::unordered_set<uint64_t>* seen, VocabResult* v) {
  v->windows_checked += b.starts.size();
  v->ids_checked += b.vocab.ids_checked;
  v->max_id = std::max(v->max_id, b.vocab.max_id);
  for (size_t i = 0; i < b.vocab.bad.size(); ++i) {
    const Window& w = b.starts[static_cast<size_t>(b.vocab.bad[i] / (context + 1))];
    const uint64_t pos = w.start + b.vocab.bad[i] % (context + 1);
    if (v->first_bad_where.empty()) {
      v->first_bad_id = b.vocab.bad_ids[i];
      v->first_bad_where = shards[w.shard].path + " token " + std::to_string(pos);
    }
    if (seen->size() >= kMaxOutOfRangePositions) {
      v->out_of_range_capped = true;
      continue;
    }
    // Shard index in the top 16 bits: a shard of 2^48 tokens would be a 512 TiB file.
    if (seen->insert((static_cast<uint64_t>(w.shard) << 48) | pos).second) ++v->out_of_range;
  }
}

// Runs the pipeline and fills the run's throughput, stage times, storage counters, vocabulary check and checksum.
Status Measure(const RunContext& ctx, const LoaderConfig& c, const BatchBuilder& builder,
               const std::vector<std::unique_ptr<cuda::HostToDevice>>& h2d, std::unique_ptr<TokenReader>* reader,
               RunResult* r, Samples* v) {
  const DataloadRequest& o = *ctx.options;
  const unsigned K = c.prefetch;
  std::vector<Batch> slots(K);
  try {
    for (auto& s : slots) builder.Allocate(&s);
  } catch (const std::bad_alloc&) {
    return Status::Io("", "out of memory for " + std::to_string(K) + " batch buffers of " +
                              FormatBytes(static_cast<double>(builder.SlotBytes())));
  }
  std::vector<ReaderScratch> scratch(c.threads);
  std::unordered_set<uint64_t> bad_positions;
  const IoCounters io0 = ReadIoCounters();
  const double t_start = MonotonicSeconds();
  double t_steady = o.warmup == 0 ? t_start : 0, t_end = 0;
  uint64_t checksum = 0;

  // Batch n is built in slot n % K by a worker; the calling thread is the training loop, and its wait for batch n is
  // the time from the end of its step on batch n-1 (the start of the run for batch 0) to batch n's hand-over.
  const uint64_t limit = o.steps > 0 ? o.warmup + o.steps : UINT64_MAX;
  std::vector<uint64_t> slot_batch(K);
  uint64_t next_batch = 0;
  std::atomic<uint64_t> produced{0};
  double step_end = 0;
  PipelineStages stages;
  stages.produce = [&](size_t slot) -> Result<bool> {
    if (next_batch == limit) return false;
    slot_batch[slot] = next_batch++;
    return true;
  };
  stages.work = [&](size_t slot, unsigned worker) {
    Status st =
        builder.Build(slot_batch[slot], &slots[slot], &scratch[worker], h2d.empty() ? nullptr : h2d[worker].get());
    produced.fetch_add(1, std::memory_order_relaxed);
    return st;
  };
  stages.consume = [&](size_t slot) -> Result<bool> {
    const double wait_s = MonotonicSeconds() - step_end;
    const uint64_t s = slot_batch[slot];
    const Batch& b = slots[slot];
    checksum = builder.FoldDigest(checksum, s, b);
    if (o.vocab_size > 0) AddVocab(b, c.context_length, *ctx.shards, &bad_positions, &r->vocab);
    if (s == 0) r->first_batch_s = MonotonicSeconds() - t_start;
    if (s >= o.warmup) {
      const BatchTimes& t = b.times;
      v->sample.push_back(t.sample);
      v->gather.push_back(t.gather);
      v->convert.push_back(t.convert);
      v->stage.push_back(t.stage);
      v->h2d.push_back(t.h2d);
      v->evict.push_back(t.evict);
      v->produce.push_back(t.Produce());
      v->wait.push_back(wait_s);
    }
    r->batches = s + 1;
    if (ctx.progress != nullptr) ctx.progress->Update(r->batches);
    const double now = MonotonicSeconds();
    if (s + 1 == o.warmup) t_steady = now;
    const bool done =
        o.steps > 0 ? r->batches >= o.warmup + o.steps : s + 1 > o.warmup && now - t_steady >= o.duration_s;
    if (done) t_end = now;
    step_end = MonotonicSeconds();
    return !done;
  };

  if (ctx.progress != nullptr) ctx.progress->Begin("dataload", o.steps > 0 ? limit : 0, "batches");
  PipelineOptions po;
  po.workers = c.threads;
  po.ring = K;
  po.all_workers = true;  // fewer loader threads than asked would measure another loader
  step_end = MonotonicSeconds();
  const Result<PipelineRun> run = RunOrderedPipeline(po, stages);
  if (ctx.progress != nullptr) ctx.progress->Finish();
  LMKIT_RETURN_IF_ERROR(run.status());
  const IoCounters io1 = ReadIoCounters();

  r->checksum = checksum;
  r->warmup_s = t_steady - t_start;
  r->steady_batches = v->produce.size();
  r->steady_s = t_end - t_steady;
  if (r->steady_s > 0) {
    r->batches_per_s = static_cast<double>(r->steady_batches) / r->steady_s;
    r->tokens_per_s = r->batches_per_s * static_cast<double>(c.batch_size * c.context_length);
  }
  r->sample = Summarize(v->sample);
  r->gather = Summarize(v->gather);
  r->convert = Summarize(v->convert);
  r->stage = Summarize(v->stage);
  r->h2d = Summarize(v->h2d);
  r->evict = Summarize(v->evict);
  r->wait = Summarize(v->wait);
  r->produce = Summarize(v->produce);
  const uint64_t row_bytes = (c.context_length + 1) * (*ctx.shards)[0].token_bytes;
  r->produced_batches = produced.load();
  r->useful_bytes = r->produced_batches * c.batch_size * row_bytes;
  r->read_bytes = io1.read_bytes - io0.read_bytes;
  r->read_amplification = r->useful_bytes > 0 ? static_cast<double>(r->read_bytes) / r->useful_bytes : 0;
  r->minor_faults = io1.minor_faults - io0.minor_faults;
  r->major_faults = io1.major_faults - io0.major_faults;
  reader->reset();  // drop our mappings so mincore sees the page cache, not our page tables
  for (const auto& s : *ctx.shards) {
    auto res = ResidentBytes(s.path);
    r->resident_after.push_back(res.ok() ? *res : 0);
  }
  return Status::Ok();
}

// Cold-cache throughput: measured when this run was cold for every batch, modelled from the storage probe otherwise.
void ColdCache(const RunContext& ctx, const LoaderConfig& c, RunResult* r) {
  const unsigned tb = (*ctx.shards)[0].token_bytes;
  if (c.cache == CacheMode::kColdEach && r->eviction_effective) {
    r->cold.available = true;
    r->cold.tokens_per_s = r->tokens_per_s;
    r->cold.read_amplification = r->read_amplification;
    r->cold.bytes_per_window = r->read_amplification * static_cast<double>((c.context_length + 1) * tb);
    r->cold.batch_s = r->produce.mean_s;
    r->cold.model = "measured (" + Field("cache") + " cold-each)";
    return;
  }
  const double cpu_batch_s = r->sample.mean_s + r->convert.mean_s + r->stage.mean_s + r->h2d.mean_s;
  r->cold = ProjectColdCache(*ctx.probe, c.access, c.advice, c.batch_size, c.context_length, tb,
                             (*ctx.fs)[0].read_ahead_kb, c.threads, cpu_batch_s);
}

Result<RunResult> RunOne(const RunContext& ctx, const LoaderConfig& c, std::vector<std::string>* notes) {
  const DataloadRequest& o = *ctx.options;
  const auto& shards = *ctx.shards;
  RunResult r;
  r.config = c;
  const unsigned tb = shards[0].token_bytes;
  LMKIT_RETURN_IF_ERROR(ValidateConfig(c, tb));
  std::vector<uint64_t> counts;
  std::vector<std::string> names;
  for (const auto& s : shards) {
    counts.push_back(s.tokens);
    names.push_back(s.path);
  }
  // The sampler bounds T by the shards, and the memory check bounds B × T: no size computed below can overflow.
  LMKIT_ASSIGN_OR_RETURN(WindowSampler sampler, WindowSampler::Create(counts, names, c.context_length, o.seed));
  LMKIT_RETURN_IF_ERROR(CheckBufferMemory(c, tb));
  LMKIT_ASSIGN_OR_RETURN(r.demand, ResolveDemand(o.demand, c.batch_size * c.context_length, c.context_length));
  LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<TokenReader> reader, TokenReader::Open(shards, c.access, c.advice));
  std::vector<std::unique_ptr<cuda::HostToDevice>> h2d;
  const int64_t ra_kb = (*ctx.fs)[0].read_ahead_kb;
  const uint64_t margin = static_cast<uint64_t>(ra_kb > 0 ? ra_kb : 128) * 1024 + PageSize();
  const BatchBuilder builder(c, sampler, *reader, tb, o.vocab_size, margin);
  LMKIT_RETURN_IF_ERROR(OpenCopiers(o, c, 2 * c.batch_size * c.context_length * OutDtypeBytes(c.out), &h2d, &r));
  LMKIT_RETURN_IF_ERROR(PrepareCache(ctx, c, *reader, &r, notes));
  Samples samples;
  LMKIT_RETURN_IF_ERROR(Measure(ctx, c, builder, h2d, &reader, &r, &samples));
  ColdCache(ctx, c, &r);
  Judge(samples.produce, DefaultThreadCount(), &r);
  return r;
}

// The sweep's points: the cartesian product of its axes, the first axis outermost.
Result<std::vector<LoaderConfig>> SweepPoints(const DataloadRequest& o) {
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
  return points;
}

// With a demand: the least waiting; among points within half a point of it, the fewest threads, then the shallowest
// prefetch, then the most tokens/s. Without: the most tokens/s, preferring fewer threads within 5%.
int Recommend(const std::vector<RunResult>& runs) {
  if (runs.empty()) return -1;
  const bool demand = runs[0].demand.given;
  double best_wait = 1e300, best_tps = 0;
  for (const auto& r : runs) {
    best_wait = std::min(best_wait, r.sim.wait_share);
    best_tps = std::max(best_tps, r.tokens_per_s);
  }
  int pick = -1;
  auto key = [](const RunResult& x) { return std::make_tuple(x.config.threads, x.config.prefetch, -x.tokens_per_s); };
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const bool ok = demand ? r.sim.wait_share <= best_wait + 0.005 : r.tokens_per_s >= 0.95 * best_tps;
    if (ok && (pick < 0 || key(r) < key(runs[static_cast<size_t>(pick)]))) pick = static_cast<int>(i);
  }
  return pick;
}

}  // namespace

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

Result<DataloadResult> RunDataload(const DataloadRequest& o, ProgressSink* progress) {
  if (o.steps == 0 && !(o.duration_s > 0)) return Status::InvalidArgument(Field("duration_s") + " must be positive");
  DataloadResult rep;
  LMKIT_ASSIGN_OR_RETURN(rep.shards, OpenTokenShards(o.paths, o.dtype, o.vocab_size));
  for (const auto& s : rep.shards) rep.fs.push_back(FileSystemFactsFor(s.path));
  rep.device = o.cuda ? "cuda:" + std::to_string(o.cuda_device) : "cpu";
  // The largest shard gives the most representative random reads.
  size_t biggest = 0;
  for (size_t i = 1; i < rep.shards.size(); ++i)
    if (rep.shards[i].file_bytes > rep.shards[biggest].file_bytes) biggest = i;
  rep.probe = ProbeStorage(rep.shards[biggest], o.seed);

  LMKIT_ASSIGN_OR_RETURN(std::vector<LoaderConfig> points, SweepPoints(o));
  rep.sweep = !o.sweep.empty();
  for (const auto& axis : o.sweep) rep.sweep_axes.push_back(axis.name);
  RunContext ctx{&o, &rep.shards, &rep.fs, &rep.probe, progress};
  for (const auto& c : points) {
    LMKIT_ASSIGN_OR_RETURN(RunResult r, RunOne(ctx, c, &rep.notes));
    if (!r.h2d_skipped.empty() && o.cuda) rep.notes.push_back("host->device stage skipped: " + r.h2d_skipped);
    rep.runs.push_back(std::move(r));
  }
  // A sweep repeats its notes: say each once.
  std::vector<std::string> uniq;
  for (auto& n : rep.notes)
    if (std::find(uniq.begin(), uniq.end(), n) == uniq.end()) uniq.push_back(n);
  rep.notes = std::move(uniq);
  if (rep.sweep) rep.recommended = Recommend(rep.runs);
  return rep;
}

InputBound GateLevel(const DataloadResult& report) {
  if (report.runs.empty()) return InputBound::kUnknown;
  if (report.recommended >= 0) return report.runs[static_cast<size_t>(report.recommended)].level;
  return report.runs[0].level;
}

}  // namespace lmkit::dataload
