// The memory checks. The kernels (custom_ops/cuda/*.cu, compiled for the host
// with -fsanitize=thread) call __tsan_readN / __tsan_writeN before every load
// and store they make; these callbacks, not the ThreadSanitizer runtime, look
// at each access of an emulated thread:
//   * its own stack, the launch's parameters: allowed;
//   * shared memory (this library's writable image, where the kernels' static
//     __shared__ objects live, and the dynamic buffer): a shadow entry per
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

namespace cuda_emu {

const Session* current_session();

namespace {

struct Shadow {
  uint32_t write_epoch = 0, read_epoch = 0, atomic_epoch = 0;
  uint16_t writer = 0, reader = 0, atomic_thread = 0;
  uint8_t many_readers = 0, many_atomics = 0;
};

enum class Access { kRead, kWrite, kAtomic };

// Notes thread `me` among a byte's readers (or atomic users) of epoch `e`: the
// first of the epoch, or one of several.
void note_thread(uint32_t& epoch, uint16_t& thread, uint8_t& many, uint32_t e, uint16_t me) {
  if (epoch != e) {
    epoch = e;
    thread = me;
    many = 0;
  } else if (thread != me) {
    many = 1;
  }
}

struct Memory {
  // this library's mapped image: read-only parts (constants) and the writable part (static shared memory)
  uintptr_t image_begin = 0, image_end = 0, writable_begin = 0, writable_end = 0;
  std::vector<Shadow> static_shadow, dynamic_shadow;
  alignas(16) char dynamic[kMaxDynamicShared];
  uint32_t epoch = 1, block_first_epoch = 1, launch_first_epoch = 1;
};

struct Image {
  uintptr_t inside, begin, end, writable_begin, writable_end;
};

int find_image(dl_phdr_info* object, size_t, void* data) {
  auto& image = *static_cast<Image*>(data);
  uintptr_t lo = ~uintptr_t{0}, hi = 0, w_lo = ~uintptr_t{0}, w_hi = 0;
  bool ours = false;
  for (int i = 0; i < object->dlpi_phnum; ++i) {
    const ElfW(Phdr) & ph = object->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t a = object->dlpi_addr + ph.p_vaddr;
    lo = std::min(lo, a);
    hi = std::max(hi, a + ph.p_memsz);
    if (ph.p_flags & PF_W) {
      w_lo = std::min(w_lo, a);
      w_hi = std::max(w_hi, a + ph.p_memsz);
    }
    ours |= a <= image.inside && image.inside < a + ph.p_memsz;
  }
  if (!ours) return 0;
  image = {image.inside, lo, hi, w_lo, w_hi > w_lo ? w_hi : w_lo};
  return 1;
}

Memory& memory() {
  static Memory* m = [] {
    auto* m = new Memory;
    Image image{reinterpret_cast<uintptr_t>(&find_image), 0, 0, 0, 0};
    dl_iterate_phdr(&find_image, &image);
    m->image_begin = image.begin;
    m->image_end = image.end;
    m->writable_begin = image.writable_begin;
    m->writable_end = image.writable_end;
    m->static_shadow.resize(m->writable_end - m->writable_begin);
    m->dynamic_shadow.resize(kMaxDynamicShared);
    return m;
  }();
  return *m;
}

const char* article(Access kind) { return kind == Access::kAtomic ? "an " : "a "; }

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
    const auto access = [&] {
      return std::string(name(kind)) + " of " + std::to_string(bytes) + " bytes at " + space + " + " +
             std::to_string(offset);
    };
    if (kind != Access::kWrite && s.write_epoch < first && s.atomic_epoch < first) {
      fail_thread(std::string("uninitialised shared read: ") + article(kind) + access() + " reads byte " +
                  std::to_string(offset + i) + ", which no thread of this block wrote");
    }
    // A conflict: another thread's plain write; or, for a plain write, another thread's read or
    // atomic; or a plain read and another thread's atomic (its value is not settled before a barrier).
    int other = -1;
    if (s.write_epoch == e && s.writer != me) other = s.writer;
    const bool others_read = s.read_epoch == e && (s.reader != me || s.many_readers);
    const bool others_atomic = s.atomic_epoch == e && (s.atomic_thread != me || s.many_atomics);
    if (kind != Access::kRead && others_read) other = s.reader != me ? s.reader : -2;
    if (kind != Access::kAtomic && others_atomic) other = s.atomic_thread != me ? s.atomic_thread : -2;
    if (other != -1) {
      fail_thread(std::string("shared-memory race: ") + article(kind) + access() + " touches byte " +
                  std::to_string(offset + i) + ", which " +
                  (other >= 0 ? thread_name(l, other) : std::string("another thread")) +
                  " also touched since the last barrier, one of them writing (atomics only meet atomics)");
    }
    switch (kind) {
      case Access::kRead:
        note_thread(s.read_epoch, s.reader, s.many_readers, e, me);
        break;
      case Access::kWrite:
        s.write_epoch = e;
        s.writer = me;
        break;
      case Access::kAtomic:
        note_thread(s.atomic_epoch, s.atomic_thread, s.many_atomics, e, me);
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
  const uintptr_t s0 = memory().writable_begin, s1 = memory().writable_end;
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

char* dynamic_shared_buffer() { return memory().dynamic; }
void next_epoch() { ++memory().epoch; }

void begin_launch() { memory().launch_first_epoch = memory().epoch + 1; }

void begin_block() {
  Memory& m = memory();
  Launch& l = *tls_launch;
  // Shared memory starts undefined: poison what this launch's blocks wrote so
  // far, for any read the instrumentation does not see (the shadow reports
  // the reads it sees).
  for (uintptr_t a = l.static_lo; a < l.static_hi; ++a) {
    const Shadow& s = m.static_shadow[a - m.writable_begin];
    if (s.write_epoch >= m.launch_first_epoch || s.atomic_epoch >= m.launch_first_epoch) {
      *reinterpret_cast<unsigned char*>(a) = kPoison;
    }
  }
  std::memset(m.dynamic, kPoison, l.shared_bytes);
  m.block_first_epoch = ++m.epoch;
}

void note_atomic(const void* address, size_t bytes) { check(address, bytes, Access::kAtomic); }

}  // namespace cuda_emu

// ---- the instrumentation's callbacks ------------------------------------------------
// Hidden: they serve this library's instrumented kernels only.
#define FS_EMU_HOOK __attribute__((visibility("hidden")))
#define FS_EMU_HOOKS(n)                                                                                               \
  extern "C" FS_EMU_HOOK void __tsan_read##n(void* p) { cuda_emu::check(p, n, cuda_emu::Access::kRead); }             \
  extern "C" FS_EMU_HOOK void __tsan_write##n(void* p) { cuda_emu::check(p, n, cuda_emu::Access::kWrite); }           \
  extern "C" FS_EMU_HOOK void __tsan_unaligned_read##n(void* p) { cuda_emu::check(p, n, cuda_emu::Access::kRead); }   \
  extern "C" FS_EMU_HOOK void __tsan_unaligned_write##n(void* p) { cuda_emu::check(p, n, cuda_emu::Access::kWrite); } \
  extern "C" FS_EMU_HOOK void __tsan_volatile_read##n(void* p) { cuda_emu::check(p, n, cuda_emu::Access::kRead); }    \
  extern "C" FS_EMU_HOOK void __tsan_volatile_write##n(void* p) { cuda_emu::check(p, n, cuda_emu::Access::kWrite); }
FS_EMU_HOOKS(1)
FS_EMU_HOOKS(2)
FS_EMU_HOOKS(4)
FS_EMU_HOOKS(8)
FS_EMU_HOOKS(16)
#undef FS_EMU_HOOKS
extern "C" FS_EMU_HOOK void __tsan_read_range(void* p, unsigned long n) {
  cuda_emu::check(p, n, cuda_emu::Access::kRead);
}
extern "C" FS_EMU_HOOK void __tsan_write_range(void* p, unsigned long n) {
  cuda_emu::check(p, n, cuda_emu::Access::kWrite);
}
extern "C" FS_EMU_HOOK void __tsan_init() {}
extern "C" FS_EMU_HOOK void __tsan_func_entry(void*) {}
extern "C" FS_EMU_HOOK void __tsan_func_exit() {}
