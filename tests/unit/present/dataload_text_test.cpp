// The `lmkit dataload` text report of a small CPU run: the files line, the configuration line, and the verdict line
// without a demand, with request fields spelled by the front end.
#include <catch2/catch.hpp>
#include <sstream>
#include <vector>

#include "lmkit/dataload/profile.h"
#include "lmkit/present/dataload.h"
#include "support/run_lmkit.h"

using namespace lmkit::dataload;

namespace {

std::string DataloadTextOf(const lmkit::test::TempDir& dir, const lmkit::present::FieldNamer& field) {
  DataloadRequest o;
  o.paths = {lmkit::test::WriteTokenFile(dir, 20000, 1000)};
  o.steps = 30;
  o.warmup = 2;
  o.config.batch_size = 4;
  o.config.context_length = 64;
  o.config.threads = 2;
  auto r = RunDataload(o, nullptr);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return lmkit::present::DataloadText(*r, field);
}

std::string DataloadLine(const std::string& text, const std::string& start) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(start, 0) == 0) return line;
  return "";
}

}  // namespace

TEST_CASE("dataload text: files, configuration and the verdict without a demand", "[present][dataload]") {
  lmkit::test::TempDir dir;
  auto flag = [](std::string_view f) {
    std::string s = "--";
    for (char c : f) s.push_back(c == '_' ? '-' : c);
    return s;
  };
  const std::string text = DataloadTextOf(dir, flag);
  // 20,000 uint16 tokens = 40,000 B.
  CHECK(DataloadLine(text, "files       ").rfind("files       1 file, 20,000 uint16 tokens (40.00 kB) on ", 0) == 0);
  CHECK(DataloadLine(text, "config      ") ==
        "config      B=4 T=64 access=mmap advice=normal cache=as-is threads=2 prefetch=2 out=int64 device=cpu");
  CHECK(DataloadLine(text, "verdict     ") ==
        "verdict     none: no demand given (--tokens-per-s, --step-time-s or --model --gpu --mfu)");
  CHECK(DataloadLine(text, "throughput  ") != "");
  const std::string bare = DataloadTextOf(dir, lmkit::present::BareField);
  CHECK(DataloadLine(bare, "verdict     ") ==
        "verdict     none: no demand given (tokens_per_s, step_time_s or model gpu mfu)");
}

TEST_CASE("dataload text: a sweep prints one row per point, named by the swept knobs", "[present][dataload]") {
  lmkit::test::TempDir dir;
  DataloadRequest o;
  o.paths = {lmkit::test::WriteTokenFile(dir, 20000, 1000)};
  o.steps = 10;
  o.warmup = 1;
  o.config.batch_size = 4;
  o.config.context_length = 64;
  auto axis = ParseSweepAxis("threads=1,2");
  REQUIRE(axis.ok());
  o.sweep = {*axis};
  auto r = RunDataload(o, nullptr);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  REQUIRE(r->runs.size() == 2);
  const std::string text = lmkit::present::DataloadText(*r, lmkit::present::BareField);
  CHECK(DataloadLine(text, "  knobs").find("tokens/s") != std::string::npos);
  // One row per point, its knobs after a one-character mark; the recommended point is starred and named below.
  std::istringstream in(text);
  std::vector<std::string> rows;
  std::string starred;
  for (std::string line; std::getline(in, line);)
    if (line.size() > 2 && line.compare(2, 8, "threads=") == 0) {
      rows.push_back(line);
      if (line[0] == '*') starred = line.substr(2, line.find(' ', 2) - 2);
    }
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].compare(2, 10, "threads=1 ") == 0);
  CHECK(rows[1].compare(2, 10, "threads=2 ") == 0);
  for (const auto& row : rows) CHECK(row.substr(row.size() - 3) == "  -");  // no demand: no wait, no verdict
  REQUIRE(r->recommended >= 0);
  CHECK(starred == "threads=" + std::to_string(r->runs[static_cast<size_t>(r->recommended)].config.threads));
  CHECK(DataloadLine(text, "recommended ").rfind("recommended " + starred, 0) == 0);
  CHECK(DataloadLine(text, "config      ").find(" (swept knobs as in the table)") != std::string::npos);
}
