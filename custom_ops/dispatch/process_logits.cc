// process_logits on every backend (docs/ops/process_logits.md).
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/process_logits.h"

namespace fastspec {

FASTSPEC_REGISTER_OP(process_logits, process_logits_params);

}  // namespace fastspec
