// Fibers for the emulated threads of a block: a context switch that saves
// only what the calling convention asks the callee to keep (x86-64), or
// ucontext elsewhere (slower: it also saves the signal mask with a system call).
#pragma once

#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace cuda_emu {

struct Context {
#if defined(__x86_64__)
  void* sp = nullptr;
#else
  ucontext_t uc;
#endif
};

// Prepares `to` to run entry(arg) on [stack, stack + bytes) at the first switch into it.
void make_context(Context& to, char* stack, size_t bytes, void (*entry)(void*), void* arg);
// Saves the running context into `from` and resumes `to`.
void switch_context(Context& from, Context& to);

}  // namespace cuda_emu
