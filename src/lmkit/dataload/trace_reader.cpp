#include "lmkit/dataload/trace_reader.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <istream>
#include <nlohmann/json.hpp>
#include <streambuf>
#include <string_view>
#include <unordered_map>

namespace lmkit::dataload {
namespace {

// A read-only streambuf over gzread: gzipped and plain files alike (zlib passes plain data through).
class GzBuf : public std::streambuf {
 public:
  explicit GzBuf(gzFile f) : f_(f) {}
  uint64_t total() const { return total_; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  bool too_large() const { return too_large_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (!error_.empty() || too_large_) return traits_type::eof();
    const int n = gzread(f_, buf_, sizeof buf_);
    if (n < 0) {
      int errnum = 0;
      const char* msg = gzerror(f_, &errnum);
      error_ = errnum == Z_ERRNO ? std::strerror(errno) : (msg != nullptr ? msg : "gzip stream error");
      return traits_type::eof();
    }
    if (n == 0) return traits_type::eof();
    total_ += static_cast<uint64_t>(n);
    if (total_ > kMaxTraceBytes) {
      too_large_ = true;
      return traits_type::eof();
    }
    setg(buf_, buf_, buf_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  gzFile f_;
  char buf_[1 << 18];
  uint64_t total_ = 0;
  std::string error_;
  bool too_large_ = false;
};

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// The fields of one event object, as the SAX walk meets them.
struct RawEvent {
  std::string ph, cat, name, pid, tid;
  double ts = 0, dur = 0;
  bool has_ts = false, has_dur = false;
  int64_t correlation = -1;
  uint64_t bytes = 0;
};

using Sax = nlohmann::json_sax<nlohmann::json>;

// Walks the document; keeps classified events. Containers are tracked by depth: the events are the objects of the
// top-level array (legacy) or of the top-level object's "traceEvents" array (Kineto).
class TraceSax : public Sax {
 public:
  explicit TraceSax(TraceEvents* out) : out_(out) {}

  bool null() override { return Value(nullptr, nullptr, nullptr); }
  bool boolean(bool) override { return Value(nullptr, nullptr, nullptr); }
  bool number_integer(number_integer_t v) override {
    const double d = static_cast<double>(v);
    const std::string s = std::to_string(v);
    return Value(&d, &s, nullptr, v);
  }
  bool number_unsigned(number_unsigned_t v) override {
    const double d = static_cast<double>(v);
    const std::string s = std::to_string(v);
    return Value(&d, &s, nullptr, static_cast<int64_t>(v));
  }
  bool number_float(number_float_t v, const string_t& text) override {
    const double d = v;
    return Value(&d, &text, nullptr);
  }
  bool string(string_t& v) override { return Value(nullptr, &v, &v); }
  bool binary(binary_t&) override { return Value(nullptr, nullptr, nullptr); }

  bool start_object(std::size_t) override {
    const int d = depth_++;
    if (d == 0) {
      top_object_ = true;
    } else if (events_depth_ >= 0 && d == events_depth_ && !in_event_) {
      in_event_ = true;
      ev_ = RawEvent{};
    } else if (in_event_ && d == events_depth_ + 1 && key_ == "args") {
      in_args_ = true;
    } else if (devices_depth_ >= 0 && d == devices_depth_) {
      in_device_ = true;
    }
    key_.clear();
    return true;
  }
  bool end_object() override {
    const int d = --depth_;
    if (in_event_ && d == events_depth_) {
      in_event_ = false;
      Keep();
    } else if (in_args_ && d == events_depth_ + 1) {
      in_args_ = false;
    } else if (in_device_ && d == devices_depth_) {
      in_device_ = false;
    }
    key_.clear();
    return true;
  }
  bool start_array(std::size_t) override {
    const int d = depth_++;
    if (d == 0) {
      events_depth_ = 1;  // the legacy layout: the document is the event list
      found_events_ = true;
    } else if (d == 1 && top_object_ && key_ == "traceEvents") {
      events_depth_ = 2;
      found_events_ = true;
    } else if (d == 1 && top_object_ && key_ == "deviceProperties") {
      devices_depth_ = 2;
    }
    key_.clear();
    return true;
  }
  bool end_array() override {
    const int d = --depth_;
    if (d == events_depth_ - 1) events_depth_ = -1;
    if (d == devices_depth_ - 1) devices_depth_ = -1;
    key_.clear();
    return true;
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    error_position_ = position;
    error_ = ex.what();
    return false;
  }

  bool found_events() const { return found_events_; }
  bool top_object() const { return top_object_; }
  size_t error_position() const { return error_position_; }
  const std::string& error() const { return error_; }

 private:
  // A scalar value at the current depth, under key_. `num`/`text` are null when the value is not a number/string.
  bool Value(const double* num, const std::string* text, const std::string* str, int64_t integer = -1) {
    const int d = depth_;
    if (in_event_ && d == events_depth_ + 1 && !in_args_) {
      if (key_ == "ph" && str != nullptr)
        ev_.ph = *str;
      else if (key_ == "cat" && str != nullptr)
        ev_.cat = *str;
      else if (key_ == "name" && str != nullptr)
        ev_.name = *str;
      else if (key_ == "pid" && text != nullptr)
        ev_.pid = *text;
      else if (key_ == "tid" && text != nullptr)
        ev_.tid = *text;
      else if (key_ == "ts" && num != nullptr)
        ev_.ts = *num, ev_.has_ts = true;
      else if (key_ == "dur" && num != nullptr)
        ev_.dur = *num, ev_.has_dur = true;
    } else if (in_args_ && d == events_depth_ + 2) {
      if (key_ == "correlation" && num != nullptr)
        ev_.correlation = integer >= 0 ? integer : static_cast<int64_t>(*num);
      else if (key_ == "bytes" && num != nullptr && *num >= 0)
        ev_.bytes = static_cast<uint64_t>(*num);
    } else if (in_device_ && d == devices_depth_ + 1 && key_ == "name" && str != nullptr) {
      out_->gpus.push_back(*str);
    }
    key_.clear();
    return true;
  }

  uint32_t Thread(const RawEvent& e) {
    const std::string k = e.pid + "/" + e.tid;
    auto [it, added] = thread_ids_.emplace(k, static_cast<uint32_t>(out_->threads.size()));
    if (added) out_->threads.push_back(k);
    return it->second;
  }

  void Keep() {
    ++out_->events_read;
    if (ev_.ph != "X" || !ev_.has_ts || !ev_.has_dur || ev_.dur < 0) return;
    TraceEvent t;
    const std::string_view name = ev_.name, cat = ev_.cat;
    const bool cpu_op = cat.empty() || IEquals(cat, "cpu_op") || IEquals(cat, "operator");
    if (StartsWith(name, "ProfilerStep#")) {
      t.kind = TraceEventKind::kStep;
      try {
        t.step = std::stoll(std::string(name.substr(13)));
      } catch (const std::exception&) {
        return;
      }
    } else if (StartsWith(name, "enumerate(DataLoader)#") && EndsWith(name, "__next__")) {
      t.kind = TraceEventKind::kDataLoaderNext;
      t.pageable = name.find("_SingleProcessDataLoaderIter") != std::string_view::npos;
      if (out_->dataloader_name.empty()) out_->dataloader_name = ev_.name;
    } else if (cpu_op && (name == "aten::stack" || name == "aten::cat" || name == "aten::_cat")) {
      t.kind = TraceEventKind::kCollate;
    } else if (cpu_op && (name == "aten::pin_memory" || name == "aten::_pin_memory")) {
      t.kind = TraceEventKind::kPin;
    } else if ((IEquals(cat, "cuda_runtime") || IEquals(cat, "runtime") || IEquals(cat, "cuda_driver")) &&
               (StartsWith(name, "cudaMemcpy") || StartsWith(name, "cuMemcpy"))) {
      t.kind = TraceEventKind::kCopyCall;
    } else if ((IEquals(cat, "gpu_memcpy") || IEquals(cat, "memcpy")) && StartsWith(name, "Memcpy HtoD")) {
      t.kind = TraceEventKind::kHtoD;
      t.pageable = name.find("Pageable") != std::string_view::npos;
      t.bytes = ev_.bytes;
    } else if (IEquals(cat, "kernel")) {
      t.kind = TraceEventKind::kKernel;
    } else {
      return;
    }
    t.thread = Thread(ev_);
    t.correlation = ev_.correlation;
    t.ts_us = ev_.ts;
    t.dur_us = ev_.dur;
    out_->events.push_back(t);
  }

  TraceEvents* out_;
  int depth_ = 0;
  int events_depth_ = -1, devices_depth_ = -1;
  bool top_object_ = false, found_events_ = false;
  bool in_event_ = false, in_args_ = false, in_device_ = false;
  std::string key_;
  RawEvent ev_;
  std::unordered_map<std::string, uint32_t> thread_ids_;
  size_t error_position_ = 0;
  std::string error_;
};

}  // namespace

Result<TraceEvents> ReadTrace(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT) return Status::NotFound(path, "no such file");
    return Status::FromErrno(path, "cannot stat", e);
  }
  if (!S_ISREG(st.st_mode)) return Status::InvalidInput(path, "not a regular file");
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return Status::FromErrno(path, "cannot open", errno != 0 ? errno : EIO);
  TraceEvents out;
  GzBuf buf(f);
  std::istream in(&buf);
  TraceSax sax(&out);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(in, &sax);
  } catch (const std::exception& e) {  // the SAX parser reports through parse_error; anything else is a bug
    gzclose(f);
    return Status::Internal(path + ": " + e.what());
  }
  gzclose(f);
  if (buf.failed()) return Status::Io(path, "read failed: " + buf.error());
  if (buf.too_large())
    return Status::InvalidInput(path, "more than " + std::to_string(kMaxTraceBytes >> 30) + " GiB of JSON");
  if (!ok) {
    return Status::InvalidInput(path, "not a JSON trace: parse error at byte " + std::to_string(sax.error_position()));
  }
  if (!sax.found_events()) {
    return Status::InvalidInput(path,
                                "not a Chrome trace: no \"traceEvents\" list (torch.profiler's "
                                "export_chrome_trace or tensorboard_trace_handler writes one)");
  }
  out.kineto = sax.top_object();
  return out;
}

}  // namespace lmkit::dataload
