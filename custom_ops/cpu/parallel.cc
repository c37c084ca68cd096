// The CPU thread pool behind parallel_for (see fastspec/parallel.h).
#include "fastspec/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace fastspec {
namespace {

int configured_threads() {
  if (const char* value = std::getenv("FASTSPEC_NUM_THREADS")) {
    const int n = std::atoi(value);
    if (n >= 1) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

// Chunks are claimed from one atomic word: the job's generation in the top
// 24 bits, the next chunk index below. The caller claims chunks too and waits
// only for chunks already claimed, never for a worker to wake: on a loaded
// machine a sleeping worker may not run for milliseconds, and a call whose
// chunks the caller finished alone returns at once. A worker that wakes late
// finds another generation (or no chunk left) and never touches the old job.
class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& worker : workers_) worker.join();
  }

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    grain = std::max<int64_t>(grain, 1);
    if (workers_.empty() || n <= grain) {
      if (n > 0) fn(0, n);
      return;
    }
    std::lock_guard<std::mutex> one_call_at_a_time(call_mutex_);
    Job job;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation_ = (generation_ + 1) & kGenerationMask;
      job = Job{&fn, n, grain, (n + grain - 1) / grain, generation_};
      job_ = job;
      done_.store(0, std::memory_order_relaxed);
      claim_.store(generation_ << kIndexBits, std::memory_order_release);
    }
    wake_.notify_all();
    work(job);
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return done_.load(std::memory_order_acquire) == job.chunks; });
  }

 private:
  static constexpr int kIndexBits = 40;
  static constexpr uint64_t kGenerationMask = (uint64_t{1} << 24) - 1;

  struct Job {
    const std::function<void(int64_t, int64_t)>* fn = nullptr;
    int64_t size = 0, grain = 1, chunks = 0;
    uint64_t generation = 0;
  };

  // Claims and runs chunks of `job` while its generation is current and chunks are left.
  void work(const Job& job) {
    uint64_t word = claim_.load(std::memory_order_acquire);
    for (;;) {
      const int64_t index = static_cast<int64_t>(word & ((uint64_t{1} << kIndexBits) - 1));
      if ((word >> kIndexBits) != job.generation || index >= job.chunks) return;
      if (!claim_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel)) continue;
      const int64_t begin = index * job.grain;
      (*job.fn)(begin, std::min(job.size, begin + job.grain));
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == job.chunks) {
        std::lock_guard<std::mutex> lock(mutex_);
        finished_.notify_one();
      }
      word = claim_.load(std::memory_order_acquire);
    }
  }

  void worker_loop() {
    uint64_t seen = 0;
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = job_;
      }
      work(job);
    }
  }

  std::vector<std::thread> workers_;
  std::mutex call_mutex_, mutex_;
  std::condition_variable wake_, finished_;
  Job job_;
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> done_{0};
  uint64_t generation_ = 0;
  bool stop_ = false;
};

ThreadPool& pool() {
  static ThreadPool instance(configured_threads());
  return instance;
}

}  // namespace

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  pool().run(n, grain, fn);
}

int num_threads() { return pool().threads(); }

}  // namespace fastspec
