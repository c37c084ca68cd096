// BlockReduce and BlockScan for the emulated device, with CUB's contract
// (block_primitives.h): one value per thread of a block of exactly kThreads
// threads, the reduction's result in thread 0 only (the others get a poison
// value), and a barrier needed before the temporary storage is used again.
// The storage is laid out so that a missing barrier shows as a shared-memory
// race: each thread reads its scan result from a slot another thread writes
// in the next use.
#pragma once

#include "cuda_emu.h"

namespace cuda_emu {

void check_block_size(const char* primitive, int threads, const char* file, int line);

template <typename T>
constexpr T poison_value() {
  return static_cast<T>(0x5a5a5a5a5a5a5a5aull);
}

template <typename T, int kThreads>
class BlockReduce {
 public:
  struct TempStorage {
    T partial[kThreads];
  };
  explicit BlockReduce(TempStorage& storage) : s_(storage) {}

  T Sum(T value, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    check_block_size("BlockReduce", kThreads, file, line);
    const int t = thread_rank();
    s_.partial[t] = value;
    barrier(kSync, 0, file, line);
    if (t != 0) return poison_value<T>();
    T sum = s_.partial[0];
    for (int i = 1; i < kThreads; ++i) sum += s_.partial[i];
    return sum;
  }

 private:
  TempStorage& s_;
};

template <typename T, int kThreads>
class BlockScan {
 public:
  struct TempStorage {
    T slot[kThreads + 1];  // inputs, then each thread's prefix (rotated by one), then the total
  };
  explicit BlockScan(TempStorage& storage) : s_(storage) {}

  void ExclusiveSum(T input, T& output, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    T total;
    ExclusiveSum(input, output, total, file, line);
  }
  void ExclusiveSum(T input, T& output, T& total, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    scan(input, output, total, file, line);
  }
  void InclusiveSum(T input, T& output, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    T total;
    scan(input, output, total, file, line);
    output += input;
  }
  template <int kItems>
  void InclusiveSum(T (&input)[kItems], T (&output)[kItems], const char* file = __builtin_FILE(),
                    int line = __builtin_LINE()) {
    T local = T();
    for (int j = 0; j < kItems; ++j) local += input[j];
    T running, total;
    scan(local, running, total, file, line);
    for (int j = 0; j < kItems; ++j) {
      running += input[j];
      output[j] = running;
    }
  }

 private:
  void scan(T input, T& exclusive, T& total, const char* file, int line) {
    check_block_size("BlockScan", kThreads, file, line);
    const int t = thread_rank();
    s_.slot[t] = input;
    barrier(kSync, 0, file, line);
    if (t == 0) {
      T values[kThreads];
      for (int i = 0; i < kThreads; ++i) values[i] = s_.slot[i];
      T running = T();
      for (int i = 0; i < kThreads; ++i) {
        s_.slot[(i + 1) % kThreads] = running;
        running += values[i];
      }
      s_.slot[kThreads] = running;
    }
    barrier(kSync, 0, file, line);
    exclusive = s_.slot[(t + 1) % kThreads];
    total = s_.slot[kThreads];
  }

  TempStorage& s_;
};

}  // namespace cuda_emu
