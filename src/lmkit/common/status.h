// Errors are values at the library boundary.
//
// Contract: every fallible function in src/ returns Status or Result<T>. The core never prints, never exits and never
// throws across its public API; only commands/ turns a Status into a message on stderr and an exit code
// (commands/exit_codes.h). A Status names the file (or other subject) it is about and says what is wrong in one line,
// so the command layer can print `lmkit <cmd>: <path>: <message>` without knowing anything about the failure.
#pragma once

#include <cassert>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace lmkit {

enum class ErrorCode {
  kOk = 0,
  kInvalidInput,     // a file or stream whose content is wrong (corrupt header, bad id, malformed JSON ...)
  kIo,               // the operating system refused (open, read, write, rename, mmap ...)
  kNotFound,         // a named file, tensor, preset or GPU does not exist
  kInvalidArgument,  // the caller's request is inconsistent; the message names the request's fields with Field()
  kUnsupported,      // valid but not handled by this build (e.g. big-endian .npy, CUDA requested without CUDA)
  kCancelled,        // interrupted by the user
  kInternal,         // a bug: an invariant did not hold
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status InvalidInput(std::string subject, std::string message) {
    return Status(ErrorCode::kInvalidInput, std::move(subject), std::move(message));
  }
  static Status Io(std::string subject, std::string message) {
    return Status(ErrorCode::kIo, std::move(subject), std::move(message));
  }
  static Status NotFound(std::string subject, std::string message) {
    return Status(ErrorCode::kNotFound, std::move(subject), std::move(message));
  }
  // The request is inconsistent. `message` names the fields at fault with Field("seq_len"); each front end renders
  // them in its own terms (the CLI as "--seq-len", Python as the keyword "seq_len"), see RenderFields.
  static Status InvalidArgument(std::string message) {
    return Status(ErrorCode::kInvalidArgument, "", std::move(message));
  }
  static Status Unsupported(std::string subject, std::string message) {
    return Status(ErrorCode::kUnsupported, std::move(subject), std::move(message));
  }
  static Status Cancelled(std::string message) { return Status(ErrorCode::kCancelled, "", std::move(message)); }
  static Status Internal(std::string message) { return Status(ErrorCode::kInternal, "", std::move(message)); }
  // An OS failure: message gets ": " + strerror(errno_value) appended; kNotFound for ENOENT, else kIo.
  static Status FromErrno(std::string subject, std::string what, int errno_value);

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& subject() const { return subject_; }  // usually a path; may be empty
  const std::string& message() const { return message_; }

  // "subject: message", or "message" when there is no subject, with each Field() as its bare name. One line: newlines
  // in the parts are replaced.
  std::string ToString() const;
  // As ToString, with each Field(name) replaced by field_name(name) (e.g. a CLI flag).
  std::string ToString(const std::function<std::string(std::string_view)>& field_name) const;

  // Returns a copy whose subject is `subject` when this one has none (lets a caller add the file name that a
  // lower layer, e.g. a buffer parser, did not know).
  Status WithSubject(const std::string& subject) const;
  // Returns a copy whose subject is `subject` (e.g. a staged output reported under its final path).
  Status WithSubjectReplaced(const std::string& subject) const;
  // Returns a copy with `prefix + ": "` put before the message (e.g. a tensor name).
  Status Annotate(const std::string& prefix) const;

 private:
  Status(ErrorCode c, std::string s, std::string m) : code_(c), subject_(std::move(s)), message_(std::move(m)) {}
  ErrorCode code_ = ErrorCode::kOk;
  std::string subject_;
  std::string message_;
};

// Either a value or a non-OK Status.
// A request field named inside an error message ("Field(\"seq_len\") + \" must be at least 2\""). The core names its
// own fields and never a front end's spelling of them (a CLI flag, a Python keyword): RenderFields maps them.
std::string Field(std::string_view name);
// Replaces every Field(name) in `text` by field_name(name).
std::string RenderFields(std::string_view text, const std::function<std::string(std::string_view)>& field_name);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "Result constructed from an OK Status");
  }
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace lmkit

#define LMKIT_CONCAT_INNER_(a, b) a##b
#define LMKIT_CONCAT_(a, b) LMKIT_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function when `expr` (a Status) is not OK.
#define LMKIT_RETURN_IF_ERROR(expr)        \
  do {                                     \
    ::lmkit::Status lmkit_st_ = (expr);    \
    if (!lmkit_st_.ok()) return lmkit_st_; \
  } while (0)

// `LMKIT_ASSIGN_OR_RETURN(auto x, F());` declares x from a Result or returns its Status.
#define LMKIT_ASSIGN_OR_RETURN(lhs, expr) LMKIT_ASSIGN_OR_RETURN_IMPL_(LMKIT_CONCAT_(lmkit_res_, __LINE__), lhs, expr)
#define LMKIT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
