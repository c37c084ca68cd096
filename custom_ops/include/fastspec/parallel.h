// Threads for the CPU kernels: a small persistent pool whose idle workers
// sleep (no spinning). OpenMP is not used on purpose: inside a Paddle process
// the GNU runtime's spin-waiting workers made a 1.3 ms scan take 8 ms.
#pragma once

#include <cstdint>
#include <functional>

namespace fastspec {

// Runs fn(begin, end) over [0, n) in chunks of `grain` items, on the pool's
// workers and the calling thread; returns when every chunk is done. Runs
// inline when n <= grain or the pool has one thread. Thread count: the
// machine's hardware threads, or FASTSPEC_NUM_THREADS (read once).
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Threads parallel_for uses (workers + the caller).
int num_threads();

// The per-slot ops (a slot costs tens of nanoseconds): below kParallelSlots
// slots a thread hand-off costs more than it saves; above, kSlotGrain a chunk.
constexpr int64_t kParallelSlots = 4096;
constexpr int64_t kSlotGrain = 1024;

// Runs fn(begin, end) over a verifying op's slots: on the pool above
// kParallelSlots slots, or from 2^20 probability entries when each slot reads
// whole rows (V entries per draw).
template <class Fn>
void for_verify_slots(int64_t batch, bool reads_rows, int64_t vocab, const Fn& fn) {
  const int64_t work = reads_rows ? batch * (vocab > 1 ? vocab : 1) : batch;
  if (work >= (reads_rows ? int64_t{1} << 20 : kParallelSlots)) {
    parallel_for(batch, reads_rows ? 1 : kSlotGrain, fn);
  } else {
    fn(0, batch);
  }
}

}  // namespace fastspec
