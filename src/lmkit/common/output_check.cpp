#include "lmkit/common/output_check.h"

#include <filesystem>

namespace lmkit {

namespace fs = std::filesystem;

bool WouldOverwriteInput(const std::string& output, const std::string& input) {
  std::error_code ec;
  if (output.empty() || input.empty() || !fs::exists(output, ec)) return false;
  if (fs::is_directory(input, ec)) {
    fs::path parent = fs::path(output).parent_path();
    return fs::equivalent(parent.empty() ? fs::path(".") : parent, input, ec);
  }
  return fs::equivalent(output, input, ec);
}

Status CheckOutputIsNotAnInput(const std::vector<std::string>& inputs, const std::string& output,
                               std::string_view field) {
  // Only a regular file can be destroyed this way: reading /dev/zero and writing /dev/null is fine.
  std::error_code ec;
  if (output.empty() || !fs::is_regular_file(output, ec)) return Status::Ok();
  for (const auto& in : inputs) {
    if (in == "-" || !WouldOverwriteInput(output, in)) continue;
    if (fs::is_directory(in, ec))
      return Status::InvalidArgument(in + ": " + Field(field) + " " + output +
                                     " is a file of this input directory; writing it could destroy the input");
    return Status::InvalidArgument(in + ": is also the output (" + Field(field) + " " + output +
                                   "); writing it would destroy the input");
  }
  return Status::Ok();
}

Status CheckDistinctOutputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  std::error_code ec;
  auto resolved = [&](const std::string& p) { return fs::weakly_canonical(fs::absolute(p, ec), ec); };
  for (size_t j = 1; j < outputs.size(); ++j) {
    if (outputs[j].second.empty()) continue;
    for (size_t i = 0; i < j; ++i) {
      if (outputs[i].second.empty() || resolved(outputs[i].second) != resolved(outputs[j].second)) continue;
      return Status::InvalidArgument(Field(outputs[i].first) + " and " + Field(outputs[j].first) +
                                     " name the same file");
    }
  }
  return Status::Ok();
}

std::vector<std::string> TokenizerInputFiles(const std::string& tokenizer) {
  std::error_code ec;
  if (fs::is_directory(tokenizer, ec)) {
    const fs::path d(tokenizer);
    return {(d / "vocab.json").string(), (d / "merges.txt").string(), (d / "tokenizer.json").string()};
  }
  if (fs::is_regular_file(tokenizer, ec)) return {tokenizer};
  return {};  // a built-in name (gpt2, cl100k_base, ...)
}

}  // namespace lmkit
