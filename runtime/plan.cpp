/// \file
/// Plan operands and library calls: constructors and the slots a library call touches.
/// The JSON form is in plan_json.cpp, the text form in plan_text.cpp.
#include "runtime/plan.h"

#include <stdexcept>

namespace inductor_cpp::runtime {

PlanArg PlanArg::of_slot(int32_t s) {
  PlanArg a;
  a.kind = Kind::Slot;
  a.slot = s;
  return a;
}

PlanArg PlanArg::of_literal(nlohmann::json j) {
  PlanArg a;
  a.kind = Kind::Literal;
  a.literal = std::move(j);
  return a;
}

PlanArg PlanArg::of_list(std::vector<PlanArg> items) {
  PlanArg a;
  a.kind = Kind::List;
  a.items = std::move(items);
  return a;
}

LibraryCall LibraryCall::of(const std::string& op) {
#define INDUCTOR_CPP_LIBRARY_OP_CASE(name, Args) \
  if (op == #name) return LibraryCall{op, Args{}, {}};
  INDUCTOR_CPP_LIBRARY_OPS(INDUCTOR_CPP_LIBRARY_OP_CASE)
#undef INDUCTOR_CPP_LIBRARY_OP_CASE
  throw std::runtime_error("plan: unknown library op '" + op + "'");
}

namespace {

void add_epilogue_reads(const std::vector<MatmulEpilogue>& epilogue, std::vector<int32_t>& out) {
  for (const MatmulEpilogue& e : epilogue) {
    out.push_back(e.slot);
    out.insert(out.end(), e.params.begin(), e.params.end());
  }
}

void add_attention_reads(const AttentionOperands& in, std::vector<int32_t>& out) {
  out.insert(out.end(), {in.query, in.key, in.value, in.mask});
}

struct ReadsOf {
  std::vector<int32_t>& out;
  void operator()(const GemmCall& c) const {
    out.insert(out.end(), {c.a, c.b});
    add_epilogue_reads(c.epilogue, out);
  }
  void operator()(const Conv2dCall& c) const {
    out.insert(out.end(), {c.input, c.weight});
    add_epilogue_reads(c.epilogue, out);
  }
  void operator()(const Conv2dBackwardCall& c) const {
    out.insert(out.end(), {c.grad_output, c.input, c.weight});
  }
  void operator()(const AttentionCall& c) const { add_attention_reads(c.in, out); }
  void operator()(const AttentionBackwardCall& c) const {
    add_attention_reads(c.in, out);
    out.insert(out.end(), {c.grad_output, c.forward_output, c.forward_logsumexp});
  }
};

struct WritesOf {
  std::vector<const BufferAlloc*>& out;
  void operator()(const GemmCall& c) const { out.push_back(&c.out); }
  void operator()(const Conv2dCall& c) const { out.push_back(&c.out); }
  void operator()(const Conv2dBackwardCall& c) const {
    out.insert(out.end(), {&c.grad_input, &c.grad_weight, &c.grad_bias});
  }
  void operator()(const AttentionCall& c) const { out.insert(out.end(), {&c.out, &c.logsumexp}); }
  void operator()(const AttentionBackwardCall& c) const {
    out.insert(out.end(), {&c.grad_query, &c.grad_key, &c.grad_value});
  }
};

}  // namespace

std::vector<int32_t> LibraryCall::reads() const {
  std::vector<int32_t> all;
  std::visit(ReadsOf{all}, args);
  std::vector<int32_t> out;
  for (int32_t s : all) {
    if (s != -1) out.push_back(s);  // -1: an absent optional; any other negative is kept for
  }                                  // validate_plan to reject
  return out;
}

std::vector<const BufferAlloc*> LibraryCall::writes() const {
  std::vector<const BufferAlloc*> all;
  std::visit(WritesOf{all}, args);
  std::vector<const BufferAlloc*> out;
  for (const BufferAlloc* a : all) {
    if (a->slot != -1) out.push_back(a);
  }
  return out;
}

}  // namespace inductor_cpp::runtime
