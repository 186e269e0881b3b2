// Reading torch.profiler traces: both layouts, gzipped or not, and one-line errors for what is not a trace.
#include "lmkit/dataload/trace_reader.h"

#include <zlib.h>

#include <catch2/catch.hpp>

#include "support/run_lmkit.h"

using namespace lmkit::dataload;
using lmkit::test::TempDir;
using lmkit::test::TestData;
using lmkit::test::WriteAll;

namespace {

std::string Gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string out;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

size_t Count(const TraceEvents& t, TraceEventKind k) {
  size_t n = 0;
  for (const auto& e : t.events) n += e.kind == k ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("trace_reader: gzipped and plain copies of a trace read the same", "[dataload][trace]") {
  TempDir dir;
  for (const char* name : {"slow-getitem.torch1.13", "slow-getitem.torch2.15"}) {
    INFO(name);
    const std::string gz = TestData(std::string("dataload/traces/") + name + ".json.gz");
    WriteAll(dir.file("plain.json"), Gunzip(gz));
    auto a = ReadTrace(gz);
    auto b = ReadTrace(dir.file("plain.json"));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->events_read == b->events_read);
    CHECK(a->events.size() == b->events.size());
    CHECK(Count(*a, TraceEventKind::kStep) == 12);
    CHECK(Count(*a, TraceEventKind::kDataLoaderNext) >= 12);
    CHECK(a->dataloader_name == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    CHECK(Count(*a, TraceEventKind::kCollate) > 0);  // default_collate's torch.stack, recorded by both versions
  }
  auto legacy = ReadTrace(TestData("dataload/traces/slow-getitem.torch1.13.json.gz"));
  auto kineto = ReadTrace(TestData("dataload/traces/slow-getitem.torch2.15.json.gz"));
  CHECK_FALSE(legacy->kineto);
  CHECK(kineto->kineto);
  CHECK(legacy->threads == std::vector<std::string>{"CPU functions/1"});
}

TEST_CASE("trace_reader: what is not a trace is a one-line error naming the file", "[dataload][trace]") {
  TempDir dir;
  auto missing = ReadTrace(dir.file("none.json"));
  CHECK(missing.status().code() == lmkit::ErrorCode::kNotFound);
  auto directory = ReadTrace(dir.path());
  CHECK(directory.status().ToString() == dir.path() + ": not a regular file");
  WriteAll(dir.file("bad.json"), R"({"traceEvents": [{"ph": "X",)");
  auto bad = ReadTrace(dir.file("bad.json"));
  CHECK(bad.status().code() == lmkit::ErrorCode::kInvalidInput);
  CHECK(bad.status().message().find("not a JSON trace: parse error at byte ") == 0);
  WriteAll(dir.file("other.json"), R"({"schema": "lmkit.dataload/1", "runs": []})");
  auto other = ReadTrace(dir.file("other.json"));
  CHECK(other.status().message().find("not a Chrome trace: no \"traceEvents\" list") == 0);
  // A gzip stream cut short.
  const std::string gz = lmkit::test::ReadAll(TestData("dataload/traces/fast-loader.torch2.15.json.gz"));
  WriteAll(dir.file("cut.json.gz"), gz.substr(0, gz.size() / 2));
  auto cut = ReadTrace(dir.file("cut.json.gz"));
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.status().subject() == dir.file("cut.json.gz"));
}
