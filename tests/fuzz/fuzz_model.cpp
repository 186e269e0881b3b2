// libFuzzer target: the model runtime's loading -- io::OpenCheckpoint (config.json text, safetensors header) and
// model::LlamaModel::Load (config keys, every tensor's name, shape and dtype, int8 scales, non-finite values) -- on
// arbitrary bytes must never crash, hang, read out of bounds or allocate without bound, and must explain every
// rejection in one line. An accepted model runs one forward step over its first and last token ids. Input: two bytes of
// config length (little-endian), the config.json text, then the model.safetensors bytes.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "lmkit/model/llama.h"
#include "scratch_dir.h"

using namespace lmkit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t config_len = std::min<size_t>(data[0] | (size_t{data[1]} << 8), size - 2);
  static const std::string dir = [] {
    const std::string d = FuzzScratchDir() + "/model";
    const std::string cmd = "mkdir -p " + d;
    if (std::system(cmd.c_str()) != 0) std::abort();
    return d;
  }();
  WriteScratchFile(dir + "/config.json", data + 2, config_len);
  WriteScratchFile(dir + "/model.safetensors", data + 2 + config_len, size - 2 - config_len);
  auto m = model::LlamaModel::Load(dir);
  if (!m.ok()) {
    CheckError(m.status());
    return 0;
  }
  const auto& c = m->config();
  const uint32_t ids[2] = {0, c.vocab - 1};
  model::KvCache cache = m->NewCache(2);
  std::vector<float> logits(c.vocab);
  Status st = m->Forward({ids, 2}, cache, nullptr, logits.data(), /*all_logits=*/false);
  if (!st.ok()) {
    CheckError(st);
    return 0;
  }
  return 0;
}
