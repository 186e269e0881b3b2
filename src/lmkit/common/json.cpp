#include "lmkit/common/json.h"

namespace lmkit {

Result<Json> ParseJson(std::string_view text, const std::string& subject) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    return Status::InvalidInput(subject, "malformed JSON at byte " + std::to_string(e.byte));
  } catch (const std::exception& e) {
    // nlohmann prefixes its message with an id ("[json.exception.out_of_range.406] number overflow parsing '1e999'");
    // the user needs only what follows.
    std::string_view what = e.what();
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string_view::npos)
      what.remove_prefix(what.find("] ") + 2);
    return Status::InvalidInput(subject, "malformed JSON: " + std::string(what));
  }
}

std::string DumpJson(const Json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lmkit
