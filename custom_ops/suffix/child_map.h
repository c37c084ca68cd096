// ChildMap: (parent node, token) -> child node, open addressing with linear
// probing and backward-shift deletion (no tombstones, so lookups stay short
// after evictions). 16 bytes a slot, at most 3/4 full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fastspec::suffix {

class ChildMap {
 public:
  ChildMap() { slots_.assign(16, Slot{}); }

  int32_t find(int32_t parent, int32_t token) const {
    const uint64_t key = pack(parent, token);
    for (size_t i = home(key);; i = next(i)) {
      const Slot& s = slots_[i];
      if (s.child < 0) return -1;
      if (s.key == key) return s.child;
    }
  }

  // starts loading the slot a find(parent, token) reads first (independent lookups then overlap)
  void prefetch(int32_t parent, int32_t token) const { __builtin_prefetch(&slots_[home(pack(parent, token))]); }

  void insert(int32_t parent, int32_t token, int32_t child) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    place(pack(parent, token), child);
    ++size_;
  }

  void erase(int32_t parent, int32_t token) {
    const uint64_t key = pack(parent, token);
    size_t hole = home(key);
    while (slots_[hole].key != key || slots_[hole].child < 0) {
      if (slots_[hole].child < 0) return;  // absent
      hole = next(hole);
    }
    // shift later entries of the probe run back into the hole
    for (size_t i = next(hole);; i = next(i)) {
      if (slots_[i].child < 0) break;
      const size_t want = home(slots_[i].key);
      const bool movable = hole <= i ? (want <= hole || want > i) : (want <= hole && want > i);
      if (movable) {
        slots_[hole] = slots_[i];
        hole = i;
      }
    }
    slots_[hole] = Slot{};
    --size_;
  }

  size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  struct Slot {
    uint64_t key = 0;
    int32_t child = -1;  // -1: empty
    int32_t pad = 0;
  };

  static uint64_t pack(int32_t parent, int32_t token) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(parent)) << 32) | static_cast<uint32_t>(token);
  }
  size_t home(uint64_t key) const {
    uint64_t h = key * 0x9E3779B97F4A7C15ull;  // Fibonacci hashing: the high bits are well mixed
    return static_cast<size_t>(h >> 32) & (slots_.size() - 1);
  }
  size_t next(size_t i) const { return (i + 1) & (slots_.size() - 1); }

  void place(uint64_t key, int32_t child) {
    size_t i = home(key);
    while (slots_[i].child >= 0) i = next(i);
    slots_[i].key = key;
    slots_[i].child = child;
  }

  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.size() * 2, Slot{});
    for (const Slot& s : old) {
      if (s.child >= 0) place(s.key, s.child);
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace fastspec::suffix
