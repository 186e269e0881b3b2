#include "lmkit/io/checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "lmkit/common/file_reader.h"
#include "lmkit/common/json.h"

namespace lmkit::io {
namespace {

bool Exists(const std::string& path, struct stat* st) { return ::stat(path.c_str(), st) == 0; }

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() || dir == "." ? name : (dir.back() == '/' ? dir + name : dir + "/" + name);
}

// "<prefix>-<i>-of-<n>.safetensors": fills the parts and returns true.
bool ShardNumber(const std::string& name, std::string* prefix, std::string* i, std::string* n) {
  const std::string ext = ".safetensors";
  if (name.size() <= ext.size() || name.compare(name.size() - ext.size(), ext.size(), ext) != 0) return false;
  const std::string stem = name.substr(0, name.size() - ext.size());
  const size_t of = stem.rfind("-of-");
  if (of == std::string::npos) return false;
  *n = stem.substr(of + 4);
  const size_t dash = stem.rfind('-', of == 0 ? 0 : of - 1);
  if (dash == std::string::npos || dash >= of) return false;
  *i = stem.substr(dash + 1, of - dash - 1);
  *prefix = stem.substr(0, dash);
  auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return digits(*i) && digits(*n);
}

// The shard names of the index's weight_map, checked, in sorted order; the map from tensor to shard name.
Status ReadIndex(const std::string& index_path, std::vector<std::string>* shards,
                 std::map<std::string, std::string>* weight_map) {
  LMKIT_ASSIGN_OR_RETURN(std::string text, ReadFileToString(index_path));
  LMKIT_ASSIGN_OR_RETURN(Json j, ParseJson(text, index_path));
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    return Status::InvalidInput(index_path, "no \"weight_map\" object");
  std::set<std::string> unique;
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string())
      return Status::InvalidInput(index_path, "weight_map entry '" + it.key() + "' is not a file name");
    const std::string& f = it.value().get_ref<const std::string&>();
    if (f.empty() || f.find('/') != std::string::npos || f[0] == '.')
      return Status::InvalidInput(index_path,
                                  "weight_map entry '" + it.key() + "' names '" + f + "', not a file beside the index");
    unique.insert(f);
    (*weight_map)[it.key()] = f;
  }
  if (unique.empty()) return Status::InvalidInput(index_path, "the weight_map lists no tensor");
  shards->assign(unique.begin(), unique.end());
  return Status::Ok();
}

// Numbered shards: every one of the n must be listed, or an index that lost a shard's entries would quietly give a
// model without those tensors.
Status CheckAllShardsListed(const std::string& index_path, const std::vector<std::string>& shards) {
  std::string prefix0, n0;
  std::set<uint64_t> numbers;
  for (const auto& f : shards) {
    std::string prefix, i, n;
    if (!ShardNumber(f, &prefix, &i, &n) || (!n0.empty() && (prefix != prefix0 || n != n0))) return Status::Ok();
    prefix0 = prefix;
    n0 = n;
    numbers.insert(std::stoull(i));
  }
  const uint64_t total = std::stoull(n0);
  for (uint64_t k = 1; k <= total; ++k) {
    if (numbers.count(k)) continue;
    std::string i = std::to_string(k);
    if (i.size() < n0.size()) i.insert(0, n0.size() - i.size(), '0');
    return Status::InvalidInput(index_path, "the weight_map lists no tensor of " + prefix0 + "-" + i + "-of-" + n0 +
                                                ".safetensors (shard " + std::to_string(k) + " of " +
                                                std::to_string(total) + ")");
  }
  return Status::Ok();
}

}  // namespace

Result<Checkpoint> OpenCheckpoint(const std::string& path, const CheckpointOptions& options) {
  Checkpoint ck;
  ck.path = path;
  struct stat st {};
  if (!Exists(path, &st)) return Status::NotFound(path, "no such file or directory");
  ck.directory = S_ISDIR(st.st_mode);
  if (ck.directory) {
    ck.dir = path;
  } else {
    const size_t slash = path.rfind('/');
    ck.dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  }

  const std::string config_path = Join(ck.dir, "config.json");
  struct stat cst {};
  if (::lstat(config_path.c_str(), &cst) == 0) {
    ck.config_path = config_path;
    LMKIT_ASSIGN_OR_RETURN(ck.config_text, ReadFileToString(config_path, kMaxConfigBytes));
  } else if (options.require_config) {
    return Status::NotFound(config_path, "no config.json beside the weights");
  }

  std::vector<std::string> names;
  std::map<std::string, std::string> weight_map;
  if (!ck.directory) {
    names.push_back(path);
  } else if (struct stat wst{}; Exists(Join(ck.dir, kSingleWeightsName), &wst)) {
    names.push_back(kSingleWeightsName);
  } else if (Exists(Join(ck.dir, kIndexName), &wst)) {
    ck.index_path = Join(ck.dir, kIndexName);
    LMKIT_RETURN_IF_ERROR(ReadIndex(ck.index_path, &names, &weight_map));
  } else {
    return Status::NotFound(path, "no model.safetensors or model.safetensors.index.json in the directory");
  }

  for (const std::string& name : names) {
    CheckpointFile f;
    f.path = ck.directory ? Join(ck.dir, name) : name;
    f.name = f.path.substr(f.path.rfind('/') == std::string::npos ? 0 : f.path.rfind('/') + 1);
    LMKIT_ASSIGN_OR_RETURN(f.file, SafetensorsFile::Open(f.path));
    ck.files.push_back(std::move(f));
  }
  if (ck.index_path.empty()) return ck;

  uint64_t listed = 0;
  for (const CheckpointFile& f : ck.files) {
    for (const TensorInfo& t : f.file.tensors()) {
      auto it = weight_map.find(t.name);
      if (it == weight_map.end() || it->second != f.name)
        return Status::InvalidInput(ck.index_path,
                                    "tensor '" + t.name + "' of " + f.name + " is not mapped to that file");
      ++listed;
    }
  }
  if (listed != weight_map.size()) {
    for (const auto& [name, file] : weight_map) {
      bool there = false;
      for (const CheckpointFile& f : ck.files)
        if (f.name == file) there = f.file.Find(name) != nullptr;
      if (!there)
        return Status::InvalidInput(ck.index_path, "tensor '" + name + "' is mapped to " + file + " but not there");
    }
  }
  LMKIT_RETURN_IF_ERROR(CheckAllShardsListed(ck.index_path, names));
  return ck;
}

}  // namespace lmkit::io
