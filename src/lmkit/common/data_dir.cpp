#include "lmkit/common/data_dir.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "lmkit/common/sysinfo.h"

namespace lmkit {
namespace {

bool IsDir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool Exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

std::string& HostDataDir() {
  static std::string dir;
  return dir;
}

}  // namespace

void SetHostDataDir(std::string dir) { HostDataDir() = std::move(dir); }

std::vector<std::string> DataDirCandidates() {
  std::vector<std::string> out;
  const char* env = std::getenv("LMKIT_DATA_DIR");
  if (env != nullptr && env[0] != '\0') out.emplace_back(env);
  if (!HostDataDir().empty()) out.push_back(HostDataDir());
  std::string exe = ExecutableDir();
  if (!exe.empty()) {
    // /proc/self/exe has no symlinks, so dropping ".." lexically names the same folder, as the reports print it.
    for (const char* rel : {"/../share/lmkit", "/../data", "/../../data"})
      out.push_back(std::filesystem::path(exe + rel).lexically_normal().string());
  }
#ifdef LMKIT_SOURCE_DATA_DIR
  out.emplace_back(LMKIT_SOURCE_DATA_DIR);
#endif
  return out;
}

Result<std::string> FindDataFile(const std::string& relative) {
  const char* env = std::getenv("LMKIT_DATA_DIR");
  if (env != nullptr && env[0] != '\0' && !IsDir(env))
    return Status::NotFound(env, "LMKIT_DATA_DIR is set but is not a directory");
  std::string looked;
  for (const auto& dir : DataDirCandidates()) {
    if (!IsDir(dir)) continue;
    std::string p = dir + "/" + relative;
    if (Exists(p)) return p;
    looked += (looked.empty() ? "" : ", ") + dir;
  }
  return Status::NotFound(relative, "not found in the data directories (" +
                                        (looked.empty() ? std::string("none exists") : looked) +
                                        "); set LMKIT_DATA_DIR to the lmkit data/ directory");
}

}  // namespace lmkit
