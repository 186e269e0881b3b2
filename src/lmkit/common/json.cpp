#include "lmkit/common/json.h"

namespace lmkit {

Result<Json> ParseJson(std::string_view text, const std::string& subject) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    return Status::InvalidInput(subject, "malformed JSON at byte " + std::to_string(e.byte));
  } catch (const std::exception& e) {
    return Status::InvalidInput(subject, std::string("malformed JSON: ") + e.what());
  }
}

std::string DumpJson(const Json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lmkit
