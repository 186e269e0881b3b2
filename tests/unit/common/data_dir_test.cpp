// The data directory search: LMKIT_DATA_DIR first, then the places relative to the binary, then the source tree.
#include "lmkit/common/data_dir.h"

#include <catch2/catch.hpp>
#include <cstdlib>

#include "support/run_lmkit.h"

using namespace lmkit;

TEST_CASE("data dir: the source tree's data/ is found without LMKIT_DATA_DIR", "[common][data_dir]") {
  ::unsetenv("LMKIT_DATA_DIR");
  auto p = FindDataFile("tokenizers/gpt2.tiktoken");
  REQUIRE(p.ok());
  CHECK(test::ReadAll(*p).size() == test::ReadAll(test::RepoPath("data/tokenizers/gpt2.tiktoken")).size());
  auto none = FindDataFile("tokenizers/no-such-file");
  REQUIRE(!none.ok());
  CHECK(none.status().code() == ErrorCode::kNotFound);
}

TEST_CASE("data dir: LMKIT_DATA_DIR comes first, and must exist when set", "[common][data_dir]") {
  test::TempDir dir;
  test::WriteAll(dir.file("marker.txt"), "x");
  ::setenv("LMKIT_DATA_DIR", dir.path().c_str(), 1);
  auto c = DataDirCandidates();
  REQUIRE(!c.empty());
  CHECK(c.front() == dir.path());
  auto p = FindDataFile("marker.txt");
  CHECK((p.ok() && *p == dir.file("marker.txt")));
  // Files it lacks still come from the later candidates.
  CHECK(FindDataFile("tokenizers/gpt2.json").ok());
  ::setenv("LMKIT_DATA_DIR", (dir.path() + "/missing").c_str(), 1);
  auto bad = FindDataFile("tokenizers/gpt2.json");
  CHECK(!bad.ok());
  ::unsetenv("LMKIT_DATA_DIR");
}

TEST_CASE("data dir: a host's data directory comes after LMKIT_DATA_DIR and before the binary's",
          "[common][data_dir]") {
  test::TempDir dir;
  test::WriteAll(dir.file("host-marker.txt"), "x");
  ::unsetenv("LMKIT_DATA_DIR");
  SetHostDataDir(dir.path());
  auto c = DataDirCandidates();
  REQUIRE(!c.empty());
  CHECK(c.front() == dir.path());
  CHECK(FindDataFile("host-marker.txt").ok());
  CHECK(FindDataFile("tokenizers/gpt2.json").ok());  // still found further down
  test::TempDir env;
  ::setenv("LMKIT_DATA_DIR", env.path().c_str(), 1);
  c = DataDirCandidates();
  REQUIRE(c.size() >= 2);
  CHECK(c[0] == env.path());
  CHECK(c[1] == dir.path());
  ::unsetenv("LMKIT_DATA_DIR");
  SetHostDataDir("");
  CHECK(!FindDataFile("host-marker.txt").ok());
}
