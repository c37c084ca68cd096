// The emulation runtime's state, shared by the scheduler (cuda_emu.cc) and the
// memory checks (checks.cc). Neither file is instrumented: only the kernels are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_emu.h"
#include "fiber.h"
#include "session.h"

namespace cuda_emu {

// H100 / H200 limits (a launch over them fails on the device).
constexpr int kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockDim[3] = {1024, 1024, 64};
constexpr unsigned kMaxGridDim[3] = {0x7fffffffu, 65535, 65535};
constexpr size_t kMaxStaticShared = 48 * 1024;
constexpr size_t kMaxDynamicShared = 227 * 1024;  // static + dynamic, with the opt-in attribute
constexpr size_t kStackBytes = 128 * 1024;        // per emulated thread
constexpr unsigned char kPoison = 0xA5;

enum class ThreadState : uint8_t { kReady, kAtBarrier, kAtWarp, kExited };

struct Thread {
  ThreadState state = ThreadState::kReady;
  int rank = 0;
  uint3 idx{0, 0, 0};
  Context context;
  char* stack_lo = nullptr;
  // where it waits, and with what
  const char* file = nullptr;
  int line = 0;
  int kind = 0;  // BarrierKind or WarpOp
  unsigned mask = 0;
  unsigned value = 0;
  unsigned result = 0;
};

struct Launch {
  dim3 grid, block;
  size_t shared_bytes = 0;
  const char* params = nullptr;
  size_t params_bytes = 0;
  KernelBody body = nullptr;
  void* context = nullptr;
  uint3 block_idx{0, 0, 0};
  std::vector<Thread>* threads = nullptr;
  Thread* current = nullptr;
  Context scheduler;
  bool aborted = false;
  uintptr_t static_lo = ~uintptr_t{0}, static_hi = 0;  // the static shared bytes this launch touched
};

extern thread_local Launch* tls_launch;

// Memory (checks.cc).
char* dynamic_shared_buffer();  // kMaxDynamicShared bytes
void begin_launch();
void begin_block();   // a new block: nothing of its shared memory is written yet
void next_epoch();    // a barrier released
void note_atomic(const void* address, size_t bytes);

// Reports a broken rule at the running thread (or, outside one, the launch) and,
// from an emulated thread, abandons the block: the fiber never resumes.
[[noreturn]] void fail_thread(const std::string& rule);
void fail_launch(const std::string& rule);
std::string where();  // " (block (x, y, z), thread (x, y, z))"

}  // namespace cuda_emu
