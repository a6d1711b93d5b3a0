#pragma once
// RAII owners of CUDA resources: device buffers, pinned host buffers, streams and events.
//
// All are move-only; creation goes through a static `create`/`allocate` returning Result (no
// exceptions), and destructors release quietly (errors at teardown have nowhere to go).

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <utility>

#include "cuda_status.hpp"

namespace llaisys::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // `count` elements of uninitialised device memory (count 0: an empty buffer, no allocation).
  static Result<DeviceBuffer> allocate(std::size_t count) {
    DeviceBuffer buffer;
    if (count == 0) return buffer;
    void* ptr = nullptr;
    LLAISYS_CUDA_RETURN_IF_ERROR(cudaMalloc(&ptr, count * sizeof(T)));
    buffer.data_ = static_cast<T*>(ptr);
    buffer.size_ = count;
    return buffer;
  }

  // Grows (never shrinks) to at least `count` elements, by at least half its size each time, so a
  // batch that keeps growing frees (cudaFree synchronises the whole device) only a few times; contents
  // are not kept.
  Status reserve(std::size_t count) {
    if (count <= size_) return {};
    const std::size_t grown = std::max(count, size_ + size_ / 2);
    reset();
    LLAISYS_ASSIGN_OR_RETURN(*this, allocate(grown));
    return {};
  }

  void reset() noexcept {
    if (data_ != nullptr) (void)cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
  }

  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t bytes() const noexcept { return size_ * sizeof(T); }

  // Asynchronous copies on `stream` (host memory must stay alive until the stream reaches them).
  Status upload(const T* host, std::size_t count, cudaStream_t stream, std::size_t offset = 0) {
    if (offset + count > size_) return make_error(ErrorCode::invalid_argument, "upload past the end of a device buffer");
    return cuda_status(cudaMemcpyAsync(data_ + offset, host, count * sizeof(T), cudaMemcpyHostToDevice, stream),
                       "cudaMemcpyAsync(H2D)");
  }
  Status download(T* host, std::size_t count, cudaStream_t stream, std::size_t offset = 0) const {
    if (offset + count > size_) return make_error(ErrorCode::invalid_argument, "download past the end of a device buffer");
    return cuda_status(cudaMemcpyAsync(host, data_ + offset, count * sizeof(T), cudaMemcpyDeviceToHost, stream),
                       "cudaMemcpyAsync(D2H)");
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// Page-locked host memory: what asynchronous copies need to really overlap.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  static Result<PinnedBuffer> allocate(std::size_t count) {
    PinnedBuffer buffer;
    if (count == 0) return buffer;
    void* ptr = nullptr;
    LLAISYS_CUDA_RETURN_IF_ERROR(cudaMallocHost(&ptr, count * sizeof(T)));
    buffer.data_ = static_cast<T*>(ptr);
    buffer.size_ = count;
    return buffer;
  }
  void reset() noexcept {
    if (data_ != nullptr) (void)cudaFreeHost(data_);
    data_ = nullptr;
    size_ = 0;
  }
  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  T& operator[](std::size_t i) const noexcept { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

class Stream {
 public:
  Stream() = default;
  ~Stream() { reset(); }
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      reset();
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // A non-blocking stream (no implicit synchronisation with the legacy default stream).
  static Result<Stream> create() {
    Stream s;
    LLAISYS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s.stream_, cudaStreamNonBlocking));
    return s;
  }
  void reset() noexcept {
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
    stream_ = nullptr;
  }
  cudaStream_t get() const noexcept { return stream_; }
  Status synchronize() const { return cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event() = default;
  ~Event() { reset(); }
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      reset();
      event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // timing: an event cudaEventElapsedTime can use; otherwise the cheaper cudaEventDisableTiming.
  static Result<Event> create(bool timing = false) {
    Event e;
    LLAISYS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e.event_, timing ? cudaEventDefault : cudaEventDisableTiming));
    return e;
  }
  void reset() noexcept {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
    event_ = nullptr;
  }
  cudaEvent_t get() const noexcept { return event_; }
  Status record(cudaStream_t stream) const { return cuda_status(cudaEventRecord(event_, stream), "cudaEventRecord"); }
  Status synchronize() const { return cuda_status(cudaEventSynchronize(event_), "cudaEventSynchronize"); }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace llaisys::cuda
