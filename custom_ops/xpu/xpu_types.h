// What the XPU kernels and their host launchers share: the limits of the
// kernels and the one 64-bit integer type of every XPU kernel parameter, seen alike by the
// kernels and their host launchers. On the 32-bit XPU int64_t is long long but
// on the 64-bit host it is long; a kernel declared with int64_t would mangle
// differently on the two sides and fail to link, so under XTDK both use long
// long (launchers cast their int64_t pointers). The emulation compiles both
// sides for the host, where int64_t serves.
#pragma once

#include <cstdint>

namespace fastspec {
#if defined(FASTSPEC_XTDK)
typedef long long xpu_int64;
#else
typedef int64_t xpu_int64;
#endif
static_assert(sizeof(xpu_int64) == 8, "xpu_int64 must be 64 bits");

namespace xpu {
// The kernels keep a slot's rows in local memory; the launchers refuse larger
// calls and the schema's device_limits["xpu"] turn them into clear errors first.
constexpr int kMaxDraftCols = 128;  // K + 1: one int64 row is 1 KB
constexpr int kMaxEndTokens = 64;   // E: 512 B
constexpr int kMaxStopCols = 64;    // S and SS of update_model_status's stop tables: 512 B each
}  // namespace xpu
}  // namespace fastspec
