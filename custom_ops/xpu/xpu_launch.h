// For the XPU host launchers (custom_ops/xpu/host): one launch macro that is
// kernel<<<clusters, cores, stream>>>(args) under XTDK (built with
// -fxpu-launch-return, so it yields the runtime's status) and the emulated
// launch otherwise (status 0, or kXpuEmulationError when a rule was broken).
#pragma once

#include "fastspec/common.h"
#include "xpu_types.h"

#if defined(FASTSPEC_XTDK)
#include <xpu/runtime.h>
#define FS_XPU_KERNEL_DECL __attribute__((global))
#define FS_XPU_LAUNCH(clusters, grid, kernel, ...) \
  kernel<<<(clusters), (grid).cores, static_cast<XPUStream>((grid).stream)>>>(__VA_ARGS__)
#else
#include "emulation/xpu_emu.h"
#define FS_XPU_KERNEL_DECL
#define FS_XPU_LAUNCH(clusters, grid, kernel, ...) \
  ::xpu_emu::launch((clusters), (grid).cores, (grid).reverse_clusters, [&] { kernel(__VA_ARGS__); })
#endif

namespace fastspec {
namespace xpu {

// A grid the launchers accept: 1..255 clusters of 1..64 cores.
inline bool grid_ok(const XpuGrid& grid) {
  return grid.clusters >= 1 && grid.clusters <= 255 && grid.cores >= 1 && grid.cores <= 64;
}

template <typename T>
xpu_int64* i64(T* p) {
  return reinterpret_cast<xpu_int64*>(p);
}
template <typename T>
const xpu_int64* i64(const T* p) {
  return reinterpret_cast<const xpu_int64*>(p);
}

}  // namespace xpu
}  // namespace fastspec
