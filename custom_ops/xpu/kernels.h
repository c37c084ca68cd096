// Every XPU kernel as its host launcher sees it (custom_ops/xpu/host): the
// same signatures as the __global__ definitions in the .xpu files, declared
// with __attribute__((global)) under XTDK and as plain functions under the
// emulation (where the .xpu files include this header too: a definition that
// drifts from its declaration leaves the declared kernel undefined, and the
// library fails to load naming it). Pointers are global memory; 64-bit integers
// are xpu_int64 on both sides (xpu_types.h).
#pragma once

#include "xpu_launch.h"

// <op>_kernel of every op, generated from the schema by tools/codegen.py: its
// tensors in schema order, then its sizes, then its attributes.
#include "fastspec/xpu_kernels.h"

namespace fastspec {
namespace xpu {

// ngram_match.xpu: the token budget of ngram_match and ngram_append.
FS_XPU_KERNEL_DECL void ngram_budget_kernel(int* seq_lens_this_time, const int* seq_lens_encoder,
                                            const int* seq_lens_decoder, xpu_int64* draft_tokens, xpu_int64 batch,
                                            xpu_int64 draft_cols, xpu_int64 token_budget);

// emulation/probes.xpu: kernels that break one rule each (emulation tests only).
FS_XPU_KERNEL_DECL void probe_kernel(int which, const int* in, int* out, int n);

}  // namespace xpu
}  // namespace fastspec
