// What one emulated op call runs under: the arrays it was given (the only
// global memory its launches may touch), the block order, the first broken
// rule, and the mutation a test asked for. Declared for the glue
// (launchers.h) and the runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_emu_types.h"

namespace cuda_emu {

enum class BlockOrder : int { kForward = 0, kReverse = 1, kShuffle = 2 };

struct Range {
  uintptr_t begin, end;
};

struct Session {
  std::vector<Range> arrays;
  BlockOrder order = BlockOrder::kForward;
  uint64_t seed = 0;
};

// Runs the launches of `launcher()` under `session` (one at a time per
// process); returns the launcher's status, cudaErrorLaunchFailure when a rule
// was broken (last_error() names it).
Error run_session(const Session& session, Error (*launcher)(void*), void* context);
template <typename F>
Error run_session(const Session& session, F launcher) {
  return run_session(session, [](void* f) { return (*static_cast<F*>(f))(); }, &launcher);
}

const char* last_error();

// A test's mutation of the kernels, for the mutation tests: the barrier
// written at (a path ending in) file:line does nothing, and/or the block of
// linear index skip_block never runs (its writes are lost). Empty file: none.
struct Mutation {
  std::string file;
  int line = 0;
  int64_t skip_block = -1;
};
void set_mutation(const Mutation& mutation);
// Every barrier site (file:line) the emulated kernels have reached so far.
std::vector<std::string> barrier_sites();

}  // namespace cuda_emu
