// verify_draft_tree's tree check for the array API at C speed: the kernels judge no
// drafts of a malformed tree, fastspec.arrays refuses one before the launch (and
// fastspec/reference/trees.py check_draft_trees words why). A loop over slots in
// Python cost 50-100 µs a call, 25x the launch it guarded.
#include <pybind11/numpy.h>

#include "bindings.h"
#include "fastspec/draft_tree.h"

namespace fastspec_bindings {

namespace {

using Int32s = py::array_t<int32_t, py::array::c_style>;

// check_draft_trees' rule: every decode slot (seq_lens_encoder 0, at least one node) holds a tree.
bool draft_trees_ok(const Int32s& parents, const Int32s& seq_lens_this_time, const Int32s& seq_lens_encoder,
                    int64_t max_depth) {
  if (parents.ndim() != 2) throw std::invalid_argument("draft_trees_ok: draft_tree_parents must be [B, N]");
  const int64_t batch = parents.shape(0), cols = parents.shape(1);
  if (seq_lens_this_time.size() < batch || seq_lens_encoder.size() < batch) {
    throw std::invalid_argument("draft_trees_ok: seq_lens_this_time and seq_lens_encoder need B values");
  }
  const int32_t* p = parents.data();
  const int32_t* lens = seq_lens_this_time.data();
  const int32_t* enc = seq_lens_encoder.data();
  for (int64_t b = 0; b < batch; ++b) {
    if (enc[b] != 0 || lens[b] < 1) continue;
    if (!fastspec::tree_ok(p + b * cols, lens[b], cols, max_depth)) return false;
  }
  return true;
}

}  // namespace

void bind_trees(py::module_& m) {
  m.def("draft_trees_ok", &draft_trees_ok, py::arg("draft_tree_parents"), py::arg("seq_lens_this_time"),
        py::arg("seq_lens_encoder"), py::arg("max_depth"),
        "whether every decode slot's draft_tree_parents is a tree of depth <= max_depth (int32 arrays)");
}

}  // namespace fastspec_bindings
