// Reads a torch.profiler Chrome trace — what `prof.export_chrome_trace(path)` and
// `torch.profiler.tensorboard_trace_handler(dir, use_gzip=...)` write — keeping only the events the input-pipeline
// analysis needs (trace.h).
//
// Two layouts are read: the Kineto document of PyTorch ≥ 1.8 builds with Kineto (an object with "traceEvents",
// "deviceProperties", ...; categories cpu_op, user_annotation, cuda_runtime, kernel, gpu_memcpy — or Kernel, Memcpy,
// Runtime in early versions) and the legacy JSON array of builds without Kineto (Debian's python3-torch 1.13: events
// with "name", "ts", "dur", "pid": "CPU functions", no category). The file may be gzipped (any name; zlib detects it).
// The document is parsed as a stream (nlohmann's SAX interface): memory grows with the events kept, not with the
// file, so multi-gigabyte traces of long runs are fine.
//
// Contract: ReadTrace opens `path` read-only. Errors name the file: kNotFound, kIo (unreadable, a broken gzip stream),
// kInvalidInput (not a regular file; not JSON, with the byte offset; JSON but not a Chrome trace; more than
// kMaxTraceBytes of JSON). Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit::dataload {

inline constexpr uint64_t kMaxTraceBytes = uint64_t{64} << 30;  // decompressed JSON

enum class TraceEventKind : uint8_t {
  kStep,            // ProfilerStep#N (a record_function around one training step)
  kDataLoaderNext,  // enumerate(DataLoader)#<iterator class>.__next__
  kCollate,         // aten::stack / aten::cat (default_collate builds batches with them)
  kPin,             // aten::pin_memory / aten::_pin_memory
  kCopyCall,        // a host-side cudaMemcpy* / cuMemcpy* call (runtime or driver API)
  kHtoD,            // a host-to-device copy on the GPU ("Memcpy HtoD (Pageable -> Device)")
  kKernel,          // a GPU kernel
};

struct TraceEvent {
  TraceEventKind kind;
  bool pageable = false;         // kHtoD from pageable memory; kDataLoaderNext of _SingleProcessDataLoaderIter
  uint32_t thread = 0;           // index into TraceEvents::threads
  int64_t step = -1;             // N of ProfilerStep#N
  int64_t correlation = -1;      // args.correlation (links a kCopyCall to its kHtoD), -1 when absent
  uint64_t bytes = 0;            // kHtoD: args.bytes
  double ts_us = 0, dur_us = 0;  // start and duration, microseconds on the trace's clock
};

struct TraceEvents {
  bool kineto = false;               // the Kineto document (else the legacy array)
  uint64_t events_read = 0;          // every event of the trace, kept or not
  std::vector<TraceEvent> events;    // the kept ones, in file order
  std::vector<std::string> threads;  // "pid/tid"
  std::vector<std::string> gpus;     // deviceProperties[].name
  std::string dataloader_name;       // the first enumerate(DataLoader)#... name met
};

Result<TraceEvents> ReadTrace(const std::string& path);

}  // namespace lmkit::dataload
