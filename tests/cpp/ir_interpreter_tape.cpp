/// \file
/// Index expressions and value DAGs compiled into flat postorder code, and their evaluation:
/// the interpreter runs bodies millions of times, so names are resolved to slots once.
#include <stdexcept>
#include <unordered_map>

#include "tests/cpp/ir_interpreter_internal.h"

namespace inductor_cpp::ir::interp {

int32_t SlotTable::id(std::map<std::string, int32_t>& table, const std::string& name) {
  auto it = table.find(name);
  if (it != table.end()) return it->second;
  const int32_t next = static_cast<int32_t>(table.size());
  table.emplace(name, next);
  return next;
}

std::vector<std::string> SlotTable::names(const std::map<std::string, int32_t>& table) {
  std::vector<std::string> out(table.size());
  for (const auto& [name, slot] : table) out[static_cast<size_t>(slot)] = name;
  return out;
}

namespace {

int32_t emit_expr(const Expr& e, SlotTable& slots, ExprCode& code,
                  std::unordered_map<const ExprNode*, int32_t>& done) {
  auto it = done.find(e.node());
  if (it != done.end()) return it->second;
  ExprCode::Op op{e.kind()};
  if (e.is_const()) {
    op.value = e.value();
  } else if (e.is_var()) {
    op.value = slots.var(e.name());
  } else {
    op.lhs = emit_expr(e.lhs(), slots, code, done);
    op.rhs = emit_expr(e.rhs(), slots, code, done);
  }
  code.ops.push_back(op);
  const int32_t at = static_cast<int32_t>(code.ops.size()) - 1;
  done.emplace(e.node(), at);
  return at;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) throw std::domain_error("interpreter: index expression divides by zero");
  const int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int64_t python_mod(int64_t a, int64_t b) {
  if (b == 0) throw std::domain_error("interpreter: index expression takes a remainder by zero");
  const int64_t r = a % b;
  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}

}  // namespace

ExprCode compile_expr(const Expr& e, SlotTable& slots) {
  ExprCode code;
  std::unordered_map<const ExprNode*, int32_t> done;
  emit_expr(e, slots, code, done);
  return code;
}

namespace {

/// Evaluates ops[k] and what it depends on. Index expressions are small trees, so recursion
/// (which may evaluate a shared subexpression twice) beats keeping a scratch array.
int64_t eval_op(const std::vector<ExprCode::Op>& ops, int32_t k, const int64_t* vars) {
  const ExprCode::Op& op = ops[static_cast<size_t>(k)];
  switch (op.kind) {
    case ExprKind::Const:
      return op.value;
    case ExprKind::Var:
      return vars[op.value];
    default:
      break;
  }
  const int64_t a = eval_op(ops, op.lhs, vars), b = eval_op(ops, op.rhs, vars);
  switch (op.kind) {
    case ExprKind::Add:
      return a + b;
    case ExprKind::Mul:
      return a * b;
    case ExprKind::FloorDiv:
      return floor_div(a, b);
    case ExprKind::Mod:
      return python_mod(a, b);
    case ExprKind::Min:
      return a < b ? a : b;
    case ExprKind::Max:
      return a > b ? a : b;
    case ExprKind::Lt:
      return a < b;
    case ExprKind::Le:
      return a <= b;
    case ExprKind::Eq:
      return a == b;
    case ExprKind::Ne:
      return a != b;
    default:
      return 0;  // Const and Var are handled above
  }
}

}  // namespace

int64_t eval_expr(const ExprCode& code, const int64_t* vars) {
  return eval_op(code.ops, static_cast<int32_t>(code.ops.size()) - 1, vars);
}

namespace {

class ValueCompiler {
 public:
  explicit ValueCompiler(SlotTable& slots) : slots_(slots) {}

  int32_t emit(const Value& v) {
    auto it = done_.find(v.node());
    if (it != done_.end()) return it->second;
    Instr in;
    in.kind = v->kind;
    in.op = v->op;
    in.dtype = v->dtype;
    for (const Value& o : v->operands) in.operands.push_back(emit(o));
    if (!v->operands.empty()) in.operand_type = v->operands[0]->dtype;
    switch (v->kind) {
      case ValueKind::Constant:
        in.constant = is_floating(v->dtype)
                          ? Scalar{v->float_value, 0}
                          : Scalar{static_cast<double>(v->int_value), v->int_value};
        break;
      case ValueKind::IndexValue:
        in.index.push_back(compile_expr(v->index.at(0), slots_));
        break;
      case ValueKind::Local:
        in.name = v->name;
        in.id = slots_.local(v->name);
        break;
      case ValueKind::Load:
        in.name = v->name;
        in.id = slots_.buffer(v->name);
        if (v->bounds.size() != v->operands.size()) {
          throw std::invalid_argument("interpreter: load of " + v->name + " has " +
                                      std::to_string(v->operands.size()) + " indirect values but " +
                                      std::to_string(v->bounds.size()) + " bounds");
        }
        for (size_t k = 0; k < v->operands.size(); ++k) {
          in.indirect_slots.push_back(slots_.var("%ind" + std::to_string(k)));
          in.bounds.push_back(compile_expr(v->bounds[k], slots_));
        }
        for (const Expr& e : v->index) in.index.push_back(compile_expr(e, slots_));
        in.mask = compile_expr(v->mask, slots_);
        break;
      default:
        break;
    }
    tape_.instrs.push_back(std::move(in));
    const int32_t at = static_cast<int32_t>(tape_.instrs.size()) - 1;
    done_.emplace(v.node(), at);
    return at;
  }

  Tape take() { return std::move(tape_); }

 private:
  SlotTable& slots_;
  Tape tape_;
  std::unordered_map<const ValueNode*, int32_t> done_;
};

Scalar run_load(const Instr& in, const std::vector<Scalar>& regs, std::vector<int64_t>& vars,
                ValueSource& source, std::vector<int64_t>& index) {
  for (size_t k = 0; k < in.indirect_slots.size(); ++k)
    vars[in.indirect_slots[k]] = regs[in.operands[k]].i;
  if (eval_expr(in.mask, vars.data()) == 0) return Scalar{};  // 0 of any type
  // Only loads that read check their indirect indices (as generated code does).
  for (size_t k = 0; k < in.indirect_slots.size(); ++k) {
    const int64_t v = vars[in.indirect_slots[k]];
    const int64_t bound = eval_expr(in.bounds[k], vars.data());
    if (v < 0 || v >= bound) {
      throw IndexOutOfBounds("indirect index " + std::to_string(v) + " of a load of " + in.name +
                             " outside [0, " + std::to_string(bound) + ")");
    }
  }
  index.resize(in.index.size());
  for (size_t k = 0; k < in.index.size(); ++k) index[k] = eval_expr(in.index[k], vars.data());
  return source.load(in.id, index, in.name);
}

}  // namespace

Tape compile_value(const Value& v, SlotTable& slots) {
  if (!v) throw std::invalid_argument("interpreter: null value");
  ValueCompiler c(slots);
  c.emit(v);
  return c.take();
}

Scalar run_tape(const Tape& tape, std::vector<int64_t>& vars, ValueSource& source,
                std::vector<Scalar>& regs, std::vector<int64_t>& index) {
  regs.resize(tape.instrs.size());
  for (size_t k = 0; k < tape.instrs.size(); ++k) {
    const Instr& in = tape.instrs[k];
    switch (in.kind) {
      case ValueKind::Constant:
        regs[k] = in.constant;
        break;
      case ValueKind::IndexValue: {
        const int64_t v = wrap_int(eval_expr(in.index[0], vars.data()), in.dtype);
        regs[k] = Scalar{static_cast<double>(v), v};
        break;
      }
      case ValueKind::Unary:
        regs[k] = apply_unary(static_cast<UnaryOp>(in.op), in.operand_type, regs[in.operands[0]]);
        break;
      case ValueKind::Binary:
        regs[k] = apply_binary(static_cast<BinaryOp>(in.op), in.operand_type, regs[in.operands[0]],
                               regs[in.operands[1]]);
        break;
      case ValueKind::Where:
        regs[k] = regs[in.operands[0]].i != 0 ? regs[in.operands[1]] : regs[in.operands[2]];
        break;
      case ValueKind::Cast:
        regs[k] = convert(regs[in.operands[0]], in.operand_type, in.dtype);
        break;
      case ValueKind::Local:
        regs[k] = source.local(in.id, in.name);
        break;
      case ValueKind::Load:
        regs[k] = run_load(in, regs, vars, source, index);
        break;
    }
  }
  return regs.back();
}

}  // namespace inductor_cpp::ir::interp
