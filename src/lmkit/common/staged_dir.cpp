#include "lmkit/common/staged_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "lmkit/common/atomic_file.h"
#include "lmkit/common/interrupt_cleanup.h"

namespace lmkit {
namespace {

void SyncDir(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)::fsync(fd);
    ::close(fd);
  }
}

// mkdtemp with a template "<prefix>XXXXXX"; "" on failure (errno set).
std::string MakeTempDir(const std::string& prefix) {
  std::string t = prefix + "XXXXXX";
  std::vector<char> buf(t.begin(), t.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) return "";
  return buf.data();
}

// Appends the entries of `dir` other than "." and ".." to *names; false when it cannot be read.
bool ListNames(const std::string& dir, std::vector<std::string>* names) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names->push_back(n);
  }
  ::closedir(d);
  return true;
}

}  // namespace

Result<StagedDir> StagedDir::Create(const std::string& dir_in) {
  if (dir_in.empty()) return Status::InvalidArgument("empty output directory");
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  StagedDir s;
  s.dir_ = dir;
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::FromErrno(dir_in, "cannot use the output directory", errno);
    if (::mkdir(dir.c_str(), 0777) != 0) return Status::FromErrno(dir_in, "cannot create the output directory", errno);
    s.created_dir_ = true;
    s.slots_.push_back(RegisterCleanup(dir));  // removed on a signal only while still empty
  } else if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidInput(dir_in, "is not a directory");
  }
  s.lock_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (s.lock_fd_ < 0) return Status::FromErrno(dir_in, "cannot open the output directory", errno);
  if (::flock(s.lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK)
      return Status::InvalidInput(dir_in, "another process is writing this directory; try again when it is done");
    return Status::FromErrno(dir_in, "cannot lock the output directory", errno);
  }
  if (::fstat(s.lock_fd_, &st) != 0) return Status::FromErrno(dir_in, "cannot stat the output directory", errno);
  // A symbolic link to a directory is written through: swapping would replace the link, not fill its target.
  struct stat lst {};
  s.can_swap_ = ::lstat(dir.c_str(), &lst) == 0 && S_ISDIR(lst.st_mode);

  // Beside `dir` (so that one rename can swap them), unless `dir` has no usable name of its own (".", "/") or its
  // parent is not writable or is another file system (a mount point): then inside it, and Commit renames file by file.
  const std::string base = dir.substr(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/') + 1);
  if (s.can_swap_ && base != "." && base != ".." && !base.empty() && dir != "/") {
    const std::string parent =
        dir.rfind('/') == std::string::npos ? "." : dir.substr(0, std::max<size_t>(1, dir.rfind('/')));
    std::string sib = MakeTempDir((parent == "/" ? "/" : parent + "/") + "." + base + ".tmp.");
    struct stat ss {};
    if (!sib.empty() && ::stat(sib.c_str(), &ss) == 0 && ss.st_dev == st.st_dev) {
      s.staging_ = sib;
    } else if (!sib.empty()) {
      ::rmdir(sib.c_str());
    }
  }
  if (s.staging_.empty()) {
    s.staging_ = MakeTempDir(dir + "/.lmkit-staging.tmp.");
    if (s.staging_.empty()) return Status::FromErrno(dir_in, "cannot create a staging directory for the output", errno);
    s.can_swap_ = false;
  }
  s.slots_.push_back(RegisterCleanup(s.staging_));
  // The staged directory becomes `dir` when swapped in: it takes the mode the destination has (mkdtemp makes 0700).
  (void)::chmod(s.staging_.c_str(), st.st_mode & 07777);
  return s;
}

StagedDir::StagedDir(StagedDir&& o) noexcept
    : dir_(std::move(o.dir_)),
      staging_(std::exchange(o.staging_, std::string())),
      can_swap_(o.can_swap_),
      created_dir_(std::exchange(o.created_dir_, false)),
      lock_fd_(std::exchange(o.lock_fd_, -1)),
      names_(std::move(o.names_)),
      slots_(std::move(o.slots_)) {
  o.slots_.clear();
}

StagedDir& StagedDir::operator=(StagedDir&& o) noexcept {
  if (this != &o) {
    Abandon();
    dir_ = std::move(o.dir_);
    staging_ = std::exchange(o.staging_, std::string());
    can_swap_ = o.can_swap_;
    created_dir_ = std::exchange(o.created_dir_, false);
    lock_fd_ = std::exchange(o.lock_fd_, -1);
    names_ = std::move(o.names_);
    slots_ = std::move(o.slots_);
    o.slots_.clear();
  }
  return *this;
}

StagedDir::~StagedDir() { Abandon(); }

void StagedDir::Abandon() {
  std::error_code ec;
  if (!staging_.empty()) std::filesystem::remove_all(staging_, ec);
  if (created_dir_) ::rmdir(dir_.c_str());  // only while empty: never someone else's files
  for (int slot : slots_) UnregisterCleanup(slot);
  slots_.clear();
  if (lock_fd_ >= 0) ::close(lock_fd_);
  lock_fd_ = -1;
  staging_.clear();
  created_dir_ = false;
}

std::string StagedDir::Path(const std::string& name) {
  const std::string p = staging_ + "/" + name;
  if (std::find(names_.begin(), names_.end(), name) == names_.end()) {
    names_.push_back(name);
    slots_.push_back(RegisterCleanup(p));
  }
  return p;
}

Status StagedDir::CheckDestination(const std::string& name) const {
  // A directory where an output file goes would be swapped away with the old files, or block a rename: refused.
  const std::string final_path = dir_ + "/" + name;
  struct stat st {};
  if (::lstat(final_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return Status::InvalidInput(final_path, "is a directory");
  return Status::Ok();
}

Status StagedDir::WriteFile(const std::string& name, std::string_view content) {
  return WriteFileWith(name, [&](AtomicFile& f) { return f.Write(content); });
}

Status StagedDir::WriteFileWith(const std::string& name, const std::function<Status(AtomicFile&)>& fill) {
  LMKIT_RETURN_IF_ERROR(CheckDestination(name));
  const std::string final_path = dir_ + "/" + name;
  auto f = AtomicFile::Create(Path(name));
  if (!f.ok()) return f.status().WithSubjectReplaced(final_path);
  Status st = fill(*f);
  if (st.ok()) st = f->Commit();
  return st.WithSubjectReplaced(final_path);
}

Status StagedDir::CommitByRenames() {
  for (const auto& name : names_) {
    const std::string from = staging_ + "/" + name, to = dir_ + "/" + name;
    if (::rename(from.c_str(), to.c_str()) != 0) return Status::FromErrno(to, "rename failed", errno);
  }
  SyncDir(dir_);
  return Status::Ok();
}

Status StagedDir::Commit() {
  if (staging_.empty()) return Status::Internal("commit of an abandoned StagedDir");
  for (const auto& name : names_) {
    struct stat st {};
    if (::lstat((staging_ + "/" + name).c_str(), &st) != 0)
      return Status::Internal("staged output " + name + " was not written");
    LMKIT_RETURN_IF_ERROR(CheckDestination(name));
  }
  SyncDir(staging_);
  Status st;
  std::vector<std::string> present;
  bool swap = can_swap_ && ListNames(dir_, &present);
  for (const auto& n : present) swap = swap && std::find(names_.begin(), names_.end(), n) != names_.end();
  if (swap && ::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, dir_.c_str(), RENAME_EXCHANGE) == 0) {
    // `staging_` now holds the previous files; they go with it below.
    const std::string parent =
        dir_.rfind('/') == std::string::npos ? "." : dir_.substr(0, std::max<size_t>(1, dir_.rfind('/')));
    SyncDir(parent);
  } else {
    // Another entry in `dir`, a link, or a file system without RENAME_EXCHANGE.
    st = CommitByRenames();
  }
  created_dir_ = false;  // `dir` holds the output now (or, after a failed rename, part of it: not ours to remove)
  Abandon();
  return st;
}

}  // namespace lmkit
