/// \file
/// Internals of the reference interpreter (ir_interpreter.h), shared by its loop-level and
/// kernel-level halves: scalar math with torch semantics, reduction accumulators, and value
/// DAGs compiled into flat tapes (so a body runs per point without maps or allocation).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/index_expr.h"
#include "ir/loop_ir.h"
#include "ir/value.h"
#include "tests/cpp/ir_interpreter.h"

namespace inductor_cpp::ir::interp {

// ---- Scalar math (ir_interpreter_math.cpp) ----

/// `x` of type `from` converted to `to` (truncation toward zero for float -> int, wrapping for
/// narrow ints, != 0 for bool).
Scalar convert(Scalar x, DType from, DType to);
/// An int64 wrapped to the width of `type` (bool: != 0).
int64_t wrap_int(int64_t v, DType type);
/// `op` on an operand of type `type`; the result has the node's type (bool for predicates).
Scalar apply_unary(UnaryOp op, DType type, Scalar x);
/// `op` on operands of type `type`.
Scalar apply_binary(BinaryOp op, DType type, Scalar a, Scalar b);

/// A reduction in progress: combine() in any order gives the same result (up to rounding),
/// positions deciding ties for argmax/argmin.
class Accumulator {
 public:
  Accumulator() = default;
  Accumulator(ReduceOp op, DType body_type) : op_(op), type_(body_type) {}
  void combine(Scalar v, int64_t position);
  Scalar result() const;  ///< of type reduce_result_type(op, body_type)

 private:
  ReduceOp op_ = ReduceOp::sum;
  DType type_ = DType::Float32;
  bool empty_ = true;
  Scalar value_;                 ///< sum/prod/max/min/any/all; argmax/argmin: the best value
  int64_t position_ = 0;         ///< argmax/argmin
  double count_ = 0, mean_ = 0;  ///< welford_m2 (value_.f holds m2)
};

// ---- Compiled index expressions and values (ir_interpreter_tape.cpp) ----

/// Names -> dense ids, for variables (loop vars, symbols, %ind placeholders), buffers and
/// locals of one compiled unit (a compute, a kernel).
class SlotTable {
 public:
  int32_t var(const std::string& name) { return id(vars_, name); }
  int32_t buffer(const std::string& name) { return id(buffers_, name); }
  int32_t local(const std::string& name) { return id(locals_, name); }
  size_t var_count() const { return vars_.size(); }
  size_t local_count() const { return locals_.size(); }
  /// Names by id.
  std::vector<std::string> buffer_names() const { return names(buffers_); }
  std::vector<std::string> var_names() const { return names(vars_); }

 private:
  static int32_t id(std::map<std::string, int32_t>& table, const std::string& name);
  static std::vector<std::string> names(const std::map<std::string, int32_t>& table);
  std::map<std::string, int32_t> vars_, buffers_, locals_;
};

/// An index expression in postorder; operands are earlier positions, Var's value its slot.
struct ExprCode {
  struct Op {
    ExprKind kind;
    int32_t lhs = -1, rhs = -1;
    int64_t value = 0;
  };
  std::vector<Op> ops;
  bool is_const() const { return ops.size() == 1 && ops[0].kind == ExprKind::Const; }
};
ExprCode compile_expr(const Expr& e, SlotTable& slots);
/// Python semantics; throws std::domain_error on division by zero.
int64_t eval_expr(const ExprCode& code, const int64_t* vars);

/// One value node; operands are earlier tape positions.
struct Instr {
  ValueKind kind = ValueKind::Constant;
  uint8_t op = 0;
  DType dtype = DType::Float32;
  DType operand_type = DType::Float32;
  std::vector<int32_t> operands;
  Scalar constant;
  int32_t id = -1;   ///< Load: buffer id; Local: local id
  std::string name;  ///< Load: buffer; Local: local (for messages)
  // Load / IndexValue
  std::vector<ExprCode> index;
  ExprCode mask;
  std::vector<ExprCode> bounds;
  std::vector<int32_t> indirect_slots;  ///< var slots of %ind0, %ind1, ...
};

/// A value DAG, each node once, in an order where operands come first; the last is the root.
struct Tape {
  std::vector<Instr> instrs;
};
Tape compile_value(const Value& v, SlotTable& slots);

/// Where compiled loads and locals get their values.
class ValueSource {
 public:
  virtual ~ValueSource() = default;
  /// Buffer `buffer` at `index` (one entry per dimension at loop level, a flat offset in
  /// kernels); `name` for messages.
  virtual Scalar load(int32_t buffer, const std::vector<int64_t>& index,
                      const std::string& name) = 0;
  virtual Scalar local(int32_t id, const std::string& name) = 0;
};

/// Evaluates the tape with `vars` bound (indirect loads bind their %ind slots in it).
/// `regs` and `index` are scratch space reused across calls.
Scalar run_tape(const Tape& tape, std::vector<int64_t>& vars, ValueSource& source,
                std::vector<Scalar>& regs, std::vector<int64_t>& index);

// ---- Layout and memory helpers (ir_interpreter.cpp) ----

/// Sizes, strides and offset of a buffer, evaluated.
struct Layout {
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  int64_t numel() const;
  /// Storage position of a logical index; throws std::out_of_range outside the sizes.
  int64_t position(const std::vector<int64_t>& index, const std::string& name) const;
};
Layout layout_of(const Buffer& b, const std::map<std::string, int64_t>& symbols);

/// Steps `index` to the next row-major point of `sizes`; false after the last.
bool next_index(std::vector<int64_t>& index, const std::vector<int64_t>& sizes);

/// The logical values of a buffer held in `storage` with `layout`.
Tensor read_tensor(const Elements& storage, const Layout& layout, const std::string& name);
/// Fresh storage for `layout` (poisoned), with `t`'s values written at their positions.
Elements storage_from(const Tensor& t, const Layout& layout, DType dtype, const std::string& name);

/// The buffers of a running program: storage by name (views may share one), allocation as
/// the runtime does it (with a memory plan: reuse and frees), extern steps, outputs.
class Memory {
 public:
  Memory(const std::vector<Buffer>& buffers, const BufferStorage& inputs,
         const InterpreterOptions& options);

  const Buffer& buffer(const std::string& name) const;
  const Layout& layout(const std::string& name) const;
  /// The storage holding `name`, or null when nothing wrote it (yet).
  Elements* find(const std::string& name) const;
  /// Storage for a buffer about to be written (fresh and poisoned, or reused per the memory
  /// plan); kept if it already has one. Throws for inputs and constants.
  Elements& allocate(const std::string& name);
  /// Scheduled programs: the current step is done; with a memory plan, the buffers whose last
  /// use it was are freed.
  void end_step();

  /// Runs an extern step; `value_of` gives an input's logical values.
  void run_extern(const ExternCall& call,
                  const std::function<Tensor(const std::string&)>& value_of);
  /// The logical values of a buffer that has storage.
  Tensor read(const std::string& name) const;

  const std::map<std::string, int64_t>& symbols() const { return options_.symbols; }

 private:
  const InterpreterOptions& options_;
  std::map<std::string, const Buffer*> buffers_;
  std::map<std::string, Layout> layouts_;
  std::map<std::string, std::shared_ptr<Elements>> storage_;
  std::map<std::string, std::shared_ptr<Elements>> freed_;  ///< by the buffer that held it
  std::set<std::string> taken_;  ///< buffers whose storage the memory plan handed over
  size_t step_ = 0;
};

}  // namespace inductor_cpp::ir::interp
