// MappedFile: a model file's bytes, mapped from the page cache or read into huge-page memory.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "llaisys/core/host_memory.hpp"
#include "llaisys/model/safetensors.hpp"

namespace llaisys {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kReadChunk = std::size_t{64} << 20;  // bytes per pread call
#ifdef MADV_POPULATE_WRITE
constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kPopulateWrite = 23;  // Linux's value; older kernels refuse it (EINVAL), which is harmless
#endif

// Closes the descriptor on every path out of MappedFile::open.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

// Private anonymous memory of `bytes` (rounded up to whole huge pages) at a huge-page boundary,
// advised for transparent huge pages. Returns nullptr when the kernel refuses the mapping.
std::byte* map_huge_aligned(std::size_t bytes) {
  // Map one huge page more than needed, then give back the unaligned head and the tail.
  const std::size_t span = bytes + kHugePage;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (begin + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > begin) ::munmap(raw, aligned - begin);
  const uintptr_t tail = aligned + bytes;
  if (begin + span > tail) ::munmap(reinterpret_cast<void*>(tail), begin + span - tail);
  auto* data = reinterpret_cast<std::byte*>(aligned);
  // Hints: without transparent huge pages (or with them off) the memory is simply 4 KiB pages.
  (void)::madvise(data, bytes, MADV_HUGEPAGE);
  // Fault the huge pages in at once (Linux >= 5.14): reading a file into not-yet-faulted huge-page
  // memory took 1.36 s for 988 MB, populating first 0.12 s and the read 0.13 s.
  (void)::madvise(data, bytes, kPopulateWrite);
  return data;
}

// Reads exactly `bytes` from the start of `fd` into `out`.
Status read_all(int fd, std::byte* out, std::size_t bytes, const fs::path& path) {
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t got = ::pread(fd, out + done, std::min(kReadChunk, bytes - done), static_cast<off_t>(done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::io_error, "cannot read {}: {}", path.string(), std::strerror(errno));
    }
    if (got == 0) {
      return make_error(ErrorCode::io_error, "{} shrank while being read ({} of {} bytes)", path.string(), done,
                        bytes);
    }
    done += static_cast<std::size_t>(got);
  }
  return Status();
}

}  // namespace

std::string_view to_string(WeightLoading loading) {
  switch (loading) {
    case WeightLoading::automatic: return "auto";
    case WeightLoading::map: return "mmap";
    case WeightLoading::memory: return "memory";
  }
  return "?";
}

std::optional<WeightLoading> parse_weight_loading(std::string_view text) {
  if (text == "auto") return WeightLoading::automatic;
  if (text == "mmap") return WeightLoading::map;
  if (text == "memory") return WeightLoading::memory;
  return std::nullopt;
}

Result<MappedFile> MappedFile::open(const fs::path& path, WeightLoading loading) {
  // O_NONBLOCK: a FIFO in place of a weight file must not block the open (and then the loader)
  // forever waiting for a writer; it is refused as not a regular file below. The flag does nothing
  // to reads of regular files.
  FileDescriptor file_fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file_fd.fd < 0) {
    const int err = errno;
    return make_error(err == ENOENT ? ErrorCode::not_found : ErrorCode::io_error, "cannot open {}: {}",
                      path.string(), std::strerror(err));
  }
  struct stat st {};
  if (::fstat(file_fd.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return make_error(ErrorCode::io_error, "{} is not a regular file", path.string());
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<std::size_t>(st.st_size);
  file.loading_ = loading == WeightLoading::map ? WeightLoading::map : WeightLoading::memory;
  if (file.size_ == 0) return file;
  if (file.loading_ == WeightLoading::map) {
    void* data = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, file_fd.fd, 0);
    if (data == MAP_FAILED) {
      return make_error(ErrorCode::io_error, "cannot map {}: {}", path.string(), std::strerror(errno));
    }
    file.data_ = static_cast<const std::byte*>(data);
    file.region_size_ = file.size_;
    return file;
  }
  const std::size_t rounded = (file.size_ + kHugePage - 1) / kHugePage * kHugePage;
  const uint64_t available = available_memory_bytes();
  if (rounded < file.size_ || rounded > available) {
    return make_error(ErrorCode::out_of_memory,
                      "{}: {:.1f} MB do not fit in the {:.1f} MB of memory available to read it into (load "
                      "the weights with mmap instead)",
                      path.string(), static_cast<double>(file.size_) / 1e6, static_cast<double>(available) / 1e6);
  }
  std::byte* data = map_huge_aligned(rounded);
  if (data == nullptr) {
    return make_error(ErrorCode::out_of_memory, "cannot allocate {:.1f} MB to read {} into: {}",
                      static_cast<double>(rounded) / 1e6, path.string(), std::strerror(errno));
  }
  file.data_ = data;
  file.region_size_ = rounded;  // owned from here on: released by file's destructor on any error
  LLAISYS_RETURN_IF_ERROR(read_all(file_fd.fd, data, file.size_, path));
  // The bytes are weights from now on: read-only, as the mapping is.
  ::mprotect(data, rounded, PROT_READ);
  return file;
}

void MappedFile::release() noexcept {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), region_size_);
  data_ = nullptr;
  size_ = 0;
  region_size_ = 0;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      region_size_(std::exchange(other.region_size_, 0)),
      loading_(other.loading_),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    region_size_ = std::exchange(other.region_size_, 0);
    loading_ = other.loading_;
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { release(); }

}  // namespace llaisys
