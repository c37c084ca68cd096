// ngram_match and ngram_append on every backend (docs/ops/ngram_match.md,
// docs/ops/ngram_append.md); both read their call with the generated builders.
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/ngram_append.h"
#include "fastspec/params/ngram_match.h"

namespace fastspec {

static_assert(arg::ngram_append::kCount == arg::ngram_match::kCount &&
                  arg::ngram_append::max_dec_len == arg::ngram_match::max_dec_len,
              "ngram_append takes ngram_match's arguments");

FASTSPEC_REGISTER_OP(ngram_match, ngram_match_params);
FASTSPEC_REGISTER_OP(ngram_append, ngram_append_params);

}  // namespace fastspec
