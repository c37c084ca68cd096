// emitted_logprobs on every backend (docs/ops/emitted_logprobs.md).
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/emitted_logprobs.h"

namespace fastspec {

FASTSPEC_REGISTER_OP(emitted_logprobs, emitted_logprobs_params);

}  // namespace fastspec
