// io::OpenCheckpoint: the one opener of model directories, with the strictest index rules (#31 item 4: an index that
// omits a shard, a duplicated shard and a tensor mapped to the wrong shard are each one-line errors) and a config.json
// that must be a small regular file (#31 item 2).
#include "lmkit/io/checkpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "support/run_lmkit.h"

using lmkit::ErrorCode;
using lmkit::io::Checkpoint;
using lmkit::io::CheckpointOptions;
using lmkit::io::DType;
using lmkit::io::OpenCheckpoint;
using lmkit::io::TensorData;
using lmkit::io::WriteSafetensors;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;
namespace fs = std::filesystem;

namespace {

const std::vector<uint8_t> kBytes(8, 1);

void Shard(const std::string& path, const std::vector<std::string>& names) {
  std::vector<TensorData> ts;
  for (const auto& n : names) ts.push_back({n, DType::kF32, {2}, kBytes});
  REQUIRE(WriteSafetensors(path, ts).ok());
}

// A directory with three numbered shards: a, b in the first, c in the second, d in the third.
struct Sharded {
  TempDir tmp;
  std::string dir = tmp.file("m");
  std::string s1 = "model-00001-of-00003.safetensors", s2 = "model-00002-of-00003.safetensors",
              s3 = "model-00003-of-00003.safetensors";
  Sharded() {
    fs::create_directory(dir);
    Shard(dir + "/" + s1, {"a", "b"});
    Shard(dir + "/" + s2, {"c"});
    Shard(dir + "/" + s3, {"d"});
    WriteAll(dir + "/config.json", R"({"model_type": "llama"})");
  }
  void Index(const std::string& weight_map) {
    WriteAll(dir + "/model.safetensors.index.json", R"({"metadata": {}, "weight_map": )" + weight_map + "}");
  }
  std::string IndexPath() const { return dir + "/model.safetensors.index.json"; }
  std::string Good() const {
    return R"({"a": ")" + s1 + R"(", "b": ")" + s1 + R"(", "c": ")" + s2 + R"(", "d": ")" + s3 + R"("})";
  }
};

}  // namespace

TEST_CASE("checkpoint: a sharded directory opens with its config text and shards in name order", "[io][checkpoint]") {
  Sharded m;
  m.Index(m.Good());
  auto ck = OpenCheckpoint(m.dir);
  REQUIRE(ck.ok());
  CHECK(ck->directory);
  CHECK(ck->index_path == m.IndexPath());
  CHECK(ck->config_path == m.dir + "/config.json");
  CHECK(ck->config_text == R"({"model_type": "llama"})");
  REQUIRE(ck->files.size() == 3);
  CHECK(ck->files[0].name == m.s1);
  CHECK(ck->files[0].path == m.dir + "/" + m.s1);
  CHECK(ck->files[2].file.tensors()[0].name == "d");
}

TEST_CASE("checkpoint: an index that omits a shard is refused", "[io][checkpoint]") {
  Sharded m;
  m.Index(R"({"a": ")" + m.s1 + R"(", "b": ")" + m.s1 + R"(", "c": ")" + m.s2 + R"("})");
  auto ck = OpenCheckpoint(m.dir);
  REQUIRE_FALSE(ck.ok());
  CHECK(ck.status().code() == ErrorCode::kInvalidInput);
  CHECK(ck.status().ToString() == m.IndexPath() +
                                      ": the weight_map lists no tensor of model-00003-of-00003.safetensors (shard 3 "
                                      "of 3)");
}

TEST_CASE("checkpoint: a duplicated shard (a tensor in two files) is refused", "[io][checkpoint]") {
  Sharded m;
  Shard(m.dir + "/" + m.s3, {"d", "a"});  // shard 3 also holds shard 1's "a"
  m.Index(m.Good());
  auto ck = OpenCheckpoint(m.dir);
  REQUIRE_FALSE(ck.ok());
  CHECK(ck.status().ToString() == m.IndexPath() + ": tensor 'a' of " + m.s3 + " is not mapped to that file");
}

TEST_CASE("checkpoint: a tensor mapped to the wrong shard, or to none, is refused", "[io][checkpoint]") {
  Sharded m;
  m.Index(R"({"a": ")" + m.s2 + R"(", "b": ")" + m.s1 + R"(", "c": ")" + m.s2 + R"(", "d": ")" + m.s3 + R"("})");
  auto wrong = OpenCheckpoint(m.dir);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().ToString() == m.IndexPath() + ": tensor 'a' of " + m.s1 + " is not mapped to that file");
  m.Index(R"({"a": ")" + m.s1 + R"(", "b": ")" + m.s1 + R"(", "c": ")" + m.s2 + R"(", "d": ")" + m.s3 + R"(", "e": ")" +
          m.s3 + R"("})");
  auto ghost = OpenCheckpoint(m.dir);
  REQUIRE_FALSE(ghost.ok());
  CHECK(ghost.status().ToString() == m.IndexPath() + ": tensor 'e' is mapped to " + m.s3 + " but not there");
}

TEST_CASE("checkpoint: index entries that are not plain file names beside it", "[io][checkpoint]") {
  Sharded m;
  for (const std::string bad : {"../x.safetensors", ".hidden.safetensors", ""}) {
    m.Index(R"({"a": ")" + bad + R"("})");
    auto ck = OpenCheckpoint(m.dir);
    REQUIRE_FALSE(ck.ok());
    CHECK(ck.status().ToString() ==
          m.IndexPath() + ": weight_map entry 'a' names '" + bad + "', not a file beside the index");
  }
  m.Index(R"({"a": 3})");
  CHECK(OpenCheckpoint(m.dir).status().ToString() == m.IndexPath() + ": weight_map entry 'a' is not a file name");
  m.Index("{}");
  CHECK(OpenCheckpoint(m.dir).status().ToString() == m.IndexPath() + ": the weight_map lists no tensor");
  WriteAll(m.IndexPath(), "[]");
  CHECK(OpenCheckpoint(m.dir).status().ToString() == m.IndexPath() + ": no \"weight_map\" object");
  m.Index(R"({"a": ")" + m.s1 + R"(", "z": "model-00009-of-00009.safetensors"})");
  auto missing = OpenCheckpoint(m.dir);
  CHECK(missing.status().code() == ErrorCode::kNotFound);
  CHECK(missing.status().ToString() == m.dir + "/model-00009-of-00009.safetensors: no such file");
}

TEST_CASE(
    "checkpoint: model.safetensors comes before an index, as in transformers, and a file path reads its directory",
    "[io][checkpoint]") {
  Sharded m;
  m.Index(m.Good());
  Shard(m.dir + "/model.safetensors", {"x"});
  auto ck = OpenCheckpoint(m.dir);
  REQUIRE(ck.ok());
  CHECK(ck->index_path.empty());
  REQUIRE(ck->files.size() == 1);
  CHECK(ck->files[0].name == "model.safetensors");
  auto file = OpenCheckpoint(m.dir + "/" + m.s2);
  REQUIRE(file.ok());
  CHECK_FALSE(file->directory);
  CHECK(file->config_path == m.dir + "/config.json");
  CHECK(file->files.size() == 1);
  TempDir empty;
  auto none = OpenCheckpoint(empty.path());
  CHECK(none.status().code() == ErrorCode::kNotFound);
  CHECK(none.status().ToString() ==
        empty.path() + ": no model.safetensors or model.safetensors.index.json in the directory");
  CHECK(OpenCheckpoint(empty.file("nope")).status().ToString() == empty.file("nope") + ": no such file or directory");
}

TEST_CASE("checkpoint: config.json must be a small regular file, and is required when asked", "[io][checkpoint]") {
  Sharded m;
  m.Index(m.Good());
  const std::string cfg = m.dir + "/config.json";
  CheckpointOptions need;
  need.require_config = true;
  fs::remove(cfg);
  auto absent = OpenCheckpoint(m.dir);
  REQUIRE(absent.ok());
  CHECK(absent->config_path.empty());
  CHECK(OpenCheckpoint(m.dir, need).status().ToString() == cfg + ": no config.json beside the weights");

  fs::create_symlink("/dev/zero", cfg);  // used to be read until memory ran out
  CHECK(OpenCheckpoint(m.dir).status().ToString() == cfg + ": is a device, expected a regular file");
  fs::remove(cfg);
  REQUIRE(::mkfifo(cfg.c_str(), 0644) == 0);  // no writer: the open must not wait for one
  CHECK(OpenCheckpoint(m.dir).status().ToString() == cfg + ": is a pipe (FIFO), expected a regular file");
  fs::remove(cfg);
  WriteAll(cfg, std::string(lmkit::io::kMaxConfigBytes + 1, ' '));
  CHECK(OpenCheckpoint(m.dir).status().ToString() == cfg + ": is " + std::to_string(lmkit::io::kMaxConfigBytes + 1) +
                                                         " bytes, over the 16 MiB limit for this kind "
                                                         "of file");
}
