// A host emulation of the Kunlunxin XPU3 kernel dialect, so that fastspec's
// .xpu kernels compile with g++ and run on host threads with the XPU's
// execution and memory model (docs/xpu.md, ../shared/XPU_NOTES.md §8-9):
//
//   * a launch runs its clusters one after another (last to first as a test
//     mode), each with one host thread per core; ids come from thread-local state;
//   * __shared__ variables live in one linker section (xpu_sm), poisoned with
//     0xA5 before every cluster, as hardware shared memory starts undefined;
//   * copies check their size against the destination space's budget and that
//     each pointer lies in the space the copy names (shared memory: the xpu_sm
//     section; local memory: the calling core's stack);
//   * an _ASYNC copy poisons its destination at issue and moves the bytes only
//     at the fence (or synchronous copy) that completes it; its source must not
//     change before then: a missing fence shows as wrong bits or a report;
//   * sync_all / sync_cluster are barriers over the cluster's live cores (a core
//     that returned counts as arrived), and complete no copy.
// A rule broken is reported (the first message is kept) and the launch returns
// fastspec::kXpuEmulationError. Not modelled: local-memory size (host stacks
// are larger), timing, real concurrency between clusters, XPU float rounding.
#pragma once

#include <cstdint>
#include <cstring>

// ---- the dialect's keywords ----------------------------------------------
#define __global__
#define __device__
#define __local__
#define __simd__ alignas(64)
#define __global_ptr__
#define _global_ptr_
#define __shared_ptr__
#define _shared_ptr_
// One object per kernel in the shared-memory section: clusters run one at a
// time, so one object serves every cluster in turn. `used`: never optimised away.
#define __shared__ __attribute__((section("xpu_sm"), used)) static

namespace xpu_emu {

constexpr int kLocalMemoryBytes = 6 * 1024;     // buffers per core at 64 cores (stack aside)
constexpr int kSharedMemoryBytes = 256 * 1024;  // per cluster
constexpr int kMaxCores = 64;
constexpr int kMaxClusters = 255;

// ---- ids -------------------------------------------------------------------
int core_id();
int core_num();
int cluster_id();
int cluster_num();

// ---- copies: (source, destination, bytes) ------------------------------------
enum Space : int { kLM = 1, kSM = 2, kGM = 4 };
void copy(Space from, Space to, const void* src, void* dst, int bytes, bool async);
void fence(int spaces);
void barrier();
void report(const char* what);

// ---- launch ------------------------------------------------------------------
using KernelBody = void (*)(void* context);
int launch(int clusters, int cores, bool reverse_clusters, KernelBody body, void* context);

// Runs `kernel_call` (a lambda calling the kernel) on clusters x cores.
template <class F>
int launch(int clusters, int cores, bool reverse_clusters, F kernel_call) {
  return launch(clusters, cores, reverse_clusters, [](void* f) { (*static_cast<F*>(f))(); }, &kernel_call);
}

// The first rule a launch broke ("" when none), and how many barriers were
// released with cores that had already returned (legal, but worth knowing).
const char* last_error();
int64_t early_exit_barriers();

}  // namespace xpu_emu

// ---- the kernel-side API, spelled as the XPU3 headers spell it ------------------
inline int core_id() { return xpu_emu::core_id(); }
inline int core_num() { return xpu_emu::core_num(); }
inline int cluster_id() { return xpu_emu::cluster_id(); }
inline int cluster_num() { return xpu_emu::cluster_num(); }

#define FS_EMU_COPY(name, from, to)                                    \
  inline void name(const void* src, void* dst, int bytes) {            \
    xpu_emu::copy(xpu_emu::from, xpu_emu::to, src, dst, bytes, false); \
  }                                                                    \
  inline void name##_ASYNC(const void* src, void* dst, int bytes) {    \
    xpu_emu::copy(xpu_emu::from, xpu_emu::to, src, dst, bytes, true);  \
  }
FS_EMU_COPY(GM2LM, kGM, kLM)
FS_EMU_COPY(LM2GM, kLM, kGM)
FS_EMU_COPY(GM2SM, kGM, kSM)
FS_EMU_COPY(SM2GM, kSM, kGM)
FS_EMU_COPY(SM2LM, kSM, kLM)
FS_EMU_COPY(LM2SM, kLM, kSM)
#undef FS_EMU_COPY

inline void mfence() { xpu_emu::fence(xpu_emu::kLM | xpu_emu::kSM | xpu_emu::kGM); }
inline void mfence_lm() { xpu_emu::fence(xpu_emu::kLM); }
inline void mfence_sm() { xpu_emu::fence(xpu_emu::kSM); }
inline void mfence_gm() { xpu_emu::fence(xpu_emu::kGM); }
inline void mfence_lm_sm() { xpu_emu::fence(xpu_emu::kLM | xpu_emu::kSM); }
inline void mfence_lm_gm() { xpu_emu::fence(xpu_emu::kLM | xpu_emu::kGM); }
inline void mfence_sm_gm() { xpu_emu::fence(xpu_emu::kSM | xpu_emu::kGM); }
inline void sync_all() { xpu_emu::barrier(); }
inline void sync_cluster() { xpu_emu::barrier(); }

// atomicadd on shared memory: returns the old value.
template <typename T>
inline T atomicadd(T* address, T value) {
  return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
}
