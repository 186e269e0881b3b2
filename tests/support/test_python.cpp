#include "support/test_python.h"

#include <map>
#include <mutex>
#include <sstream>

#include "support/run_lmkit.h"

namespace lmkit::test {

std::string TestPythonWith(const std::string& modules) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(modules); it != cache.end()) return it->second;
  std::string py = LMKIT_TEST_PYTHON;
  if (!py.empty()) {
    std::string imports;
    std::istringstream in(modules);
    for (std::string m; in >> m;) imports += "import " + m + ";";
    if (RunShell("'" + py + "' -c '" + imports + "' >/dev/null 2>&1").exit_code != 0) py.clear();
  }
  cache[modules] = py;
  return py;
}

}  // namespace lmkit::test
