#include "io/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

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

// fsync of a folder makes a rename inside it durable.
int fsync_folder(const std::string& folder) {
    int dfd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return errno;
    int rc = ::fsync(dfd);
    int err = rc == 0 ? 0 : errno;
    ::close(dfd);
    // Some filesystems cannot fsync folders (EINVAL); the rename is still atomic there.
    return err == EINVAL ? 0 : err;
}

}  // namespace

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

FileSource::FileSource(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw Error(PG_ERR_IO, "cannot open \"" + path + "\": " + errno_text(errno));
    struct stat st;
    if (::fstat(fd_, &st) != 0) {
        int err = errno;
        ::close(fd_);
        throw Error(PG_ERR_IO, "cannot stat \"" + path + "\": " + errno_text(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd_);
        throw Error(PG_ERR_IO, "\"" + path + "\" is not a regular file");
    }
    size_ = uint64_t(st.st_size);
}

FileSource::~FileSource() {
    if (fd_ >= 0) ::close(fd_);
}

void FileSource::read_raw(uint64_t offset, void* dst, std::size_t n) const {
    auto* p = static_cast<uint8_t*>(dst);
    while (n > 0) {
        ssize_t got = ::pread(fd_, p, n, off_t(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw Error(PG_ERR_IO, "cannot read \"" + path_ + "\": " + errno_text(errno));
        if (got == 0) throw Error(PG_ERR_IO, "\"" + path_ + "\" shrank while being read");
        p += got;
        offset += uint64_t(got);
        n -= std::size_t(got);
    }
}

void MemorySource::read_raw(uint64_t offset, void* dst, std::size_t n) const {
    std::memcpy(dst, data_ + offset, n);
}

std::vector<uint8_t> read_small_file(const std::string& path, uint64_t max_bytes) {
    FileSource src(path);
    if (src.size() > max_bytes)
        throw Error(PG_ERR_FORMAT, "\"" + path + "\" is " + std::to_string(src.size()) +
                                       " bytes, more than the " + std::to_string(max_bytes) + " allowed");
    std::vector<uint8_t> bytes(static_cast<std::size_t>(src.size()));
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
    static std::atomic<unsigned> counter{0};
    // O_EXCL with a fresh name per attempt: never reuses (or follows a link at) an existing path.
    for (int attempt = 0; attempt < 100; ++attempt) {
        temp_path_ = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
        fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd_ >= 0) return;
        if (errno != EEXIST) break;
    }
    int err = errno;
    throw Error(PG_ERR_IO, "cannot create a temporary file beside \"" + path + "\": " + errno_text(err));
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
    if (::close(fd_) != 0) {
        fd_ = -1;
        fail("close", errno);
    }
    fd_ = -1;
    if (injected(testing::FailPoint::kRename)) fail("rename", g_injection.err.load());
    if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("rename", errno);
    committed_ = true;
    // The new file is in place; a failing folder fsync means the rename may not survive a power
    // cut, which the caller must hear about (the old or the new file is there either way).
    int err = fsync_folder(parent_folder(path_));
    if (err != 0)
        throw Error(PG_ERR_IO, "saved \"" + path_ + "\" but could not fsync its folder: " + errno_text(err));
}

void write_file_atomically(const std::string& path, const void* data, std::size_t n) {
    AtomicFileWriter w(path);
    w.write(data, n);
    w.commit();
}

}  // namespace pg::io
