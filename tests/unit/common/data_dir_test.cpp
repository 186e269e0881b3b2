#include "lmkit/common/data_dir.h"

#include <catch2/catch.hpp>
#include <cstdlib>

#include "support/run_lmkit.h"

TEST_CASE("data_dir: LMKIT_DATA_DIR wins, then the source tree", "[common][data_dir]") {
  lmkit::test::TempDir dir;
  lmkit::test::WriteAll(dir.file("gpus.json"), "{}");
  const char* old = std::getenv("LMKIT_DATA_DIR");
  std::string saved = old ? old : "";
  setenv("LMKIT_DATA_DIR", dir.path().c_str(), 1);
  CHECK(lmkit::FindDataDir() == dir.path());
  auto p = lmkit::DataPath("gpus.json");
  REQUIRE(p.ok());
  CHECK(*p == dir.file("gpus.json"));
  // A file the override lacks falls through to the next directory (the source tree's data/).
  auto presets = lmkit::DataPath("models/gpt2.json");
  REQUIRE(presets.ok());
  CHECK(presets->find(dir.path()) == std::string::npos);
  CHECK(lmkit::DataPath("no/such/file.json").status().code() == lmkit::ErrorCode::kNotFound);
  if (old) {
    setenv("LMKIT_DATA_DIR", saved.c_str(), 1);
  } else {
    unsetenv("LMKIT_DATA_DIR");
  }
}
