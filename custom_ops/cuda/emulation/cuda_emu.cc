// The emulation's scheduler: a launch runs its blocks one after another in the
// session's order; a block's threads are fibers on the calling host thread,
// run one at a time until each waits (at a barrier or a warp intrinsic) or
// ends. A warp intrinsic completes when every lane of its mask waits in it; a
// barrier when every live thread of the block waits at it. See cuda_emu.h.
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "runtime.h"

namespace cuda_emu {

thread_local Launch* tls_launch = nullptr;

namespace {

struct Device {
  std::mutex mutex;  // one emulated device: one session at a time
  const Session* session = nullptr;
  std::string error;
  Error pending = cudaSuccess;  // for cudaGetLastError
  char* stacks = nullptr;       // kMaxThreadsPerBlock fiber stacks, each above a guard page
  Mutation mutation;
  std::set<std::pair<const char*, int>> sites;  // every barrier reached (file, line)
};

Device& device() {
  static Device* d = new Device;
  return *d;
}

constexpr size_t kGuard = 4096;

char* stack_of(int rank) {
  Device& d = device();
  const size_t slot = kStackBytes + kGuard;
  if (d.stacks == nullptr) {
    void* p = mmap(nullptr, slot * kMaxThreadsPerBlock, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    d.stacks = static_cast<char*>(p);
    for (int i = 0; i < kMaxThreadsPerBlock; ++i) mprotect(d.stacks + i * slot, kGuard, PROT_NONE);
  }
  return d.stacks + rank * slot + kGuard;
}

std::string dims(unsigned x, unsigned y, unsigned z) {
  return "(" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) + ")";
}

std::string site(const char* file, int line) {
  const char* slash = std::strrchr(file, '/');
  return std::string(slash ? slash + 1 : file) + ":" + std::to_string(line);
}

const char* barrier_name(int kind) {
  static const char* names[] = {"__syncthreads", "__syncthreads_or", "__syncthreads_and", "__syncthreads_count"};
  return names[kind];
}

const char* warp_name(int op) {
  static const char* names[] = {"__match_any_sync",  "__reduce_add_sync", "__reduce_max_sync",
                                "__reduce_min_sync", "__ballot_sync",     "__syncwarp"};
  return names[op];
}

Launch& launch_of(const char* what) {
  if (tls_launch == nullptr || tls_launch->current == nullptr) {
    std::fprintf(stderr, "cuda_emu: %s called outside a kernel\n", what);
    std::abort();
  }
  return *tls_launch;
}

void record_error(const std::string& message) {
  Device& d = device();
  if (d.error.empty()) d.error = message;
  d.pending = cudaErrorLaunchFailure;
}

// The thread order of a block and the block order of a launch.
std::vector<int64_t> ordered(int64_t n, uint64_t salt) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  const Session& s = *device().session;
  if (s.order == BlockOrder::kReverse) std::reverse(order.begin(), order.end());
  if (s.order == BlockOrder::kShuffle) {  // Fisher-Yates over splitmix64: the same order on every platform
    uint64_t state = s.seed * 0x9e3779b97f4a7c15ull + salt;
    for (int64_t i = n - 1; i > 0; --i) {
      state += 0x9e3779b97f4a7c15ull;
      uint64_t z = state;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      std::swap(order[i], order[static_cast<int64_t>(z % static_cast<uint64_t>(i + 1))]);
    }
  }
  return order;
}

void fiber_main(void*) {
  Launch& l = *tls_launch;
  l.body(l.context);
  l.current->state = ThreadState::kExited;
  switch_context(l.current->context, l.scheduler);
}

// Switches from the running thread to the scheduler; returns when resumed.
void wait(Launch& l, ThreadState state) {
  Thread& t = *l.current;
  t.state = state;
  switch_context(t.context, l.scheduler);
}

bool is_mutated(const char* file, int line) {
  const Mutation& m = device().mutation;
  if (m.file.empty() || m.line != line) return false;
  const size_t n = std::strlen(file);
  return n >= m.file.size() && std::strcmp(file + n - m.file.size(), m.file.c_str()) == 0;
}

class BlockRun {
 public:
  BlockRun(Launch& l, std::vector<Thread>& threads) : l_(l), threads_(threads) {}

  void run(int64_t linear_block) {
    const int n = static_cast<int>(threads_.size());
    order_ = ordered(n, static_cast<uint64_t>(linear_block) + 1);
    for (int r = 0; r < n; ++r) {
      Thread& t = threads_[r];
      t = Thread{};
      t.rank = r;
      t.idx = {r % l_.block.x, (r / l_.block.x) % l_.block.y, r / (l_.block.x * l_.block.y)};
      t.stack_lo = stack_of(r);
      make_context(t.context, t.stack_lo, kStackBytes, &fiber_main, nullptr);
    }
    queue_.assign(order_.begin(), order_.end());
    begin_block();
    while (!l_.aborted) {
      for (size_t head = 0; head < queue_.size() && !l_.aborted; ++head) {
        Thread& t = threads_[queue_[head]];
        l_.current = &t;
        switch_context(l_.scheduler, t.context);
        if (!l_.aborted && t.state == ThreadState::kAtWarp) complete_warp(t);
      }
      l_.current = nullptr;
      queue_.clear();
      if (l_.aborted || all_exited()) return;
      release_barrier();
    }
  }

 private:
  Thread& lane_thread(const Thread& t, int lane) { return threads_[(t.rank & ~31) + lane]; }

  // t waits in a warp intrinsic: when every lane of its mask waits in the same one, all resume.
  void complete_warp(Thread& t) {
    const int n = static_cast<int>(threads_.size());
    const int base = t.rank & ~31;
    for (int lane = 0; lane < 32; ++lane) {
      if (!(t.mask >> lane & 1u)) continue;
      if (base + lane >= n) {
        l_.current = &t;
        fail_launch(std::string("warp divergence: ") + warp_name(t.kind) + " at " + site(t.file, t.line) +
                    " names lane " + std::to_string(lane) + ", beyond the block");
        return;
      }
      const Thread& o = lane_thread(t, lane);
      if (o.state == ThreadState::kExited) {
        l_.current = &t;
        fail_launch(std::string("warp divergence: ") + warp_name(t.kind) + " at " + site(t.file, t.line) +
                    " names lane " + std::to_string(lane) + ", which has exited");
        return;
      }
      if (o.state != ThreadState::kAtWarp || o.kind != t.kind || o.mask != t.mask) return;  // not yet
    }
    unsigned add = 0, mx = 0, mn = ~0u, ballot = 0;
    for (int lane = 0; lane < 32; ++lane) {
      if (!(t.mask >> lane & 1u)) continue;
      const unsigned v = lane_thread(t, lane).value;
      add += v;
      mx = std::max(mx, v);
      mn = std::min(mn, v);
      if (v) ballot |= 1u << lane;
    }
    for (int lane = 0; lane < 32; ++lane) {
      if (!(t.mask >> lane & 1u)) continue;
      Thread& o = lane_thread(t, lane);
      switch (o.kind) {
        case kMatchAny: {
          unsigned same = 0;
          for (int k = 0; k < 32; ++k) {
            if ((t.mask >> k & 1u) && lane_thread(t, k).value == o.value) same |= 1u << k;
          }
          o.result = same;
          break;
        }
        case kReduceAdd:
          o.result = add;
          break;
        case kReduceMax:
          o.result = mx;
          break;
        case kReduceMin:
          o.result = mn;
          break;
        case kBallot:
          o.result = ballot;
          break;
        default:
          o.result = 0;
      }
      o.state = ThreadState::kReady;
      queue_.push_back(o.rank);
    }
  }

  bool all_exited() const {
    for (const Thread& t : threads_) {
      if (t.state != ThreadState::kExited) return false;
    }
    return true;
  }

  // Every live thread waits: at one barrier (released), or the block is stuck.
  void release_barrier() {
    const Thread* first = nullptr;
    for (int r : order_) {
      const Thread& t = threads_[r];
      if (t.state == ThreadState::kExited) continue;
      l_.current = const_cast<Thread*>(&t);
      if (t.state == ThreadState::kAtWarp) {
        fail_launch(std::string("warp divergence: ") + warp_name(t.kind) + " at " + site(t.file, t.line) +
                    " waits for lanes of mask 0x" + hex(t.mask) + " that never join it");
        return;
      }
      if (first == nullptr) {
        first = &t;
      } else if (t.file != first->file || t.line != first->line || t.kind != first->kind) {
        const uint3& f = first->idx;
        fail_launch(std::string("barrier divergence: ") + barrier_name(t.kind) + " at " + site(t.file, t.line) +
                    " while thread " + dims(f.x, f.y, f.z) + " waits at " + barrier_name(first->kind) + " at " +
                    site(first->file, first->line));
        return;
      }
    }
    l_.current = nullptr;
    unsigned count = 0, live = 0;
    for (const Thread& t : threads_) {
      if (t.state == ThreadState::kExited) continue;
      ++live;
      count += t.value;
    }
    const unsigned result = first->kind == kSyncOr ? count > 0 : first->kind == kSyncAnd ? count == live : count;
    next_epoch();
    for (int r : order_) {
      Thread& t = threads_[r];
      if (t.state == ThreadState::kExited) continue;
      t.result = result;
      t.state = ThreadState::kReady;
      queue_.push_back(r);
    }
  }

  static std::string hex(unsigned v) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%08x", v);
    return buffer;
  }

  Launch& l_;
  std::vector<Thread>& threads_;
  std::vector<int64_t> order_;
  std::vector<int64_t> queue_;
};

std::string limits_problem(const dim3& grid, const dim3& block, size_t shared_bytes) {
  const unsigned b[3] = {block.x, block.y, block.z}, g[3] = {grid.x, grid.y, grid.z};
  const char* axis = "xyz";
  for (int i = 0; i < 3; ++i) {
    if (b[i] < 1 || b[i] > kMaxBlockDim[i]) {
      return std::string("blockDim.") + axis[i] + " = " + std::to_string(b[i]) + " (at most " +
             std::to_string(kMaxBlockDim[i]) + ")";
    }
    if (g[i] < 1 || g[i] > kMaxGridDim[i]) {
      return std::string("gridDim.") + axis[i] + " = " + std::to_string(g[i]) + " (at most " +
             std::to_string(kMaxGridDim[i]) + ")";
    }
  }
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (threads > kMaxThreadsPerBlock) {
    return std::to_string(threads) + " threads a block (at most " + std::to_string(kMaxThreadsPerBlock) + ")";
  }
  if (shared_bytes > kMaxDynamicShared) {
    return std::to_string(shared_bytes) + " bytes of dynamic shared memory (at most " +
           std::to_string(kMaxDynamicShared) + ")";
  }
  return "";
}

}  // namespace

// ---- ids -----------------------------------------------------------------------
uint3 thread_idx() { return launch_of("threadIdx").current->idx; }
uint3 block_idx() { return launch_of("blockIdx").block_idx; }
dim3 block_dim() { return launch_of("blockDim").block; }
dim3 grid_dim() { return launch_of("gridDim").grid; }
int thread_rank() { return launch_of("thread_rank").current->rank; }

// ---- errors ----------------------------------------------------------------------
std::string where() {
  Launch* l = tls_launch;
  if (l == nullptr) return "";
  const uint3& b = l->block_idx;
  std::string at = " (block " + dims(b.x, b.y, b.z);
  if (l->current) at += ", thread " + dims(l->current->idx.x, l->current->idx.y, l->current->idx.z);
  return at + ")";
}

void fail_launch(const std::string& rule) {
  record_error(rule + where());
  if (tls_launch) tls_launch->aborted = true;
}

void fail_thread(const std::string& rule) {
  fail_launch(rule);
  Launch& l = *tls_launch;
  switch_context(l.current->context, l.scheduler);  // never resumed
  std::abort();
}

const char* last_error() { return device().error.c_str(); }

Error get_last_error() {
  Device& d = device();
  const Error e = d.pending;
  d.pending = cudaSuccess;
  return e;
}

// ---- barriers and warp intrinsics -------------------------------------------------
int barrier(BarrierKind kind, int predicate, const char* file, int line) {
  Launch& l = launch_of(barrier_name(kind));
  Device& d = device();
  d.sites.insert({file, line});
  if (is_mutated(file, line)) return kind == kSyncCount ? predicate : predicate != 0;
  Thread& t = *l.current;
  t.file = file;
  t.line = line;
  t.kind = kind;
  t.value = predicate != 0;
  wait(l, ThreadState::kAtBarrier);
  return static_cast<int>(t.result);
}

unsigned warp_op(WarpOp op, unsigned mask, unsigned value, const char* file, int line) {
  Launch& l = launch_of(warp_name(op));
  Thread& t = *l.current;
  if (!(mask >> (t.rank & 31) & 1u)) {
    fail_thread(std::string("warp divergence: ") + warp_name(op) + " at " + site(file, line) +
                " called by a lane outside its mask");
  }
  t.file = file;
  t.line = line;
  t.kind = op;
  t.mask = mask;
  t.value = value;
  wait(l, ThreadState::kAtWarp);
  return t.result;
}

void check_block_size(const char* primitive, int threads, const char* file, int line) {
  const dim3 b = launch_of(primitive).block;
  if (b.x * b.y * b.z != static_cast<unsigned>(threads)) {
    fail_thread(std::string(primitive) + "<" + std::to_string(threads) + "> at " + site(file, line) +
                " used in a block of " + std::to_string(b.x * b.y * b.z) + " threads");
  }
}

// ---- atomics ---------------------------------------------------------------------------
template <typename U, typename S>
U apply_atomic(AtomicOp op, U* address, U value, U compare, bool is_signed) {
  note_atomic(address, sizeof(U));
  const U old = *address;
  U next = old;
  switch (op) {
    case kAdd:
      next = old + value;
      break;
    case kMin:
      next = is_signed ? (static_cast<S>(value) < static_cast<S>(old) ? value : old) : std::min(old, value);
      break;
    case kMax:
      next = is_signed ? (static_cast<S>(value) > static_cast<S>(old) ? value : old) : std::max(old, value);
      break;
    case kExch:
      next = value;
      break;
    case kCas:
      next = old == compare ? value : old;
      break;
    case kOr:
      next = old | value;
      break;
    case kAnd:
      next = old & value;
      break;
  }
  *address = next;  // one host thread runs the whole block: no other thread can interleave
  return old;
}

unsigned int atomic32(AtomicOp op, unsigned int* address, unsigned int value, unsigned int compare, bool is_signed) {
  return apply_atomic<unsigned int, int>(op, address, value, compare, is_signed);
}

unsigned long long atomic64(AtomicOp op, unsigned long long* address, unsigned long long value,
                            unsigned long long compare, bool is_signed) {
  return apply_atomic<unsigned long long, long long>(op, address, value, compare, is_signed);
}

// ---- launch ----------------------------------------------------------------------------
void* dynamic_shared(const char*, int) { return dynamic_shared_buffer(); }

void launch(dim3 grid, dim3 block, size_t shared_bytes, const void* params, size_t params_bytes, KernelBody body,
            void* context) {
  Device& d = device();
  Launch l;
  l.grid = grid;
  l.block = block;
  l.shared_bytes = shared_bytes;
  l.params = static_cast<const char*>(params);
  l.params_bytes = params_bytes;
  l.body = body;
  l.context = context;
  if (d.session == nullptr) {
    std::fprintf(stderr, "cuda_emu: a launch outside run_session\n");
    std::abort();
  }
  Launch* outer = tls_launch;
  tls_launch = &l;
  const std::string problem = limits_problem(grid, block, shared_bytes);
  if (!problem.empty()) {
    l.block_idx = {0, 0, 0};
    record_error("launch over the device limits: " + problem + " (grid " + dims(grid.x, grid.y, grid.z) + ", block " +
                 dims(block.x, block.y, block.z) + ")");
    tls_launch = outer;
    return;
  }
  begin_launch();
  std::vector<Thread> threads(block.x * block.y * block.z);
  l.threads = &threads;
  const int64_t blocks = int64_t{grid.x} * grid.y * grid.z;
  const std::vector<int64_t> order = ordered(blocks, 0);
  for (int64_t b : order) {
    if (b == d.mutation.skip_block) continue;
    l.block_idx = {static_cast<unsigned>(b % grid.x), static_cast<unsigned>((b / grid.x) % grid.y),
                   static_cast<unsigned>(b / (int64_t{grid.x} * grid.y))};
    BlockRun(l, threads).run(b);
    if (l.aborted) break;
  }
  if (!l.aborted && l.static_hi > l.static_lo) {
    const size_t span = l.static_hi - l.static_lo;
    if (span > kMaxStaticShared || span + shared_bytes > kMaxDynamicShared) {
      l.current = nullptr;
      record_error("launch over the device limits: the kernel's static shared memory spans at least " +
                   std::to_string(span) + " bytes (at most " + std::to_string(kMaxStaticShared) +
                   ", and with the dynamic " + std::to_string(shared_bytes) + " at most " +
                   std::to_string(kMaxDynamicShared) + ") (grid " + dims(grid.x, grid.y, grid.z) + ", block " +
                   dims(block.x, block.y, block.z) + ")");
    }
  }
  tls_launch = outer;
}

// ---- sessions -------------------------------------------------------------------------
const Session* current_session() { return device().session; }

Error run_session(const Session& session, Error (*launcher)(void*), void* context) {
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  d.session = &session;
  d.error.clear();
  d.pending = cudaSuccess;
  Error status = launcher(context);
  d.session = nullptr;
  if (!d.error.empty()) status = cudaErrorLaunchFailure;
  return status;
}

void set_mutation(const Mutation& mutation) {
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  d.mutation = mutation;
}

std::vector<std::string> barrier_sites() {
  Device& d = device();
  std::lock_guard<std::mutex> lock(d.mutex);
  std::set<std::string> names;
  for (const auto& s : d.sites) names.insert(site(s.first, s.second));
  return {names.begin(), names.end()};
}

}  // namespace cuda_emu

const char* cudaGetErrorString(cudaError_t error) {
  if (error == cuda_emu::cudaErrorLaunchFailure) return cuda_emu::last_error();
  return error == cuda_emu::cudaSuccess ? "no error" : "invalid argument";
}
