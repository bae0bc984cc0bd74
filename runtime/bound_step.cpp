/// \file
/// The names bound steps carry: error labels and torch.profiler ranges.
#include "runtime/bound_step.h"

namespace inductor_cpp::runtime {

std::string profile_name_of(const std::string& what, const std::vector<int32_t>& nodes,
                            const std::vector<std::string>& labels) {
  // Labels look like "%12 aten::add.Tensor (file.py:3 in f: ...)": the op name is the word
  // after "aten::"; views are left out.
  std::string ops;
  for (int32_t n : nodes) {
    if (n < 0 || n >= static_cast<int32_t>(labels.size())) continue;
    const std::string& l = labels[n];
    const size_t at = l.find("::");
    if (at == std::string::npos) continue;
    const size_t end = l.find_first_of(". (", at + 2);
    const std::string op = l.substr(at + 2, end == std::string::npos ? std::string::npos : end - at - 2);
    if (op == "view" || op == "permute" || op == "_unsafe_view" || op == "expand") continue;
    if (ops.find(op) != std::string::npos) continue;
    ops += (ops.empty() ? "" : ", ") + op;
  }
  return "inductor_cpp::" + what + (ops.empty() ? "" : " (" + ops + ")");
}

std::string computing_label(const std::string& what, const std::vector<int32_t>& nodes,
                            const std::vector<std::string>& labels) {
  std::string computing;
  for (int32_t n : nodes) {
    if (n >= 0 && n < static_cast<int32_t>(labels.size())) computing += (computing.empty() ? "" : ", ") + labels[n];
  }
  return computing.empty() ? what : what + " computing " + computing;
}

}  // namespace inductor_cpp::runtime
