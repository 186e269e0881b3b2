// Shard boundaries (see shard.h). Finding a boundary reads windows from k·total/n on with pread, 4 KiB first and up to
// 1 MiB, so a job touches only its own range plus a few windows of the others.
#include "lmkit/bpe/shard.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "lmkit/bpe/safe_cut.h"

namespace lmkit::bpe {

namespace {

// Whether an occurrence of a special starts in (c - len, c) and ends after c.
bool Straddled(std::string_view text, size_t c, const std::vector<std::string>& specials) {
  for (const auto& s : specials) {
    const size_t len = s.size();
    if (len < 2) continue;
    for (size_t start = c >= len - 1 ? c - (len - 1) : 0; start < c; ++start)
      if (start + len <= text.size() && std::memcmp(text.data() + start, s.data(), len) == 0) return true;
  }
  return false;
}

size_t MaxLen(const std::vector<std::string>& specials) {
  size_t m = 0;
  for (const auto& s : specials) m = std::max(m, s.size());
  return m;
}

// floor(total * k / n) without overflow (k < n < 2^32 in practice: (total % n) * k < n^2).
// floor(total * k / n), in 128 bits: a 64-bit form overflowed once N passed 2^32 (`--shard 18446744073709551614/
// 18446744073709551615` gave the range [0, 0)).
uint64_t Target(uint64_t total, uint64_t k, uint64_t n) {
  __extension__ typedef unsigned __int128 Wide;
  return static_cast<uint64_t>(static_cast<Wide>(total) * k / n);
}

struct InputFile {
  std::string path;
  uint64_t offset = 0;  // in the concatenation
  uint64_t size = 0;
};

// Reads [off, off + n) of the concatenation (clipped to its end).
Status ReadAt(const std::vector<InputFile>& files, uint64_t off, size_t n, std::string* out) {
  out->clear();
  for (const auto& f : files) {
    if (n == 0) break;
    if (off >= f.offset + f.size || f.size == 0) continue;
    const uint64_t in = off - f.offset;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(n, f.size - in));
    const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(f.path, "cannot open", errno);
    const size_t old = out->size();
    out->resize(old + want);
    size_t got = 0;
    while (got < want) {
      const ssize_t r = ::pread(fd, out->data() + old + got, want - got, static_cast<off_t>(in + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        const int e = errno;
        ::close(fd);
        if (r == 0) return Status::Io(f.path, "file shrank while reading");
        return Status::FromErrno(f.path, "cannot read", e);
      }
      got += static_cast<size_t>(r);
    }
    ::close(fd);
    off += want;
    n -= want;
  }
  return Status::Ok();
}

// The first cut at or after `target`, reading windows of the files.
Result<uint64_t> FirstCutFrom(const std::vector<InputFile>& files, uint64_t total, uint64_t target,
                              const std::vector<std::string>& specials) {
  if (target == 0) return uint64_t{0};
  if (target >= total) return total;
  const size_t L = MaxLen(specials);
  const uint64_t before = 2 * L + 2, after = L + 2;
  // Windows grow from 4 KiB to 1 MiB: a cut is nearly always within a few bytes of the target, and a fresh 1 MiB
  // buffer for each of the 16 pieces per rank of an MPI run cost more page faults than the rest of a piece's reading.
  uint64_t step = uint64_t{4} << 10;
  std::string window;
  for (uint64_t pos = target; pos < total; pos += step, step = std::min(step * 2, uint64_t{1} << 20)) {
    const uint64_t lo = pos >= before ? pos - before : 0;
    const uint64_t hi = std::min(total, pos + step + after);
    LMKIT_RETURN_IF_ERROR(ReadAt(files, lo, static_cast<size_t>(hi - lo), &window));
    const uint64_t last = std::min(pos + step, total);
    // The window is clipped only at the input's real ends, so IsShardCut sees all the context it needs.
    for (uint64_t c = pos; c < last; ++c)
      if (IsShardCut(window, static_cast<size_t>(c - lo), specials)) return c;
  }
  return total;
}

}  // namespace

Result<ShardSpec> ParseShardSpec(std::string_view text) {
  const auto bad = [&] {
    return Status::InvalidArgument(Field("shard") +
                                   fmt::format(" '{}': expected K/N with 0 <= K < N (e.g. 0/4)", text));
  };
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return bad();
  ShardSpec s;
  const char* b = text.data();
  auto r1 = std::from_chars(b, b + slash, s.k);
  auto r2 = std::from_chars(b + slash + 1, b + text.size(), s.n);
  if (r1.ec != std::errc() || r1.ptr != b + slash || r2.ec != std::errc() || r2.ptr != b + text.size() || s.n == 0 ||
      s.k >= s.n || slash == 0)
    return bad();
  return s;
}

bool IsShardCut(std::string_view text, size_t c, const std::vector<std::string>& specials) {
  if (c == 0 || c >= text.size()) return false;
  if (Straddled(text, c, specials)) return false;
  if (IsPatternSafeCut(text, c)) return true;
  for (const auto& s : specials) {
    const size_t len = s.size();
    if (len == 0 || len > c) continue;
    if (std::memcmp(text.data() + c - len, s.data(), len) == 0 && !Straddled(text, c - len, specials)) return true;
  }
  return false;
}

std::vector<uint64_t> ShardCutsOfText(std::string_view text, uint64_t n, const std::vector<std::string>& specials) {
  std::vector<uint64_t> cuts{0};
  for (uint64_t k = 1; k < n; ++k) {
    uint64_t c = Target(text.size(), k, n);
    while (c > 0 && c < text.size() && !IsShardCut(text, static_cast<size_t>(c), specials)) ++c;
    cuts.push_back(c);
  }
  cuts.push_back(text.size());
  return cuts;
}

Result<ShardRange> ComputeShardRange(const std::vector<std::string>& paths, ShardSpec spec,
                                     const std::vector<std::string>& specials) {
  if (spec.n == 0 || spec.k >= spec.n) return Status::InvalidArgument("shard index out of range");
  std::vector<InputFile> files;
  uint64_t total = 0;
  for (const auto& p : paths) {
    if (p == "-") return Status::InvalidArgument("stdin cannot be split into shards; give files");
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status::NotFound(p, "no such file");
      return Status::FromErrno(p, "cannot stat", errno);
    }
    if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(fmt::format("{}: shards need regular files", p));
    files.push_back({p, total, static_cast<uint64_t>(st.st_size)});
    total += static_cast<uint64_t>(st.st_size);
  }
  ShardRange r;
  r.total = total;
  LMKIT_ASSIGN_OR_RETURN(r.begin, FirstCutFrom(files, total, Target(total, spec.k, spec.n), specials));
  LMKIT_ASSIGN_OR_RETURN(r.end, FirstCutFrom(files, total, Target(total, spec.k + 1, spec.n), specials));
  return r;
}

}  // namespace lmkit::bpe
