// `lmkit inspect` end to end: the stories260K acceptance numbers, text and JSON, --stats determinism across --threads,
// and corrupted copies of the checkpoint (made here) that must fail with one line naming the defect.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <nlohmann/json.hpp>

#include "support/run_lmkit.h"

using lmkit::test::ReadAll;
using lmkit::test::RunLmkit;
using lmkit::test::TempDir;
using lmkit::test::TestData;
using lmkit::test::WriteAll;

namespace {

const std::string kInspectModel = TestData("io/stories260K/model.safetensors");

// Rewrites the checkpoint's header with `edit` applied, keeping the data buffer.
std::string EditHeader(const std::function<void(nlohmann::ordered_json&)>& edit) {
  std::string raw = ReadAll(kInspectModel);
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  auto j = nlohmann::ordered_json::parse(raw.substr(8, n));
  edit(j);
  std::string text = j.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t len = text.size();
  std::string out(reinterpret_cast<const char*>(&len), 8);
  out += text;
  out += raw.substr(8 + n);
  return out;
}

void CheckFails(const std::string& path, const std::string& defect) {
  auto r = RunLmkit({"inspect", path});
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "lmkit inspect: " + path + ": " + defect + "\n");
}

}  // namespace

TEST_CASE("inspect cli: stories260K --json reports 47 tensors and 260,032 parameters", "[cli][inspect]") {
  auto r = RunLmkit({"inspect", kInspectModel, "--json"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["tensor_count"] == 47);
  CHECK(j["parameter_count"] == 260032);
  CHECK(j["tensor_bytes"] == 1040128);
  REQUIRE(j["tensors"].size() == 47);
  CHECK(j["tensors"][0]["name"] == "model.embed_tokens.weight");
  CHECK(j["tensors"][0]["dtype"] == "F32");
  CHECK(j["tensors"][0]["shape"] == nlohmann::json::array({512, 64}));
  CHECK(j["metadata"]["format"] == "pt");
  uint64_t sum = 0;
  for (const auto& t : j["tensors"]) sum += t["elements"].get<uint64_t>();
  CHECK(sum == 260032);
}

TEST_CASE("inspect cli: text output and the model directory", "[cli][inspect]") {
  auto r = RunLmkit({"inspect", TestData("io/stories260K")});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("tensors     47\n") != std::string::npos);
  CHECK(r.out.find("parameters  260,032\n") != std::string::npos);
  CHECK(r.out.find("config      model_type = llama\n") != std::string::npos);
  CHECK(r.out.find("model.norm.weight") != std::string::npos);
}

TEST_CASE("inspect cli: --stats is identical for --threads 1 and 3", "[cli][inspect]") {
  auto a = RunLmkit({"--threads", "1", "inspect", kInspectModel, "--stats", "--json"});
  auto b = RunLmkit({"--threads", "3", "inspect", kInspectModel, "--stats", "--json"});
  REQUIRE(a.exit_code == 0);
  CHECK(a.out == b.out);
  auto j = nlohmann::json::parse(a.out);
  CHECK(j["tensors"][0]["stats"]["max"] == 1.327228307723999);
  auto text = RunLmkit({"inspect", kInspectModel, "--stats"});
  CHECK(text.out.find("absmax") != std::string::npos);
}

TEST_CASE("inspect cli: corrupted checkpoints exit 1 with one line naming the defect", "[cli][inspect]") {
  TempDir dir;
  std::string raw = ReadAll(kInspectModel);
  REQUIRE(raw.size() == 1045032);

  std::string truncated = dir.file("truncated.safetensors");
  WriteAll(truncated, raw.substr(0, 600000));
  CheckFails(truncated,
             "tensor 'model.layers.2.mlp.up_proj.weight': data_offsets [582912, 626944) run past the end "
             "of the data buffer (595096 bytes)");

  std::string long_header = dir.file("long_header.safetensors");
  std::string lh = raw;
  uint64_t big = 2000000;
  std::memcpy(lh.data(), &big, 8);
  WriteAll(long_header, lh);
  CheckFails(long_header, "header length 2000000 runs past the end of the file (1045032 bytes)");

  std::string overlap = dir.file("overlap.safetensors");
  WriteAll(overlap, EditHeader([](nlohmann::ordered_json& j) {
             j["model.layers.0.input_layernorm.weight"]["data_offsets"] = {131000, 131256};
           }));
  CheckFails(overlap,
             "tensor 'model.layers.0.input_layernorm.weight': data_offsets [131000, 131256) overlap tensor "
             "'model.embed_tokens.weight' [0, 131072)");

  std::string mismatch = dir.file("mismatch.safetensors");
  WriteAll(mismatch, EditHeader([](nlohmann::ordered_json& j) { j["model.embed_tokens.weight"]["dtype"] = "F16"; }));
  CheckFails(mismatch,
             "tensor 'model.embed_tokens.weight': data_offsets [0, 131072) hold 131072 bytes but F16 "
             "[512, 64] needs 65536");

  std::string unknown = dir.file("unknown.safetensors");
  WriteAll(unknown, EditHeader([](nlohmann::ordered_json& j) { j["model.norm.weight"]["dtype"] = "F12"; }));
  CheckFails(unknown, "tensor 'model.norm.weight': unknown dtype 'F12'");

  auto missing = RunLmkit({"inspect", dir.file("nope.safetensors")});
  CHECK(missing.exit_code == 1);
  CHECK(std::count(missing.err.begin(), missing.err.end(), '\n') == 1);
  CHECK(RunLmkit({"inspect"}).exit_code == 2);
}

TEST_CASE("inspect cli: .npy files", "[cli][inspect]") {
  TempDir dir;
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  std::string img("\x93NUMPY\x01\x00", 8);
  img.push_back(static_cast<char>(118));
  img.push_back('\0');
  img += dict;
  img.append(128 - img.size() - 1, ' ');
  img.push_back('\n');
  float v[3] = {1.0f, -4.0f, 0.5f};
  img.append(reinterpret_cast<const char*>(v), sizeof v);
  WriteAll(dir.file("a.npy"), img);
  auto r = RunLmkit({"inspect", dir.file("a.npy"), "--stats", "--json"});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["format"] == "npy");
  CHECK(j["parameter_count"] == 3);
  CHECK(j["tensors"][0]["stats"]["absmax"] == 4.0);
  CHECK(j["tensors"][0]["stats"]["mean"] == -2.5 / 3);
  std::string be = img;
  be[10 + 11] = '>';
  WriteAll(dir.file("be.npy"), be);
  auto e = RunLmkit({"inspect", dir.file("be.npy")});
  CHECK(e.exit_code == 1);
  CHECK(e.err.find("big-endian") != std::string::npos);
}

TEST_CASE("inspect cli: a .npy file with a damaged magic gets the npy reader's error", "[cli][inspect]") {
  // Without the magic the file used to go to the safetensors reader: "header length 378576894774931 exceeds the
  // limit" for a typo'd magic, "too short for the 8-byte header length" for a 4-byte stub.
  TempDir dir;
  WriteAll(dir.file("bad.npy"), std::string("\x93NUMPX\x01\x00", 8));
  auto a = RunLmkit({"inspect", dir.file("bad.npy")});
  CHECK(a.exit_code == 1);
  CHECK(a.out.empty());
  CHECK(a.err == "lmkit inspect: " + dir.file("bad.npy") + ": not a .npy file (missing the \\x93NUMPY magic)\n");
  WriteAll(dir.file("stub.npy"), std::string("\x93NUM", 4));
  auto b = RunLmkit({"inspect", dir.file("stub.npy")});
  CHECK(b.exit_code == 1);
  CHECK(b.err.find(dir.file("stub.npy") + ": ") != std::string::npos);
  CHECK(b.err.find("8-byte header length") == std::string::npos);
  CHECK(std::count(b.err.begin(), b.err.end(), '\n') == 1);
}
