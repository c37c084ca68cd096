// The XPU emulation's runtime: a pool of host threads (one per core), the
// per-cluster barrier, the deferred copies and the rule checks. See xpu_emu.h.
#include "xpu_emu.h"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fastspec/common.h"

// Bounds of the shared-memory section, defined by the linker for every
// library holding a __shared__ variable.
extern "C" char __start_xpu_sm[] __attribute__((visibility("hidden")));
extern "C" char __stop_xpu_sm[] __attribute__((visibility("hidden")));

namespace xpu_emu {
namespace {

constexpr unsigned char kPoison = 0xA5;
constexpr uintptr_t kStackBytes = uintptr_t{8} << 20;  // a worker's stack: its core's local memory

struct Pending {
  Space from, to;
  const void* src;
  void* dst;
  int bytes;
  std::vector<unsigned char> snapshot;  // the source at issue
};

struct Core {
  int index = 0;
  uintptr_t stack_top = 0;
  std::vector<Pending> pending;
};

thread_local Core* tls_core = nullptr;

struct Device {
  std::mutex launch_mutex;  // one emulated device: one launch at a time
  // the cluster being run (written under `m` before a round starts)
  std::mutex m;
  std::condition_variable start, finished;
  KernelBody body = nullptr;
  void* context = nullptr;
  int clusters = 0, cores = 0, cluster = 0;
  uint64_t round = 0;
  int done = 0;
  int workers = 0;
  // the cluster barrier
  std::mutex barrier_mutex;
  std::condition_variable barrier_released;
  int live = 0, arrived = 0;
  uint64_t generation = 0;
  std::atomic<int64_t> early_exit_barriers{0};
  // the first broken rule of the current launch
  std::mutex error_mutex;
  std::string error;
};

Device& device() {
  static Device* d = new Device;  // never destroyed: the detached workers wait on it until exit
  return *d;
}

const char* copy_name(Space from, Space to) {
  if (from == kGM) return to == kLM ? "GM2LM" : "GM2SM";
  if (from == kLM) return to == kGM ? "LM2GM" : "LM2SM";
  return to == kGM ? "SM2GM" : "SM2LM";
}

const char* space_name(Space s) { return s == kLM ? "local memory" : s == kSM ? "shared memory" : "global memory"; }

bool in_shared(const void* p, int bytes) {
  const char* c = static_cast<const char*>(p);
  return c >= __start_xpu_sm && c + bytes <= __stop_xpu_sm;
}

bool in_local(const void* p, const Core& core) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  return a <= core.stack_top && core.stack_top - a < kStackBytes;
}

bool in_space(Space s, const void* p, int bytes, const Core& core) {
  if (s == kSM) return in_shared(p, bytes);
  if (s == kLM) return in_local(p, core) && !in_shared(p, bytes);
  return !in_local(p, core) && !in_shared(p, 1);
}

void complete(Core& core, int spaces) {
  std::vector<Pending> kept;
  for (Pending& p : core.pending) {
    if (((p.from | p.to) & spaces) == 0) {
      kept.push_back(std::move(p));
      continue;
    }
    if (std::memcmp(p.src, p.snapshot.data(), p.bytes) != 0) {
      std::string what =
          std::string(copy_name(p.from, p.to)) + "_ASYNC: its source changed before the fence that completes the copy";
      report(what.c_str());
    }
    std::memcpy(p.dst, p.snapshot.data(), p.bytes);
  }
  core.pending.swap(kept);
}

void release_barrier(Device& d) {  // under barrier_mutex
  if (d.live < d.cores) d.early_exit_barriers.fetch_add(1);
  d.arrived = 0;
  ++d.generation;
  d.barrier_released.notify_all();
}

void leave_barrier() {
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.barrier_mutex);
  --d.live;
  if (d.arrived > 0 && d.arrived == d.live) release_barrier(d);
}

void worker(int index) {
  char marker;
  Core core;
  core.index = index;
  core.stack_top = reinterpret_cast<uintptr_t>(&marker);
  Device& d = device();
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(d.m);
      d.start.wait(lock, [&] { return d.round != seen; });
      seen = d.round;
      if (index >= d.cores) continue;
    }
    tls_core = &core;
    core.pending.clear();
    d.body(d.context);
    complete(core, kLM | kSM | kGM);  // a kernel's end completes its copies
    tls_core = nullptr;
    leave_barrier();
    std::lock_guard<std::mutex> lock(d.m);
    if (++d.done == d.cores) d.finished.notify_one();
  }
}

Core* current(const char* what) {
  if (tls_core == nullptr) {
    std::fprintf(stderr, "xpu_emu: %s called outside a kernel\n", what);
    std::abort();
  }
  return tls_core;
}

}  // namespace

int core_id() { return current("core_id")->index; }
int core_num() { return device().cores; }
int cluster_id() { return device().cluster; }
int cluster_num() { return device().clusters; }

void report(const char* what) {
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.error_mutex);
  if (!d.error.empty()) return;
  d.error = std::string(what) + " (cluster " + std::to_string(d.cluster) + ", core " +
            std::to_string(tls_core ? tls_core->index : -1) + ")";
}

void copy(Space from, Space to, const void* src, void* dst, int bytes, bool async) {
  Core& core = *current(copy_name(from, to));
  const int budget = to == kLM ? kLocalMemoryBytes : to == kSM ? kSharedMemoryBytes : 0x7fffffff;
  std::string problem;
  if (bytes < 0 || bytes > budget) {
    problem = "a copy of " + std::to_string(bytes) + " bytes into " + space_name(to) + " (budget " +
              std::to_string(budget) + ")";
  } else if (bytes > 0 && !in_space(from, src, bytes, core)) {
    problem = std::string("its source is not in ") + space_name(from);
  } else if (bytes > 0 && !in_space(to, dst, bytes, core)) {
    problem = std::string("its destination is not in ") + space_name(to);
  }
  if (!problem.empty()) {  // the copy is not made: it would break the emulation's own memory
    report((std::string(copy_name(from, to)) + (async ? "_ASYNC: " : ": ") + problem).c_str());
    return;
  }
  if (bytes == 0) return;
  if (!async) {
    complete(core, kLM | kSM | kGM);  // a synchronous copy waits for the core's earlier ones
    std::memmove(dst, src, bytes);
    return;
  }
  const auto* s = static_cast<const unsigned char*>(src);
  core.pending.push_back(Pending{from, to, src, dst, bytes, std::vector<unsigned char>(s, s + bytes)});
  std::memset(dst, kPoison, bytes);  // undefined until a fence completes the copy
}

void fence(int spaces) {
  complete(*current("mfence"), spaces);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void barrier() {
  current("sync_all");
  Device& d = device();
  std::unique_lock<std::mutex> lock(d.barrier_mutex);
  if (++d.arrived == d.live) {
    release_barrier(d);
    return;
  }
  const uint64_t generation = d.generation;
  d.barrier_released.wait(lock, [&] { return d.generation != generation; });
}

int launch(int clusters, int cores, bool reverse_clusters, KernelBody body, void* context) {
  Device& d = device();
  std::lock_guard<std::mutex> launch_lock(d.launch_mutex);
  {
    std::lock_guard<std::mutex> lock(d.error_mutex);
    d.error.clear();
  }
  if (clusters < 1 || clusters > kMaxClusters || cores < 1 || cores > kMaxCores) {
    report("launch: clusters must lie in [1, 255] and cores in [1, 64]");
    return fastspec::kXpuEmulationError;
  }
  while (d.workers < cores) std::thread(worker, d.workers++).detach();
  for (int i = 0; i < clusters; ++i) {
    std::memset(__start_xpu_sm, kPoison, __stop_xpu_sm - __start_xpu_sm);  // shared memory starts undefined
    std::unique_lock<std::mutex> lock(d.m);
    d.body = body;
    d.context = context;
    d.clusters = clusters;
    d.cores = cores;
    d.cluster = reverse_clusters ? clusters - 1 - i : i;
    d.done = 0;
    {
      std::lock_guard<std::mutex> barrier_lock(d.barrier_mutex);
      d.live = cores;
      d.arrived = 0;
    }
    ++d.round;
    d.start.notify_all();
    d.finished.wait(lock, [&] { return d.done == d.cores; });
  }
  std::lock_guard<std::mutex> lock(d.error_mutex);
  return d.error.empty() ? fastspec::kOk : fastspec::kXpuEmulationError;
}

const char* last_error() { return device().error.c_str(); }
int64_t early_exit_barriers() { return device().early_exit_barriers.load(); }

}  // namespace xpu_emu

const char* fastspec::xpu_emulation_error() { return xpu_emu::last_error(); }
