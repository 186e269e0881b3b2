// A Hugging Face model checkpoint opened once for every command that reads weights (quantize, eval, generate,
// calibrate's model run, inspect): config.json's text and the safetensors files, with the shard index held to one
// strict set of rules.
//
// Contract: OpenCheckpoint(path) takes a directory (model.safetensors, else model.safetensors.index.json and its
// shards, the order transformers uses) or one .safetensors file (config.json, if wanted, is read beside it).
// config.json is read as text, not parsed (io/hf_config parses it): a regular file of at most kMaxConfigBytes. The
// index must be a JSON object with a "weight_map" object whose values are plain file names beside it (no '/', not
// starting with '.'); every tensor of each listed shard must be mapped to that shard, every mapped tensor must be in
// its shard (so no tensor is in two shards), and when the shards are named "<prefix>-<i>-of-<n>.safetensors" all n must
// be listed. Every file is opened and its header validated (safetensors.h). Errors are one line naming the file:
// kNotFound (no such path, no weights in the directory, a missing shard, config.json missing when required),
// kInvalidInput (a broken index or header, an oversized or non-regular config.json), kIo. The result is immutable; its
// files may be read from several threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/io/safetensors.h"

namespace lmkit::io {

// config.json is a few KiB; this bounds a mistaken or hostile one (a link to /dev/zero) long before memory runs out.
constexpr uint64_t kMaxConfigBytes = uint64_t{16} << 20;

inline constexpr const char* kSingleWeightsName = "model.safetensors";
inline constexpr const char* kIndexName = "model.safetensors.index.json";

struct CheckpointFile {
  std::string name;  // file name, e.g. "model-00001-of-00002.safetensors"
  std::string path;
  SafetensorsFile file;
};

struct Checkpoint {
  std::string path;                   // as given
  std::string dir;                    // the directory holding the weights and config.json ("." for a bare file name)
  bool directory = false;             // `path` is a directory
  std::string config_path;            // dir/config.json, or "" when there is none
  std::string config_text;            // its text, when config_path is set
  std::string index_path;             // dir/model.safetensors.index.json, or "" when the weights are one file
  std::vector<CheckpointFile> files;  // the one weights file, or the index's shards sorted by name
};

struct CheckpointOptions {
  bool require_config = false;  // config.json missing is kNotFound instead of an empty config_path
};

Result<Checkpoint> OpenCheckpoint(const std::string& path, const CheckpointOptions& options = {});

}  // namespace lmkit::io
