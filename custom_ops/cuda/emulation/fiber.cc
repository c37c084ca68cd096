// See fiber.h. The x86-64 switch pushes the callee-saved registers (and the
// SSE / x87 control words) on the old stack, swaps stack pointers and pops
// the new context's; a new fiber's stack is laid out as if it had switched
// away just before calling entry(arg).
#include "fiber.h"

#include <cstdint>

#if defined(__x86_64__)
extern "C" void cuda_emu_switch(void** save_sp, void* next_sp);
extern "C" void cuda_emu_fiber_start();

asm(R"(
  .text
  .globl cuda_emu_switch
  .hidden cuda_emu_switch
  .type cuda_emu_switch, @function
cuda_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cuda_emu_switch, .-cuda_emu_switch

  .globl cuda_emu_fiber_start
  .hidden cuda_emu_fiber_start
  .type cuda_emu_fiber_start, @function
cuda_emu_fiber_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size cuda_emu_fiber_start, .-cuda_emu_fiber_start
)");
#endif

namespace cuda_emu {

#if defined(__x86_64__)

void make_context(Context& to, char* stack, size_t bytes, void (*entry)(void*), void* arg) {
  uintptr_t top = reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t{15};
  auto* frame = reinterpret_cast<uint64_t*>(top - 80);  // 16-aligned: entry starts as after a call
  uint32_t mxcsr;
  uint16_t fpcw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpcw));
  frame[0] = mxcsr | (uint64_t{fpcw} << 32);
  frame[1] = 0;                                         // r15
  frame[2] = 0;                                         // r14
  frame[3] = reinterpret_cast<uint64_t>(entry);         // r13
  frame[4] = reinterpret_cast<uint64_t>(arg);           // r12
  frame[5] = 0;                                         // rbx
  frame[6] = 0;                                         // rbp
  frame[7] = reinterpret_cast<uint64_t>(&cuda_emu_fiber_start);  // return address
  to.sp = frame;
}

void switch_context(Context& from, Context& to) { cuda_emu_switch(&from.sp, to.sp); }

#else

namespace {
void start(unsigned entry_hi, unsigned entry_lo, unsigned arg_hi, unsigned arg_lo) {
  auto entry = reinterpret_cast<void (*)(void*)>((uint64_t{entry_hi} << 32) | entry_lo);
  entry(reinterpret_cast<void*>((uint64_t{arg_hi} << 32) | arg_lo));
}
}  // namespace

void make_context(Context& to, char* stack, size_t bytes, void (*entry)(void*), void* arg) {
  getcontext(&to.uc);
  to.uc.uc_stack.ss_sp = stack;
  to.uc.uc_stack.ss_size = bytes;
  to.uc.uc_link = nullptr;
  const uint64_t e = reinterpret_cast<uint64_t>(entry), a = reinterpret_cast<uint64_t>(arg);
  makecontext(&to.uc, reinterpret_cast<void (*)()>(&start), 4, static_cast<unsigned>(e >> 32), static_cast<unsigned>(e),
              static_cast<unsigned>(a >> 32), static_cast<unsigned>(a));
}

void switch_context(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }

#endif

}  // namespace cuda_emu
