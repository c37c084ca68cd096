// The memory checks. The kernels (custom_ops/cuda/*.cu, compiled for the host
// with -fsanitize=thread) call __tsan_readN / __tsan_writeN before every load
// and store they make; these callbacks, not the ThreadSanitizer runtime, look
// at each access of an emulated thread:
//   * its own stack, the launch's parameters: allowed;
//   * shared memory (the cuda_sm section, the dynamic buffer): a shadow byte per
//     byte says which thread last wrote, read and atomically updated it in which
//     epoch (barrier interval); a read of a byte this block never wrote, or two
//     threads in one epoch where one writes without an atomic, is reported;
//   * anything else must lie in one of the arrays the op call was given (or be
//     read from this library's own read-only image): else an out-of-bounds access.
// A report abandons the block before the access is made.
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime.h"

// Bounds of the shared-memory section, defined by the linker.
extern "C" char __start_cuda_sm[] __attribute__((visibility("hidden"), weak));
extern "C" char __stop_cuda_sm[] __attribute__((visibility("hidden"), weak));

namespace cuda_emu {

const Session* current_session();

namespace {

struct Shadow {
  uint32_t write_epoch = 0, read_epoch = 0, atomic_epoch = 0;
  uint16_t writer = 0, reader = 0, atomic_thread = 0;
  uint8_t many_readers = 0, many_atomics = 0;
};

enum class Access { kRead, kWrite, kAtomic };

struct Memory {
  std::vector<Shadow> static_shadow, dynamic_shadow;
  alignas(16) char dynamic[kMaxDynamicShared];
  uint32_t epoch = 1, block_first_epoch = 1;
  uintptr_t image_begin = 0, image_end = 0;  // this library's mapped image
  bool poisoned_once = false;
};

Memory& memory() {
  static Memory* m = [] {
    auto* m = new Memory;
    m->static_shadow.resize(static_shared_end() - static_shared_begin());
    m->dynamic_shadow.resize(kMaxDynamicShared);
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&memory), &info) && info.dli_fbase) {
      struct Find {
        uintptr_t base, begin, end;
      } find{reinterpret_cast<uintptr_t>(info.dli_fbase), 0, 0};
      dl_iterate_phdr(
          [](dl_phdr_info* object, size_t, void* data) {
            auto& f = *static_cast<Find*>(data);
            bool ours = false;
            uintptr_t lo = ~uintptr_t{0}, hi = 0;
            for (int i = 0; i < object->dlpi_phnum; ++i) {
              const ElfW(Phdr)& ph = object->dlpi_phdr[i];
              if (ph.p_type != PT_LOAD) continue;
              const uintptr_t a = object->dlpi_addr + ph.p_vaddr;
              lo = std::min(lo, a);
              hi = std::max(hi, a + ph.p_memsz);
              ours |= a <= f.base && f.base < a + ph.p_memsz;
            }
            if (ours) {
              f.begin = lo;
              f.end = hi;
            }
            return ours ? 1 : 0;
          },
          &find);
      m->image_begin = find.begin;
      m->image_end = find.end;
    }
    return m;
  }();
  return *m;
}

const char* name(Access kind) { return kind == Access::kRead ? "read" : kind == Access::kWrite ? "write" : "atomic"; }

std::string describe(Access kind, uintptr_t address, size_t bytes) {
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%s of %zu bytes at 0x%zx", name(kind), bytes, static_cast<size_t>(address));
  return buffer;
}

std::string thread_name(const Launch& l, int rank) {
  const dim3& b = l.block;
  return "thread (" + std::to_string(rank % b.x) + ", " + std::to_string((rank / b.x) % b.y) + ", " +
         std::to_string(rank / (b.x * b.y)) + ")";
}

void shared_access(Launch& l, Shadow* shadow, const char* space, uintptr_t offset, Access kind, size_t bytes) {
  Memory& m = memory();
  const uint32_t e = m.epoch, first = m.block_first_epoch;
  const uint16_t me = static_cast<uint16_t>(l.current->rank);
  for (size_t i = 0; i < bytes; ++i) {
    Shadow& s = shadow[offset + i];
    const std::string access = std::string(name(kind)) + " of " + std::to_string(bytes) + " bytes at " + space +
                               " + " + std::to_string(offset);
    if (kind != Access::kWrite && s.write_epoch < first && s.atomic_epoch < first) {
      fail_thread("uninitialised shared read: a " + access + " reads byte " + std::to_string(offset + i) +
                  ", which no thread of this block wrote");
    }
    int other = -1;
    if (s.write_epoch == e && s.writer != me) other = s.writer;
    if (kind == Access::kWrite) {
      if (s.read_epoch == e && (s.reader != me || s.many_readers)) other = s.reader != me ? s.reader : -2;
      if (s.atomic_epoch == e && (s.atomic_thread != me || s.many_atomics)) {
        other = s.atomic_thread != me ? s.atomic_thread : -2;
      }
    }
    if (other != -1) {
      fail_thread("shared-memory race: a " + access + " touches byte " + std::to_string(offset + i) + ", which " +
                  (other >= 0 ? thread_name(l, other) : std::string("another thread")) +
                  " also touched since the last barrier, one of them writing without an atomic");
    }
    switch (kind) {
      case Access::kRead:
        if (s.read_epoch != e) {
          s.read_epoch = e;
          s.reader = me;
          s.many_readers = 0;
        } else if (s.reader != me) {
          s.many_readers = 1;
        }
        break;
      case Access::kWrite:
        s.write_epoch = e;
        s.writer = me;
        break;
      case Access::kAtomic:
        if (s.atomic_epoch != e) {
          s.atomic_epoch = e;
          s.atomic_thread = me;
          s.many_atomics = 0;
        } else if (s.atomic_thread != me) {
          s.many_atomics = 1;
        }
        break;
    }
  }
}

bool in(uintptr_t a, size_t n, uintptr_t begin, uintptr_t end) { return a >= begin && a + n <= end && a + n >= a; }

void check(const void* p, size_t bytes, Access kind) {
  Launch* l = tls_launch;
  if (l == nullptr || l->current == nullptr) return;  // host code (the launchers) is not checked
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t stack = reinterpret_cast<uintptr_t>(l->current->stack_lo);
  if (in(a, bytes, stack, stack + kStackBytes)) return;
  const uintptr_t s0 = reinterpret_cast<uintptr_t>(static_shared_begin());
  const uintptr_t s1 = reinterpret_cast<uintptr_t>(static_shared_end());
  if (a < s1 && a + bytes > s0) {
    if (!in(a, bytes, s0, s1)) fail_thread("out-of-bounds shared access: " + describe(kind, a, bytes));
    l->static_lo = std::min(l->static_lo, a);
    l->static_hi = std::max(l->static_hi, a + bytes);
    shared_access(*l, memory().static_shadow.data(), "static shared memory", a - s0, kind, bytes);
    return;
  }
  const uintptr_t d0 = reinterpret_cast<uintptr_t>(memory().dynamic);
  if (a < d0 + kMaxDynamicShared && a + bytes > d0) {
    if (!in(a, bytes, d0, d0 + l->shared_bytes)) {
      fail_thread("out-of-bounds shared access: a " + std::string(name(kind)) + " of " + std::to_string(bytes) +
                  " bytes at dynamic shared memory + " + std::to_string(a - d0) + ", outside the launch's " +
                  std::to_string(l->shared_bytes) + " bytes");
    }
    shared_access(*l, memory().dynamic_shadow.data(), "dynamic shared memory", a - d0, kind, bytes);
    return;
  }
  const uintptr_t params = reinterpret_cast<uintptr_t>(l->params);
  if (kind == Access::kRead && in(a, bytes, params, params + l->params_bytes)) return;
  for (const Range& r : current_session()->arrays) {
    if (in(a, bytes, r.begin, r.end)) return;
  }
  if (kind == Access::kRead && in(a, bytes, memory().image_begin, memory().image_end)) return;  // constants
  fail_thread("out-of-bounds global access: a " + describe(kind, a, bytes) +
              " outside every array given to the launch");
}

}  // namespace

char* static_shared_begin() { return __start_cuda_sm; }
char* static_shared_end() { return __stop_cuda_sm; }
char* dynamic_shared_buffer() { return memory().dynamic; }
uint32_t current_epoch() { return memory().epoch; }
void next_epoch() { ++memory().epoch; }

void begin_block() {
  Memory& m = memory();
  Launch& l = *tls_launch;
  // Shared memory starts undefined: poison what the launch has touched so far
  // (the whole section once), for any read the instrumentation does not see.
  if (!m.poisoned_once) {
    std::memset(static_shared_begin(), kPoison, static_shared_end() - static_shared_begin());
    m.poisoned_once = true;
  } else if (l.static_hi > l.static_lo) {
    std::memset(reinterpret_cast<char*>(l.static_lo), kPoison, l.static_hi - l.static_lo);
  }
  std::memset(m.dynamic, kPoison, l.shared_bytes);
  m.block_first_epoch = ++m.epoch;
}

void note_atomic(const void* address, size_t bytes) { check(address, bytes, Access::kAtomic); }

}  // namespace cuda_emu

// ---- the instrumentation's callbacks ------------------------------------------------
// Hidden: they serve this library's instrumented kernels only.
#define FS_EMU_HOOK __attribute__((visibility("hidden")))
#define FS_EMU_HOOKS(n)                                                                                          \
  extern "C" FS_EMU_HOOK void __tsan_read##n(void* p) { cuda_emu::check(p, n, cuda_emu::Access::kRead); }                  \
  extern "C" FS_EMU_HOOK void __tsan_write##n(void* p) { cuda_emu::check(p, n, cuda_emu::Access::kWrite); }                \
  extern "C" FS_EMU_HOOK void __tsan_unaligned_read##n(void* p) { cuda_emu::check(p, n, cuda_emu::Access::kRead); }        \
  extern "C" FS_EMU_HOOK void __tsan_unaligned_write##n(void* p) { cuda_emu::check(p, n, cuda_emu::Access::kWrite); }      \
  extern "C" FS_EMU_HOOK void __tsan_volatile_read##n(void* p) { cuda_emu::check(p, n, cuda_emu::Access::kRead); }         \
  extern "C" FS_EMU_HOOK void __tsan_volatile_write##n(void* p) { cuda_emu::check(p, n, cuda_emu::Access::kWrite); }
FS_EMU_HOOKS(1)
FS_EMU_HOOKS(2)
FS_EMU_HOOKS(4)
FS_EMU_HOOKS(8)
FS_EMU_HOOKS(16)
#undef FS_EMU_HOOKS
extern "C" FS_EMU_HOOK void __tsan_read_range(void* p, unsigned long n) { cuda_emu::check(p, n, cuda_emu::Access::kRead); }
extern "C" FS_EMU_HOOK void __tsan_write_range(void* p, unsigned long n) { cuda_emu::check(p, n, cuda_emu::Access::kWrite); }
extern "C" FS_EMU_HOOK void __tsan_init() {}
extern "C" FS_EMU_HOOK void __tsan_func_entry(void*) {}
extern "C" FS_EMU_HOOK void __tsan_func_exit() {}
