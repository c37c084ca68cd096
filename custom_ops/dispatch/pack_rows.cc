// pack_rows on every backend (docs/ops/pack_rows.md).
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/pack_rows.h"

namespace fastspec {

FASTSPEC_REGISTER_OP(pack_rows, pack_rows_params);

}  // namespace fastspec
