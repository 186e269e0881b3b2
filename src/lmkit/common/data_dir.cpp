#include "lmkit/common/data_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace lmkit {
namespace {

std::vector<std::string> Candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("LMKIT_DATA_DIR"); env != nullptr && *env != '\0') out.emplace_back(env);
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::filesystem::path dir = exe.parent_path();
    out.push_back((dir / ".." / "share" / "lmkit").lexically_normal().string());
    out.push_back((dir / ".." / "data").lexically_normal().string());
    out.push_back((dir / ".." / ".." / "data").lexically_normal().string());
  }
#ifdef LMKIT_SOURCE_DATA_DIR
  out.emplace_back(LMKIT_SOURCE_DATA_DIR);
#endif
  return out;
}

bool IsDir(const std::string& p) {
  std::error_code ec;
  return std::filesystem::is_directory(p, ec);
}

}  // namespace

std::string FindDataDir() {
  for (const auto& c : Candidates())
    if (IsDir(c)) return c;
  return "";
}

Result<std::string> DataPath(const std::string& relative) {
  std::string tried;
  // The first directory that holds the file wins, so $LMKIT_DATA_DIR may hold only part of the data.
  for (const auto& c : Candidates()) {
    if (!IsDir(c)) continue;
    std::string p = c + "/" + relative;
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) return p;
    tried += (tried.empty() ? "" : ", ") + c;
  }
  return Status::NotFound(relative, tried.empty() ? "no lmkit data directory found (set LMKIT_DATA_DIR)"
                                                  : "not found in the data directories (" + tried + ")");
}

}  // namespace lmkit
