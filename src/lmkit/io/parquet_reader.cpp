// Finds and loads the Parquet plugin once per process (dlopen), then calls its entry point.
#include "lmkit/io/parquet_reader.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "lmkit/common/sysinfo.h"

namespace lmkit::io {

namespace {

// The errors every reader gives for a missing file or a directory, before Arrow (or its absence) is involved.
Status CheckFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound(path, "no such file");
    return Status::FromErrno(path, "cannot open", errno);
  }
  if (S_ISDIR(st.st_mode)) return Status::InvalidInput(path, "is a directory, expected a file");
  return Status::Ok();
}

}  // namespace

#if defined(LMKIT_WITH_PARQUET)
bool ParquetBuilt() { return true; }

namespace {

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The directory of the object this code is linked into: the lmkit binary, or the Python extension.
std::string ModuleDir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&OpenParquetText), &info) == 0 || !info.dli_fname) return "";
  return DirOf(info.dli_fname);
}

struct Plugin {
  ParquetOpenFn open = nullptr;
  std::string error;
};

const Plugin& LoadPlugin() {
  static Plugin plugin;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("LMKIT_PARQUET_PLUGIN"); env && *env) {
      candidates.push_back(env);
    } else {
      // Beside the binary (build tree), in ../lib/lmkit (installed; lmkit/bin → lmkit/lib/lmkit in a wheel), and
      // for the Python extension in the build tree's python/lmkit or the wheel's lmkit/.
      const std::string exe = ExecutableDir(), module = ModuleDir();
      candidates = {exe + "/" LMKIT_PARQUET_PLUGIN_NAME, exe + "/../lib/lmkit/" LMKIT_PARQUET_PLUGIN_NAME};
      if (!module.empty() && module != exe)
        for (const char* rel : {"/../../", "/lib/lmkit/"})
          candidates.push_back(module + rel + LMKIT_PARQUET_PLUGIN_NAME);
    }
    std::string errors, tried;
    for (const auto& path : candidates) {
      if (::access(path.c_str(), F_OK) != 0) {
        tried += (tried.empty() ? "" : " or ") + path;
        continue;
      }
      void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        errors = ::dlerror();
        continue;
      }
      plugin.open = reinterpret_cast<ParquetOpenFn>(::dlsym(h, "lmkit_parquet_open"));
      if (plugin.open) return;
      errors = path + " has no lmkit_parquet_open";
    }
    plugin.error = "cannot load Parquet support: " + (errors.empty() ? "no file " + tried : errors);
  });
  return plugin;
}

}  // namespace

Result<std::unique_ptr<ParquetTextReader>> OpenParquetText(const std::string& path, const std::string& field) {
  LMKIT_RETURN_IF_ERROR(CheckFile(path));
  const Plugin& p = LoadPlugin();
  if (!p.open) return Status::Unsupported(path, p.error);
  ParquetTextReader* reader = nullptr;
  Status error = Status::Internal("the Parquet plugin returned nothing");
  if (p.open(kParquetPluginAbi, path.c_str(), field.c_str(), &reader, &error) != 0 || !reader) return error;
  return std::unique_ptr<ParquetTextReader>(reader);
}

#else
bool ParquetBuilt() { return false; }

Result<std::unique_ptr<ParquetTextReader>> OpenParquetText(const std::string& path, const std::string&) {
  LMKIT_RETURN_IF_ERROR(CheckFile(path));
  return Status::Unsupported(path,
                             "this lmkit was built without Parquet support (pip install pyarrow into the python that "
                             "configures the build, then configure with -DLMKIT_PARQUET=ON)");
}
#endif

}  // namespace lmkit::io
