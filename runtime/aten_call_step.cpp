/// \file
/// Binding ATen steps to dispatcher operators (see the header), and running them.
#include "runtime/aten_call_step.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/jit_type.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "runtime/aten_literals.h"
#include "runtime/scalar_ops.h"

namespace inductor_cpp::runtime {

namespace {

using nlohmann::json;

/// How one schema argument gets its value on each call.
struct Operand {
  enum class Kind { Constant, Slot, TensorList, OptionalTensorList, NumberList };
  Kind kind = Kind::Constant;
  c10::IValue constant;
  int32_t slot = -1;
  /// A Tensor is declared but the slot may hold a number (a size, in dynamic-shape graphs):
  /// pass it as a wrapped-number tensor, as Python would.
  bool wrap_number = false;
  std::vector<int32_t> slots;  ///< list members; -1 is None in an optional-tensor list
  /// NumberList: each member is slots[i] if >= 0, else members[i] (a literal).
  std::vector<c10::IValue> members;
  c10::TypePtr element_type;  ///< NumberList: int, float or bool
};

Operand bind_operand(const PlanArg& arg, const c10::Argument& formal) {
  Operand out;
  if (arg.kind == PlanArg::Kind::Slot) {
    out.kind = Operand::Kind::Slot;
    out.slot = arg.slot;
    out.wrap_number = strip_optional(formal.type())->kind() == c10::TypeKind::TensorType;
    return out;
  }
  if (arg.kind == PlanArg::Kind::Literal) {
    // None for a (non-optional) Tensor is an undefined tensor, as autograd formulas pass it
    // (e.g. attn_bias of _scaled_dot_product_efficient_attention_backward).
    if (arg.literal.is_null() && formal.type()->kind() == c10::TypeKind::TensorType) {
      out.constant = c10::IValue(at::Tensor());
      return out;
    }
    out.constant = literal_to_ivalue(arg.literal, formal.type(), formal.N());
    return out;
  }
  // A list holding slots: Tensor[] or Tensor?[], or a size list mixing literals and slots
  // ([-1, s0 * 2] in dynamic-shape graphs). Lists of literals only are constants.
  const auto list_type = strip_optional(formal.type())->cast<c10::ListType>();
  if (!list_type)
    throw std::runtime_error("a list was given for '" + formal.name() + "', declared " +
                             formal.type()->str());
  const bool optional_elems = list_type->getElementType()->cast<c10::OptionalType>() != nullptr;
  const bool has_slot = std::any_of(arg.items.begin(), arg.items.end(),
                                    [](const PlanArg& i) { return i.kind == PlanArg::Kind::Slot; });
  if (!has_slot) {
    json items = json::array();
    for (const PlanArg& item : arg.items) items.push_back(item.literal);
    out.constant = list_literal(items, list_type);
    return out;
  }
  const c10::TypePtr elem = list_type->getElementType();
  if (elem->kind() != c10::TypeKind::TensorType && !optional_elems) {
    out.kind = Operand::Kind::NumberList;
    out.element_type = elem;
    for (const PlanArg& item : arg.items) {
      if (item.kind == PlanArg::Kind::List)
        throw std::runtime_error("nested list argument '" + formal.name() + "'");
      out.slots.push_back(item.kind == PlanArg::Kind::Slot ? item.slot : -1);
      out.members.push_back(item.kind == PlanArg::Kind::Slot
                                ? c10::IValue()
                                : literal_to_ivalue(item.literal, elem, std::nullopt));
    }
    return out;
  }
  for (const PlanArg& item : arg.items) {
    if (item.kind == PlanArg::Kind::Slot) {
      out.slots.push_back(item.slot);
    } else if (item.kind == PlanArg::Kind::Literal && item.literal.is_null() && optional_elems) {
      out.slots.push_back(-1);
    } else {
      throw std::runtime_error("list argument '" + formal.name() +
                               "' mixes tensors and other values");
    }
  }
  out.kind = optional_elems ? Operand::Kind::OptionalTensorList : Operand::Kind::TensorList;
  return out;
}

/// An operand with no schema to follow (scalar-op arguments, graph outputs): a slot or a
/// literal taken as written.
Operand bind_untyped(const PlanArg& arg, const std::string& what) {
  Operand o;
  if (arg.kind == PlanArg::Kind::Slot) {
    o.kind = Operand::Kind::Slot;
    o.slot = arg.slot;
    return o;
  }
  if (arg.kind == PlanArg::Kind::List)
    throw std::runtime_error(what + ": list values are not supported");
  o.constant = literal_to_ivalue(arg.literal, c10::AnyType::get(), std::nullopt);
  return o;
}

void push_operand(const Operand& o, const std::vector<c10::IValue>& slots,
                  torch::jit::Stack& stack) {
  switch (o.kind) {
    case Operand::Kind::Constant:
      stack.push_back(o.constant);
      return;
    case Operand::Kind::Slot: {
      const c10::IValue& v = slots[o.slot];
      if (o.wrap_number && (v.isInt() || v.isDouble() || v.isBool() || v.isSymInt())) {
        stack.emplace_back(wrapped_number(v));
      } else {
        stack.push_back(v);
      }
      return;
    }
    case Operand::Kind::NumberList: {
      auto member = [&](size_t i) -> const c10::IValue& {
        return o.slots[i] >= 0 ? slots[o.slots[i]] : o.members[i];
      };
      if (o.element_type->kind() == c10::TypeKind::FloatType) {
        c10::List<double> list;
        for (size_t i = 0; i < o.slots.size(); ++i) list.push_back(member(i).toScalar().toDouble());
        stack.emplace_back(std::move(list));
      } else if (o.element_type->kind() == c10::TypeKind::BoolType) {
        c10::List<bool> list;
        for (size_t i = 0; i < o.slots.size(); ++i) list.push_back(member(i).toScalar().toBool());
        stack.emplace_back(std::move(list));
      } else {
        c10::List<int64_t> list;
        for (size_t i = 0; i < o.slots.size(); ++i) list.push_back(member(i).toScalar().toLong());
        stack.emplace_back(std::move(list));
      }
      return;
    }
    case Operand::Kind::TensorList: {
      c10::List<at::Tensor> list;
      list.reserve(o.slots.size());
      for (int32_t s : o.slots) list.push_back(slots[s].toTensor());
      stack.emplace_back(std::move(list));
      return;
    }
    case Operand::Kind::OptionalTensorList: {
      c10::List<std::optional<at::Tensor>> list;
      list.reserve(o.slots.size());
      for (int32_t s : o.slots) {
        if (s < 0 || slots[s].isNone()) {
          list.push_back(std::nullopt);
        } else {
          list.push_back(slots[s].toTensor());
        }
      }
      stack.emplace_back(std::move(list));
      return;
    }
  }
}

Number to_number(const c10::IValue& v) {
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt();
  if (v.isDouble()) return v.toDouble();
  if (v.isSymInt()) return v.toSymInt().expect_int();
  if (v.isSymFloat()) return v.toSymFloat().expect_float();
  if (v.isSymBool()) return v.toSymBool().expect_bool();
  if (v.isTensor() && v.toTensor().numel() == 1) {
    const at::Tensor& t = v.toTensor();
    if (t.scalar_type() == c10::kBool) return t.item<bool>();
    if (c10::isIntegralType(t.scalar_type(), false)) return t.item<int64_t>();
    return t.item<double>();
  }
  throw std::runtime_error("expected a number, got " + v.tagKind());
}

/// Replaces the arguments on `stack` by the result, like a boxed call.
void run_scalar_step(ScalarOp op, torch::jit::Stack& stack) {
  std::vector<Number> args;
  args.reserve(stack.size());
  for (const c10::IValue& v : stack) args.push_back(to_number(v));
  const Number result = eval_scalar_op(op, args);
  stack.clear();
  std::visit([&](auto x) { stack.emplace_back(x); }, result);
}

/// A dispatcher operator with its operands bound in schema order.
class BoundAtenCall final : public BoundStep {
 public:
  void run(RunContext& ctx) const override {
    ctx.stack.clear();
    for (const Operand& o : operands) push_operand(o, ctx.slots, ctx.stack);
    op->callBoxed(ctx.stack);
    if (flatten_list_return) {
      const c10::List<c10::IValue> list = ctx.stack.at(0).toList();
      for (size_t k = 0; k < outs.size() && k < list.size(); ++k) {
        if (outs[k] >= 0) ctx.slots[outs[k]] = list.get(k);
      }
      return;
    }
    for (size_t k = 0; k < outs.size() && k < ctx.stack.size(); ++k) {
      if (outs[k] >= 0) ctx.slots[outs[k]] = std::move(ctx.stack[k]);
    }
  }

  std::optional<c10::OperatorHandle> op;
  std::vector<Operand> operands;  ///< one per schema argument, in schema order
  std::vector<int32_t> outs;
  bool flatten_list_return = false;
};

/// A "sym::" step: arithmetic on numbers (sizes), no dispatcher.
class BoundScalarCall final : public BoundStep {
 public:
  void run(RunContext& ctx) const override {
    ctx.stack.clear();
    for (const Operand& o : operands) push_operand(o, ctx.slots, ctx.stack);
    run_scalar_step(op, ctx.stack);
    for (size_t k = 0; k < outs.size() && k < ctx.stack.size(); ++k) {
      if (outs[k] >= 0) ctx.slots[outs[k]] = std::move(ctx.stack[k]);
    }
  }

  ScalarOp op;
  std::vector<Operand> operands;
  std::vector<int32_t> outs;
};

std::unique_ptr<BoundStep> bind_scalar_call(const AtenCall& call) {
  auto bound = std::make_unique<BoundScalarCall>();
  const std::optional<ScalarOp> op = scalar_op_from_name(call.op);
  if (!op) throw std::runtime_error("unknown scalar operation " + call.op);
  bound->op = *op;
  for (const PlanArg& arg : call.args) bound->operands.push_back(bind_untyped(arg, call.op));
  bound->outs = call.outs;
  return bound;
}

}  // namespace

std::unique_ptr<BoundStep> bind_aten_call(const AtenCall& call, std::string label) {
  if (call.op.rfind("sym::", 0) == 0) {
    std::unique_ptr<BoundStep> scalar = bind_scalar_call(call);
    scalar->label = std::move(label);
    return scalar;
  }
  const auto [name, overload] = [&] {
    const auto ns = call.op.find("::");
    const auto dot = call.op.find('.', ns == std::string::npos ? 0 : ns + 2);
    if (dot == std::string::npos) return std::make_pair(call.op, std::string());
    return std::make_pair(call.op.substr(0, dot), call.op.substr(dot + 1));
  }();
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle)
    throw std::runtime_error("operator " + call.op + " is not registered with the dispatcher");
  auto bound = std::make_unique<BoundAtenCall>();
  bound->label = std::move(label);
  bound->op = *handle;
  bound->outs = call.outs;
  const c10::FunctionSchema& schema = handle->schema();
  const auto& formals = schema.arguments();
  if (call.args.size() > formals.size())
    throw std::runtime_error(call.op + ": " + std::to_string(call.args.size()) +
                             " arguments given, schema takes " + std::to_string(formals.size()));
  for (size_t i = 0; i < formals.size(); ++i) {
    const c10::Argument& formal = formals[i];
    if (i < call.args.size()) {
      bound->operands.push_back(bind_operand(call.args[i], formal));
      continue;
    }
    auto kw = std::find_if(call.kwargs.begin(), call.kwargs.end(),
                           [&](const auto& p) { return p.first == formal.name(); });
    if (kw != call.kwargs.end()) {
      bound->operands.push_back(bind_operand(kw->second, formal));
      continue;
    }
    if (!formal.default_value())
      throw std::runtime_error(call.op + ": no value for argument '" + formal.name() + "'");
    Operand def;
    def.constant = *formal.default_value();
    bound->operands.push_back(std::move(def));
  }
  for (const auto& kw : call.kwargs) {
    const bool known = std::any_of(formals.begin(), formals.end(),
                                   [&](const c10::Argument& f) { return f.name() == kw.first; });
    if (!known)
      throw std::runtime_error(call.op + ": unknown keyword argument '" + kw.first + "'");
  }
  const auto& returns = schema.returns();
  bound->flatten_list_return =
      returns.size() == 1 && returns[0].type()->kind() == c10::TypeKind::ListType;
  return bound;
}

BoundOutput::BoundOutput(const PlanArg& arg) {
  const Operand o = bind_untyped(arg, "inductor_cpp: graph output");
  slot_ = o.kind == Operand::Kind::Slot ? o.slot : -1;
  constant_ = o.constant;
}

c10::IValue BoundOutput::value(const std::vector<c10::IValue>& slots) const {
  return slot_ >= 0 ? slots[slot_] : constant_;
}

}  // namespace inductor_cpp::runtime
