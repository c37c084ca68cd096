// verify_draft_tree's tree check for the array API at C speed: the kernels judge no
// drafts of a malformed tree (fastspec::tree_ok), fastspec.arrays refuses one before
// the launch. A loop over slots in Python cost 50-100 µs a call, 25x the launch it
// guarded. The first fault is returned as a record that fastspec/core/refusals.py
// words (as the reference's check_draft_trees does).
#include <pybind11/numpy.h>

#include "bindings.h"
#include "fastspec/draft_tree.h"

namespace fastspec_bindings {

namespace {

using Int32s = py::array_t<int32_t, py::array::c_style>;

const char* const kFaultKinds[] = {"", "too_many_nodes", "no_parent", "cycle", "parent_after", "too_deep"};

// check_draft_trees' rule: every decode slot (seq_lens_encoder 0, at least one node) holds a tree;
// the first slot that does not, as {"slot": b, "fault": {...}}, or None.
py::object draft_tree_fault(const Int32s& parents, const Int32s& seq_lens_this_time, const Int32s& seq_lens_encoder,
                            int64_t max_depth) {
  if (parents.ndim() != 2) throw std::invalid_argument("draft_tree_fault: draft_tree_parents must be [B, N]");
  const int64_t batch = parents.shape(0), cols = parents.shape(1);
  if (seq_lens_this_time.size() < batch || seq_lens_encoder.size() < batch) {
    throw std::invalid_argument("draft_tree_fault: seq_lens_this_time and seq_lens_encoder need B values");
  }
  const int32_t* p = parents.data();
  const int32_t* lens = seq_lens_this_time.data();
  const int32_t* enc = seq_lens_encoder.data();
  for (int64_t b = 0; b < batch; ++b) {
    if (enc[b] != 0 || lens[b] < 1) continue;
    int64_t node, depth;
    const fastspec::TreeFault fault = fastspec::tree_fault(p + b * cols, lens[b], cols, max_depth, &node, &depth);
    if (fault == fastspec::kTreeOk) continue;
    const int64_t parent = fault == fastspec::kTreeTooManyNodes ? 0 : p[b * cols + node];
    return py::dict(
        py::arg("slot") = b,
        py::arg("fault") = py::dict(py::arg("kind") = kFaultKinds[fault], py::arg("node") = node,
                                    py::arg("parent") = parent, py::arg("depth") = depth, py::arg("nodes") = lens[b],
                                    py::arg("cols") = cols, py::arg("max_depth") = max_depth));
  }
  return py::none();
}

}  // namespace

void bind_trees(py::module_& m) {
  m.def("draft_tree_fault", &draft_tree_fault, py::arg("draft_tree_parents"), py::arg("seq_lens_this_time"),
        py::arg("seq_lens_encoder"), py::arg("max_depth"),
        "the first decode slot whose draft_tree_parents is not a tree of depth <= max_depth, and why "
        "({'slot': b, 'fault': {...}}), or None (int32 arrays)");
}

}  // namespace fastspec_bindings
