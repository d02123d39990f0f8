#include "core/file_io.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace pg::io {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

struct Injection {
    std::atomic<int> point{0};
    std::atomic<uint64_t> after_bytes{0};
    std::atomic<int> err{ENOSPC};
};
Injection g_injection;

bool injected(testing::FailPoint p) { return g_injection.point.load() == int(p); }

// fsync of a folder makes a rename inside it durable. Some filesystems cannot fsync folders
// (EINVAL); the rename is still atomic there.
int fsync_folder(int dfd) {
    if (injected(testing::FailPoint::kFolderFsync)) return g_injection.err.load();
    int err = ::fsync(dfd) == 0 ? 0 : errno;
    return err == EINVAL ? 0 : err;
}

// The pid in a name of the form "<target>.tmp-<pid>-<n>" (what AtomicFileWriter creates), or 0.
long temp_writer_pid(const char* name) {
    const char* tag = std::strstr(name, ".tmp-");
    if (!tag || tag == name) return 0;
    while (const char* later = std::strstr(tag + 1, ".tmp-")) tag = later;  // the last one
    const char* p = tag + 5;
    if (*p < '0' || *p > '9') return 0;
    char* end = nullptr;
    errno = 0;
    const long pid = std::strtol(p, &end, 10);
    if (errno || *end != '-' || pid <= 0) return 0;
    const char* n = end + 1;
    if (*n == '\0') return 0;
    for (const char* c = n; *c; ++c)
        if (*c < '0' || *c > '9') return 0;
    return pid;
}

// Seconds since the epoch when process `pid` started (from /proc), or -1 if unknown.
double process_start_time(long pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return -1;
    const std::size_t paren = line.rfind(')');  // the command name may hold spaces and ')'
    if (paren == std::string::npos) return -1;
    std::istringstream fields(line.substr(paren + 1));
    std::string field;
    unsigned long long start_ticks = 0;
    for (int i = 3; i <= 22 && (fields >> field); ++i)  // field 22 = starttime, in clock ticks
        if (i == 22) start_ticks = std::strtoull(field.c_str(), nullptr, 10);
    if (!start_ticks) return -1;
    std::ifstream proc_stat("/proc/stat");
    double boot = -1;
    while (std::getline(proc_stat, line))
        if (line.rfind("btime ", 0) == 0) boot = std::strtod(line.c_str() + 6, nullptr);
    const long ticks = ::sysconf(_SC_CLK_TCK);
    if (boot < 0 || ticks <= 0) return -1;
    return boot + double(start_ticks) / double(ticks);
}

// True when the writer that named a temporary file `pid` is certainly gone: no process has that
// pid, or the process now holding it belongs to another user than the file (the pid was reused
// by a stranger), or it started after the file was last written (reused by one of ours). A
// writer in this process (another thread's save) is never gone.
bool writer_is_gone(long pid, const struct stat& st) {
    if (pid == long(::getpid())) return false;
    if (::kill(pid_t(pid), 0) != 0) return errno == ESRCH || (errno == EPERM && st.st_uid == ::geteuid());
    const double started = process_start_time(pid);
    // The margin covers /proc/stat's btime, which is rounded to seconds and drifts with NTP.
    return started > 0 && started > double(st.st_mtime) + 5.0;
}

}  // namespace

void remove_stale_temporaries(const std::string& folder) {
    DIR* dir = ::opendir(folder.c_str());
    if (!dir) return;
    while (const dirent* e = ::readdir(dir)) {
        const long pid = temp_writer_pid(e->d_name);
        if (!pid) continue;
        const std::string path = folder + "/" + e->d_name;
        struct stat st;
        if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
        if (writer_is_gone(pid, st)) ::unlink(path.c_str());  // best effort: a failure changes nothing
    }
    ::closedir(dir);
}

namespace testing {
void inject_failure(FailPoint point, uint64_t after_bytes, int err) {
    g_injection.after_bytes = after_bytes;
    g_injection.err = err;
    g_injection.point = int(point);
}
void clear_failure() { g_injection.point = int(FailPoint::kNone); }
}  // namespace testing

// ---- reading -------------------------------------------------------------------------------

void ByteSource::read_at(uint64_t offset, void* dst, std::size_t n, const char* what) const {
    if (offset > size() || n > size() - offset)
        throw Error(PG_ERR_FORMAT, name() + ": " + what + " at bytes [" + std::to_string(offset) + ", " +
                                       std::to_string(offset) + "+" + std::to_string(n) +
                                       ") lies outside the file (" + std::to_string(size()) + " bytes)");
    if (n) read_raw(offset, dst, n);
}

bool is_regular_file(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

namespace {

// Why `path` cannot be read as a file ("" if it can): a FIFO would block the open or the read,
// a device like /dev/zero never ends, a folder has no bytes.
std::string not_regular(const std::string& path, mode_t mode) {
    if (S_ISREG(mode)) return "";
    const char* kind = S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" : S_ISCHR(mode) ? "a character device"
                       : S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : "of another kind";
    return "\"" + path + "\" is " + kind + ", not a regular file: refused before reading";
}

// What FileSource and MappedFile read: a regular file opened read-only, its size in *size; the
// folder's stale temporaries removed first, so loads clean up after killed saves too. The path
// is checked before the open, and the opened descriptor again (O_NONBLOCK: a FIFO swapped in
// between cannot block the open).
int open_regular_file(const std::string& path, uint64_t* size) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) throw Error(PG_ERR_IO, "cannot open \"" + path + "\": " + errno_text(errno));
    if (const std::string why = not_regular(path, st.st_mode); !why.empty()) throw Error(PG_ERR_IO, why);
    remove_stale_temporaries(parent_folder(path));
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) throw Error(PG_ERR_IO, "cannot open \"" + path + "\": " + errno_text(errno));
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw Error(PG_ERR_IO, "cannot stat \"" + path + "\": " + errno_text(err));
    }
    if (const std::string why = not_regular(path, st.st_mode); !why.empty()) {
        ::close(fd);
        throw Error(PG_ERR_IO, why);
    }
    *size = uint64_t(st.st_size);
    return fd;
}

}  // namespace

FileSource::FileSource(const std::string& path) : path_(path) { fd_ = open_regular_file(path, &size_); }

FileSource::~FileSource() {
    if (fd_ >= 0) ::close(fd_);
}

namespace {

// n bytes at `offset` of fd (the file named `name`), whatever pread returns in pieces.
void pread_fully(int fd, uint64_t offset, void* dst, std::size_t n, const std::string& name) {
    auto* p = static_cast<uint8_t*>(dst);
    while (n > 0) {
        ssize_t got = ::pread(fd, p, n, off_t(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw Error(PG_ERR_IO, "cannot read \"" + name + "\": " + errno_text(errno));
        if (got == 0) throw Error(PG_ERR_IO, "\"" + name + "\" shrank while being read");
        p += got;
        offset += uint64_t(got);
        n -= std::size_t(got);
    }
}

}  // namespace

void FileSource::read_raw(uint64_t offset, void* dst, std::size_t n) const { pread_fully(fd_, offset, dst, n, path_); }

DescriptorSource::DescriptorSource(int fd, int64_t offset, int64_t length) : fd_(fd) {
    name_ = "file descriptor " + std::to_string(fd);
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0) throw Error(PG_ERR_IO, "cannot stat " + name_ + ": " + errno_text(fd < 0 ? EBADF : errno));
    if (const std::string why = not_regular(name_, st.st_mode); !why.empty()) throw Error(PG_ERR_IO, why);
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_WRONLY) throw Error(PG_ERR_IO, name_ + " is not open for reading");
    const auto file_size = uint64_t(st.st_size);
    if (offset < 0 || uint64_t(offset) > file_size)
        throw Error(PG_ERR_INVALID_ARGUMENT, "offset " + std::to_string(offset) + " is outside " + name_ + "'s " +
                                                 std::to_string(file_size) + " bytes");
    offset_ = uint64_t(offset);
    size_ = length < 0 ? file_size - offset_ : uint64_t(length);
    if (size_ > file_size - offset_)
        throw Error(PG_ERR_INVALID_ARGUMENT, "length " + std::to_string(length) + " at offset " + std::to_string(offset) +
                                                 " runs past the end of " + name_ + " (" + std::to_string(file_size) + " bytes)");
    name_ += " [" + std::to_string(offset_) + ", +" + std::to_string(size_) + ")";
}

void DescriptorSource::read_raw(uint64_t offset, void* dst, std::size_t n) const {
    pread_fully(fd_, offset_ + offset, dst, n, name_);
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
    const int fd = open_regular_file(path, &size_);
    if (size_ == 0) {
        ::close(fd);
        throw Error(PG_ERR_FORMAT, "\"" + path + "\" is empty: nothing to map");
    }
    void* p = ::mmap(nullptr, std::size_t(size_), PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);  // the mapping keeps the file (its inode) alive
    if (p == MAP_FAILED) throw Error(PG_ERR_IO, "cannot map \"" + path + "\": " + errno_text(err));
    data_ = static_cast<const uint8_t*>(p);
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), std::size_t(size_));
}

void MappedFile::read_raw(uint64_t offset, void* dst, std::size_t n) const {
    std::memcpy(dst, data_ + offset, n);
}

void MemorySource::read_raw(uint64_t offset, void* dst, std::size_t n) const {
    std::memcpy(dst, data_ + offset, n);
}

uint64_t checked_whole_size(const FileSource& src, uint64_t max_bytes) {
    if (src.size() > max_bytes)
        throw Error(PG_ERR_FORMAT, "\"" + src.name() + "\" is " + std::to_string(src.size()) +
                                       " bytes, more than the " + std::to_string(max_bytes) + " allowed");
    return src.size();
}

std::vector<uint8_t> read_small_file(const std::string& path, uint64_t max_bytes) {
    FileSource src(path);
    std::vector<uint8_t> bytes(static_cast<std::size_t>(checked_whole_size(src, max_bytes)));
    src.read_at(0, bytes.data(), bytes.size(), "contents");
    return bytes;
}

std::string parent_folder(const std::string& path) {
    std::size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

std::string sibling_path(const std::string& path, const std::string& name) {
    std::size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? name : path.substr(0, slash + 1) + name;
}

// ---- atomic writing ------------------------------------------------------------------------

AtomicFileWriter::AtomicFileWriter(const std::string& path) : path_(path) {
    if (path.empty() || path.back() == '/')
        throw Error(PG_ERR_INVALID_ARGUMENT, "cannot save to \"" + path + "\": not a file name");
    remove_stale_temporaries(parent_folder(path));
    static std::atomic<unsigned> counter{0};
    // O_EXCL with a fresh name per attempt: never reuses (or follows a link at) an existing path.
    for (int attempt = 0; attempt < 100; ++attempt) {
        temp_path_ = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
        fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd_ >= 0) return;
        if (errno != EEXIST) break;
    }
    // The message names the caller's path and folder, not the temporary name they never chose.
    int err = errno;
    const std::string folder = parent_folder(path);
    if (err == ENOENT || err == ENOTDIR)
        throw Error(PG_ERR_IO, "cannot save \"" + path + "\": there is no folder \"" + folder + "\"");
    throw Error(PG_ERR_IO, "cannot save \"" + path + "\": cannot create a file in \"" + folder + "\": " + errno_text(err));
}

AtomicFileWriter::~AtomicFileWriter() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::fail(const std::string& what, int err) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
    throw Error(PG_ERR_IO, "cannot save \"" + path_ + "\" (" + what + "): " + errno_text(err) +
                               "; the previous file, if any, is unchanged");
}

void AtomicFileWriter::write(const void* data, std::size_t n) {
    if (fd_ < 0) throw Error(PG_ERR_INTERNAL, "AtomicFileWriter: write after failure or commit");
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
        std::size_t chunk = n;
        if (injected(testing::FailPoint::kWrite)) {
            uint64_t limit = g_injection.after_bytes.load();
            if (written_ >= limit) fail("write", g_injection.err.load());
            if (chunk > limit - written_) chunk = std::size_t(limit - written_);  // partial write first
        }
        ssize_t put = ::write(fd_, p, chunk);
        if (put < 0 && errno == EINTR) continue;
        if (put < 0) fail("write", errno);
        if (put == 0) fail("write", EIO);
        p += put;
        n -= std::size_t(put);
        written_ += uint64_t(put);
    }
}

void AtomicFileWriter::restart() {
    if (fd_ < 0) throw Error(PG_ERR_INTERNAL, "AtomicFileWriter: restart after failure or commit");
    if (::ftruncate(fd_, 0) != 0) fail("truncate", errno);
    if (::lseek(fd_, 0, SEEK_SET) != 0) fail("seek", errno);
    written_ = 0;
}

void AtomicFileWriter::commit() {
    if (fd_ < 0) throw Error(PG_ERR_INTERNAL, "AtomicFileWriter: commit after failure or commit");
    if (injected(testing::FailPoint::kFsync)) fail("fsync", g_injection.err.load());
    if (::fsync(fd_) != 0) fail("fsync", errno);
    const int close_rc = ::close(fd_);
    const int close_err = injected(testing::FailPoint::kClose) ? g_injection.err.load() : close_rc ? errno : 0;
    fd_ = -1;
    if (close_err) fail("close", close_err);
    // The folder is opened before the rename, so a folder that cannot be opened still fails
    // with the previous file untouched.
    const std::string folder = parent_folder(path_);
    const int dfd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) fail("open folder \"" + folder + "\"", errno);
    if (injected(testing::FailPoint::kRename) || ::rename(temp_path_.c_str(), path_.c_str()) != 0) {
        const int err = injected(testing::FailPoint::kRename) ? g_injection.err.load() : errno;
        ::close(dfd);
        fail("rename", err);
    }
    committed_ = true;
    // The one failure after the rename: the new file is complete and in place (every earlier
    // step succeeded), but the rename may not survive a power cut, which the caller must hear.
    const int err = fsync_folder(dfd);
    ::close(dfd);
    if (err != 0)
        throw Error(PG_ERR_IO, "saved \"" + path_ + "\" (the new file is complete and in place) but could not fsync "
                               "its folder: " + errno_text(err) +
                                   "; after a power cut the folder may still show the previous file");
}

void write_file_atomically(const std::string& path, const void* data, std::size_t n) {
    AtomicFileWriter w(path);
    w.write(data, n);
    w.commit();
}

}  // namespace pg::io
