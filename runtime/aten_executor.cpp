/// \file
/// AtenExecutable: binding plan operands to operator schemas, and the step loop.
#include "runtime/aten_executor.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/jit_type.h>
#include <ATen/ScalarOps.h>
#include <c10/core/Device.h>
#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <unordered_map>

#include "runtime/scalar_ops.h"

namespace inductor_cpp::runtime {

namespace {

using nlohmann::json;

// ---- literal names (docs/graph_schema.md) to c10 enums -------------------------------------

c10::ScalarType dtype_from_name(const std::string& name) {
  static const std::unordered_map<std::string, c10::ScalarType> table = {
      {"float32", c10::kFloat},       {"float64", c10::kDouble},        {"float16", c10::kHalf},
      {"bfloat16", c10::kBFloat16},   {"int8", c10::kChar},             {"int16", c10::kShort},
      {"int32", c10::kInt},           {"int64", c10::kLong},            {"uint8", c10::kByte},
      {"uint16", c10::kUInt16},       {"uint32", c10::kUInt32},         {"uint64", c10::kUInt64},
      {"bool", c10::kBool},           {"complex32", c10::kComplexHalf}, {"complex64", c10::kComplexFloat},
      {"complex128", c10::kComplexDouble},
      {"float8_e4m3fn", c10::ScalarType::Float8_e4m3fn},
      {"float8_e5m2", c10::ScalarType::Float8_e5m2},
  };
  auto it = table.find(name);
  if (it != table.end()) return it->second;
  // Newer dtypes are named after their c10 name in lower case: float8_e4m3fnuz, uint3, ...
  for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
    const auto type = static_cast<c10::ScalarType>(i);
    std::string lowered = c10::toString(type);
    std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lowered == name) return type;
  }
  throw std::runtime_error("unknown dtype '" + name + "'");
}

c10::Layout layout_from_name(const std::string& name) {
  if (name == "strided") return c10::kStrided;
  if (name == "sparse_coo") return c10::kSparse;
  if (name == "sparse_csr") return c10::kSparseCsr;
  if (name == "sparse_csc") return c10::kSparseCsc;
  if (name == "sparse_bsr") return c10::kSparseBsr;
  if (name == "sparse_bsc") return c10::kSparseBsc;
  if (name == "_mkldnn") return c10::kMkldnn;
  if (name == "jagged") return c10::kJagged;
  throw std::runtime_error("unknown layout '" + name + "'");
}

c10::MemoryFormat memory_format_from_name(const std::string& name) {
  if (name == "contiguous_format") return c10::MemoryFormat::Contiguous;
  if (name == "channels_last") return c10::MemoryFormat::ChannelsLast;
  if (name == "channels_last_3d") return c10::MemoryFormat::ChannelsLast3d;
  if (name == "preserve_format") return c10::MemoryFormat::Preserve;
  throw std::runtime_error("unknown memory format '" + name + "'");
}

/// A 0-dim tensor that type promotion treats like a Python number (what the Python argument
/// parser makes of `torch.mul(x, 2)`).
at::Tensor wrapped_number(const c10::IValue& number) {
  at::Tensor t = at::scalar_to_tensor(number.toScalar());
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

c10::TypePtr strip_optional(const c10::TypePtr& type) {
  if (auto opt = type->cast<c10::OptionalType>()) return opt->getElementType();
  return type;
}

bool is_int_like(const c10::TypePtr& t) {
  return t->kind() == c10::TypeKind::IntType || t->kind() == c10::TypeKind::SymIntType;
}

c10::IValue literal_to_ivalue(const json& lit, const c10::TypePtr& declared, std::optional<int32_t> fixed_len);

c10::IValue list_literal(const json& items, const c10::ListTypePtr& list_type) {
  const c10::TypePtr elem = list_type->getElementType();
  if (is_int_like(elem)) {
    c10::List<int64_t> out;
    for (const json& i : items) out.push_back(literal_to_ivalue(i, elem, std::nullopt).toInt());
    return out;
  }
  if (elem->kind() == c10::TypeKind::FloatType || elem->kind() == c10::TypeKind::SymFloatType) {
    c10::List<double> out;
    for (const json& i : items) out.push_back(literal_to_ivalue(i, elem, std::nullopt).toDouble());
    return out;
  }
  if (elem->kind() == c10::TypeKind::BoolType) {
    c10::List<bool> out;
    for (const json& i : items) out.push_back(literal_to_ivalue(i, elem, std::nullopt).toBool());
    return out;
  }
  c10::impl::GenericList out(elem);
  for (const json& i : items) out.push_back(literal_to_ivalue(i, elem, std::nullopt));
  return out;
}

/// A tagged literal, converted as the operator's schema declares the argument.
c10::IValue literal_to_ivalue(const json& lit, const c10::TypePtr& declared, std::optional<int32_t> fixed_len) {
  if (lit.is_null()) return c10::IValue();
  const c10::TypePtr type = strip_optional(declared);
  const std::string tag = lit.begin().key();
  const json& v = lit.begin().value();
  if (tag == "list") {
    auto list_type = type->cast<c10::ListType>();
    if (!list_type) throw std::runtime_error("a list was given where the schema declares " + declared->str());
    return list_literal(v, list_type);
  }
  if (auto list_type = type->cast<c10::ListType>()) {
    // Python lets `int[2] stride=1` stand for [1, 1]; the FX graph keeps the short form.
    json items = json::array();
    for (int32_t i = 0; i < fixed_len.value_or(1); ++i) items.push_back(lit);
    return list_literal(items, list_type);
  }
  if (type->kind() == c10::TypeKind::TensorType && (tag == "int" || tag == "float" || tag == "bool")) {
    // Python passes a number where a Tensor is declared (`mul.Tensor(x, 2)`) as a 0-dim
    // "wrapped number" tensor, which type promotion treats like a Python scalar. Same here.
    return c10::IValue(wrapped_number(literal_to_ivalue(lit, c10::NumberType::get(), std::nullopt)));
  }
  if (tag == "int") {
    if (type->kind() == c10::TypeKind::FloatType) return c10::IValue(static_cast<double>(v.get<int64_t>()));
    if (type->kind() == c10::TypeKind::BoolType) return c10::IValue(v.get<int64_t>() != 0);
    return c10::IValue(v.get<int64_t>());
  }
  if (tag == "float") {
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      const double inf = std::numeric_limits<double>::infinity();
      return c10::IValue(s == "inf" ? inf : s == "-inf" ? -inf : std::numeric_limits<double>::quiet_NaN());
    }
    return c10::IValue(v.get<double>());
  }
  if (tag == "bool") return c10::IValue(v.get<bool>());
  if (tag == "str") return c10::IValue(v.get<std::string>());
  if (tag == "dtype") return c10::IValue(static_cast<int64_t>(dtype_from_name(v.get<std::string>())));
  if (tag == "device") return c10::IValue(c10::Device(v.get<std::string>()));
  if (tag == "layout") return c10::IValue(static_cast<int64_t>(layout_from_name(v.get<std::string>())));
  if (tag == "memory_format")
    return c10::IValue(static_cast<int64_t>(memory_format_from_name(v.get<std::string>())));
  throw std::runtime_error("cannot pass literal " + lit.dump() + " as " + declared->str());
}

// ---- bound operands ---------------------------------------------------------------------------

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
    out.constant = literal_to_ivalue(arg.literal, formal.type(), formal.N());
    return out;
  }
  // A list holding slots: Tensor[] or Tensor?[], or a size list mixing literals and slots
  // ([-1, s0 * 2] in dynamic-shape graphs). Lists of literals only are constants.
  const auto list_type = strip_optional(formal.type())->cast<c10::ListType>();
  if (!list_type) throw std::runtime_error("a list was given for '" + formal.name() + "', declared " + formal.type()->str());
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
      if (item.kind == PlanArg::Kind::List) throw std::runtime_error("nested list argument '" + formal.name() + "'");
      out.slots.push_back(item.kind == PlanArg::Kind::Slot ? item.slot : -1);
      out.members.push_back(item.kind == PlanArg::Kind::Slot ? c10::IValue()
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
      throw std::runtime_error("list argument '" + formal.name() + "' mixes tensors and other values");
    }
  }
  out.kind = optional_elems ? Operand::Kind::OptionalTensorList : Operand::Kind::TensorList;
  return out;
}

struct BoundStep {
  std::optional<ScalarOp> scalar_op;  ///< set for "sym::" steps, which never touch the dispatcher
  std::optional<c10::OperatorHandle> op;
  std::vector<Operand> operands;  ///< one per schema argument, in schema order
  std::vector<int32_t> outs;
  bool flatten_list_return = false;
  std::vector<int32_t> free_after;
  int32_t node = -1;
};

BoundStep bind_scalar_step(const Step& step) {
  BoundStep bound;
  bound.scalar_op = scalar_op_from_name(step.call.op);
  if (!bound.scalar_op) throw std::runtime_error("unknown scalar operation " + step.call.op);
  for (const PlanArg& arg : step.call.args) {
    Operand o;
    if (arg.kind == PlanArg::Kind::Slot) {
      o.kind = Operand::Kind::Slot;
      o.slot = arg.slot;
    } else if (arg.kind == PlanArg::Kind::Literal) {
      o.constant = literal_to_ivalue(arg.literal, c10::AnyType::get(), std::nullopt);
    } else {
      throw std::runtime_error(step.call.op + ": list arguments are not supported");
    }
    bound.operands.push_back(std::move(o));
  }
  bound.outs = step.call.outs;
  bound.free_after = step.free_after;
  bound.node = step.node;
  return bound;
}

BoundStep bind_step(const Step& step) {
  if (step.call.op.rfind("sym::", 0) == 0) return bind_scalar_step(step);
  const auto [name, overload] = [&] {
    const auto ns = step.call.op.find("::");
    const auto dot = step.call.op.find('.', ns == std::string::npos ? 0 : ns + 2);
    if (dot == std::string::npos) return std::make_pair(step.call.op, std::string());
    return std::make_pair(step.call.op.substr(0, dot), step.call.op.substr(dot + 1));
  }();
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle) throw std::runtime_error("operator " + step.call.op + " is not registered with the dispatcher");
  BoundStep bound;
  bound.op = *handle;
  bound.outs = step.call.outs;
  bound.free_after = step.free_after;
  bound.node = step.node;
  const c10::FunctionSchema& schema = handle->schema();
  const auto& formals = schema.arguments();
  if (step.call.args.size() > formals.size())
    throw std::runtime_error(step.call.op + ": " + std::to_string(step.call.args.size()) + " arguments given, schema takes " +
                             std::to_string(formals.size()));
  for (size_t i = 0; i < formals.size(); ++i) {
    const c10::Argument& formal = formals[i];
    if (i < step.call.args.size()) {
      bound.operands.push_back(bind_operand(step.call.args[i], formal));
      continue;
    }
    auto kw = std::find_if(step.call.kwargs.begin(), step.call.kwargs.end(),
                           [&](const auto& p) { return p.first == formal.name(); });
    if (kw != step.call.kwargs.end()) {
      bound.operands.push_back(bind_operand(kw->second, formal));
      continue;
    }
    if (!formal.default_value())
      throw std::runtime_error(step.call.op + ": no value for argument '" + formal.name() + "'");
    Operand def;
    def.constant = *formal.default_value();
    bound.operands.push_back(std::move(def));
  }
  for (const auto& kw : step.call.kwargs) {
    const bool known = std::any_of(formals.begin(), formals.end(), [&](const c10::Argument& f) { return f.name() == kw.first; });
    if (!known) throw std::runtime_error(step.call.op + ": unknown keyword argument '" + kw.first + "'");
  }
  const auto& returns = schema.returns();
  bound.flatten_list_return = returns.size() == 1 && returns[0].type()->kind() == c10::TypeKind::ListType;
  return bound;
}

void push_operand(const Operand& o, const std::vector<c10::IValue>& slots, torch::jit::Stack& stack) {
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
      auto member = [&](size_t i) -> const c10::IValue& { return o.slots[i] >= 0 ? slots[o.slots[i]] : o.members[i]; };
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

std::string error_text(const std::exception& e) {
  if (auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

}  // namespace

struct AtenExecutable::Bound {
  int32_t num_inputs = 0;
  int32_t num_slots = 0;
  std::vector<at::Tensor> constants;
  std::vector<int32_t> free_at_start;
  std::vector<BoundStep> steps;
  std::vector<Operand> outputs;
  std::vector<std::string> labels;
};

AtenExecutable::AtenExecutable(const Plan& plan, std::vector<at::Tensor> constants, std::vector<std::string> labels) {
  auto b = std::make_unique<Bound>();
  if (static_cast<int32_t>(constants.size()) != plan.num_constants)
    throw std::runtime_error("plan expects " + std::to_string(plan.num_constants) + " constants, got " +
                             std::to_string(constants.size()));
  b->num_inputs = plan.num_inputs;
  b->num_slots = plan.num_slots;
  b->constants = std::move(constants);
  b->free_at_start = plan.free_at_start;
  b->labels = std::move(labels);
  for (const Step& step : plan.steps) {
    try {
      b->steps.push_back(bind_step(step));
    } catch (const std::exception& e) {
      const std::string where = step.node >= 0 && step.node < static_cast<int32_t>(b->labels.size())
                                    ? b->labels[step.node] : step.call.op;
      throw std::runtime_error("inductor_cpp: cannot bind " + where + ": " + error_text(e));
    }
  }
  for (const PlanArg& out : plan.outputs) {
    Operand o;
    if (out.kind == PlanArg::Kind::Slot) {
      o.kind = Operand::Kind::Slot;
      o.slot = out.slot;
    } else if (out.kind == PlanArg::Kind::Literal) {
      o.constant = literal_to_ivalue(out.literal, c10::AnyType::get(), std::nullopt);
    } else {
      throw std::runtime_error("inductor_cpp: list-valued graph outputs are not supported");
    }
    b->outputs.push_back(std::move(o));
  }
  bound_ = std::move(b);
}

AtenExecutable::~AtenExecutable() = default;

std::vector<c10::IValue> AtenExecutable::run(std::vector<c10::IValue> inputs) const {
  const Bound& b = *bound_;
  if (static_cast<int32_t>(inputs.size()) != b.num_inputs)
    throw std::runtime_error("inductor_cpp: compiled graph takes " + std::to_string(b.num_inputs) + " inputs, got " +
                             std::to_string(inputs.size()));
  std::vector<c10::IValue> slots(b.num_slots);
  for (int32_t i = 0; i < b.num_inputs; ++i) slots[i] = std::move(inputs[i]);
  inputs.clear();
  for (size_t c = 0; c < b.constants.size(); ++c) slots[b.num_inputs + c] = b.constants[c];
  for (int32_t s : b.free_at_start) slots[s] = c10::IValue();

  torch::jit::Stack stack;
  for (const BoundStep& step : b.steps) {
    stack.clear();
    for (const Operand& o : step.operands) push_operand(o, slots, stack);
    try {
      if (step.scalar_op) {
        run_scalar_step(*step.scalar_op, stack);
      } else {
        step.op->callBoxed(stack);
      }
    } catch (...) {
      std::throw_with_nested(StepError("inductor_cpp: while running " + b.labels.at(step.node)));
    }
    if (step.flatten_list_return) {
      const c10::List<c10::IValue> list = stack.at(0).toList();
      for (size_t k = 0; k < step.outs.size() && k < list.size(); ++k) {
        if (step.outs[k] >= 0) slots[step.outs[k]] = list.get(k);
      }
    } else {
      for (size_t k = 0; k < step.outs.size() && k < stack.size(); ++k) {
        if (step.outs[k] >= 0) slots[step.outs[k]] = std::move(stack[k]);
      }
    }
    for (int32_t s : step.free_after) slots[s] = c10::IValue();
  }

  std::vector<c10::IValue> outputs;
  outputs.reserve(b.outputs.size());
  for (const Operand& o : b.outputs) outputs.push_back(o.kind == Operand::Kind::Slot ? slots[o.slot] : o.constant);
  return outputs;
}

}  // namespace inductor_cpp::runtime
