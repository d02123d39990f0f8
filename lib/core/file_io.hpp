// Files without surprises: bounded random-access reading (from a file or from memory, so the
// fuzzers and the corruption tests exercise exactly the code that reads real files) and atomic
// writing (a checkpoint on disk is always either the old one or the new one, never a mixture,
// and a failed save leaves the old one untouched).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pg::io {

// Random-access bytes with a known size. read_at throws PG_ERR_IO on failure and PG_ERR_FORMAT
// (naming `what`) when [offset, offset + n) is not inside the source.
class ByteSource {
public:
    virtual ~ByteSource() = default;
    virtual uint64_t size() const = 0;
    virtual const std::string& name() const = 0;  // for messages: the path or "<memory>"
    void read_at(uint64_t offset, void* dst, std::size_t n, const char* what) const;

protected:
    virtual void read_raw(uint64_t offset, void* dst, std::size_t n) const = 0;
};

class FileSource : public ByteSource {
public:
    // Throws PG_ERR_IO naming the path and errno, or what the path is when it is not a regular
    // file (a FIFO, a device, a folder: refused before it is opened for reading, so nothing
    // blocks or reads forever). Removes stale temporaries in the file's folder first
    // (remove_stale_temporaries), so loads clean up after killed saves too. Every file the
    // library reads is opened here or by MappedFile, which has the same checks.
    explicit FileSource(const std::string& path);
    ~FileSource() override;
    FileSource(const FileSource&) = delete;
    FileSource& operator=(const FileSource&) = delete;
    uint64_t size() const override { return size_; }
    const std::string& name() const override { return path_; }

protected:
    void read_raw(uint64_t offset, void* dst, std::size_t n) const override;

private:
    std::string path_;
    int fd_ = -1;
    uint64_t size_ = 0;
};

// A range of a regular file the caller opened (Android hands an asset out as a descriptor, an
// offset and a length): read with pread, so the descriptor's position never moves, and never
// closed here. Throws PG_ERR_IO for a descriptor that is not a readable regular file and
// PG_ERR_INVALID_ARGUMENT naming offset or length when the range is not inside the file
// (length < 0: to the file's end).
class DescriptorSource : public ByteSource {
public:
    DescriptorSource(int fd, int64_t offset, int64_t length);
    uint64_t size() const override { return size_; }
    const std::string& name() const override { return name_; }

protected:
    void read_raw(uint64_t offset, void* dst, std::size_t n) const override;

private:
    int fd_;
    uint64_t offset_ = 0, size_ = 0;
    std::string name_;
};

class MemorySource : public ByteSource {
public:
    MemorySource(const void* data, std::size_t size, std::string name = "<memory>")
        : data_(static_cast<const uint8_t*>(data)), size_(size), name_(std::move(name)) {}
    uint64_t size() const override { return size_; }
    const std::string& name() const override { return name_; }

protected:
    void read_raw(uint64_t offset, void* dst, std::size_t n) const override;

private:
    const uint8_t* data_;
    std::size_t size_;
    std::string name_;
};

// A whole regular file mapped read-only (PROT_READ, MAP_PRIVATE; the descriptor is closed once
// mapped), read like any source. Bytes past the file's end at mapping time are never exposed.
// If another process truncates the file while it is mapped, touching the lost pages raises
// SIGBUS: validate at open, and replace files by rename (AtomicFileWriter), never in place.
class MappedFile : public ByteSource {
public:
    // Throws PG_ERR_IO naming the path and errno (PG_ERR_FORMAT for an empty file: nothing to map).
    explicit MappedFile(const std::string& path);
    ~MappedFile() override;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    uint64_t size() const override { return size_; }
    const std::string& name() const override { return path_; }
    const uint8_t* data() const { return data_; }

protected:
    void read_raw(uint64_t offset, void* dst, std::size_t n) const override;

private:
    std::string path_;
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
};

// Where encoders put their bytes: a file being written atomically, or memory (tests, fuzz
// seeds). restart() empties what was written so far.
class ByteSink {
public:
    virtual ~ByteSink() = default;
    virtual void write(const void* data, std::size_t n) = 0;
    virtual void restart() = 0;
    virtual uint64_t bytes_written() const = 0;
};

class VectorSink : public ByteSink {
public:
    void write(const void* data, std::size_t n) override {
        const auto* p = static_cast<const uint8_t*>(data);
        bytes.insert(bytes.end(), p, p + n);
    }
    void restart() override { bytes.clear(); }
    uint64_t bytes_written() const override { return bytes.size(); }
    std::vector<uint8_t> bytes;
};

// Writes `path` atomically: bytes go to a new temporary file in the same folder
// ("<name>.tmp-<pid>-<n>"); commit() fsyncs and closes it, opens the folder, renames it over
// `path` and fsyncs the folder. A failure at any step up to the rename throws PG_ERR_IO with the
// errno text, removes the temporary file and leaves `path` untouched; a failing folder fsync
// (after the rename) throws PG_ERR_IO saying the new file is complete and in place but may not
// survive a power cut. Destroying an uncommitted writer removes its temporary file. `path`
// itself is never opened for writing. The constructor first removes stale temporaries in the
// folder (remove_stale_temporaries).
class AtomicFileWriter : public ByteSink {
public:
    explicit AtomicFileWriter(const std::string& path);
    ~AtomicFileWriter() override;
    AtomicFileWriter(const AtomicFileWriter&) = delete;
    AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

    void write(const void* data, std::size_t n) override;
    // Starts the temporary file over (empty), e.g. to store data raw after all.
    void restart() override;
    uint64_t bytes_written() const override { return written_; }
    void commit();

    const std::string& temp_path() const { return temp_path_; }

private:
    [[noreturn]] void fail(const std::string& what, int err);
    std::string path_, temp_path_;
    int fd_ = -1;
    uint64_t written_ = 0;
    bool committed_ = false;
};

// Removes the temporary files ("<name>.tmp-<pid>-<n>", regular, owned by this user) that
// writers which are certainly gone left in `folder` (killed mid-save: no process has the pid,
// or the pid now belongs to another user, or to a process started after the file was last
// written); never a live writer's, nor one of this process. Best effort: errors are ignored.
// Every save (AtomicFileWriter) and every load (FileSource) calls it for its file's folder.
void remove_stale_temporaries(const std::string& folder);

// Writes a whole small file atomically (config.json and friends).
void write_file_atomically(const std::string& path, const void* data, std::size_t n);

// Reads a whole regular file (FileSource's checks) of at most max_bytes (PG_ERR_FORMAT naming
// the cap if larger).
std::vector<uint8_t> read_small_file(const std::string& path, uint64_t max_bytes);
// src's size if at most max_bytes, else that PG_ERR_FORMAT.
uint64_t checked_whole_size(const FileSource& src, uint64_t max_bytes);

// The cap of every whole-file read into memory through the C API (pg_read_file: training text,
// tokenizer files). Checkpoints, adapters and safetensors are read in bounded pieces or mapped
// instead, so their size is bounded by the file and the format's own checks, not by this.
constexpr uint64_t kMaxWholeFileBytes = uint64_t(1) << 30;

// True when `path` names a regular file (following symlinks); a probe for optional files.
bool is_regular_file(const std::string& path);

// The folder of a path ("." for a bare name) and a path beside another ("a/b.st", "c" -> "a/c").
std::string parent_folder(const std::string& path);
std::string sibling_path(const std::string& path, const std::string& name);

// Fault injection for tests only (internal symbol, not exported from libphonegpt.so): the next
// AtomicFileWriter operations fail as a full disk would.
namespace testing {
enum class FailPoint { kNone, kWrite, kFsync, kRename, kClose, kFolderFsync };
// kWrite: writes fail with `err` once more than `after_bytes` bytes went to the temporary file
// (a partial write happens first, like a disk filling up); kFsync / kClose / kRename /
// kFolderFsync: that step of commit() fails.
// The injection stays armed until clear_failure().
void inject_failure(FailPoint point, uint64_t after_bytes = 0, int err = 28 /* ENOSPC */);
void clear_failure();
}  // namespace testing

}  // namespace pg::io
