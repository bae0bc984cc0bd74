/// \file
/// The scheduled half of the reference interpreter: runs a ScheduledProgram's steps, each
/// kernel's loop nest sequentially (parallel and vector loops as plain loops), addressing
/// buffers by element offset from their data pointers as generated code does.
#include <set>
#include <stdexcept>

#include "ir/kernel_ir.h"
#include "tests/cpp/ir_interpreter.h"
#include "tests/cpp/ir_interpreter_internal.h"

namespace inductor_cpp::ir::interp {

namespace {

/// A statement with names resolved to slots.
struct CompiledStmt {
  StmtKind kind = StmtKind::Store;
  int32_t var = -1;  ///< For: loop variable slot
  ExprCode extent;   ///< For
  std::vector<CompiledStmt> body;
  int32_t local = -1;  ///< Let / DefineAccumulator / Accumulate
  ReduceOp reduce_op = ReduceOp::sum;
  DType dtype = DType::Float32;
  Tape value;           ///< Let / Accumulate / Store
  ExprCode index;       ///< Store: offset; Accumulate: position
  int32_t buffer = -1;  ///< Store
  std::string name;     ///< for messages
};

class KernelRunner : public ValueSource {
 public:
  KernelRunner(const Kernel& kernel, Memory& memory) : kernel_(kernel), memory_(memory) {
    for (const KernelParam& p : kernel.params) params_[p.buffer] = &p;
    body_ = compile(kernel.body);
    bind_variables();
    bind_buffers();
    lets_.resize(slots_.local_count());
    accumulators_.resize(slots_.local_count());
    local_state_.assign(slots_.local_count(), LocalState::Undefined);
  }

  void run() { exec(body_); }

  Scalar load(int32_t buffer, const std::vector<int64_t>& index, const std::string& name) override {
    return storage_[static_cast<size_t>(buffer)]->get(position(buffer, index.at(0), name));
  }

  Scalar local(int32_t id, const std::string& name) override {
    switch (local_state_.at(static_cast<size_t>(id))) {
      case LocalState::Let:
        return lets_[static_cast<size_t>(id)];
      case LocalState::Accumulator:
        return accumulators_[static_cast<size_t>(id)].result();
      case LocalState::Undefined:
        break;
    }
    throw std::logic_error("interpreter: kernel " + kernel_.name + " reads local " + name +
                           " before defining it");
  }

 private:
  enum class LocalState : uint8_t { Undefined, Let, Accumulator };

  std::vector<CompiledStmt> compile(const std::vector<Stmt>& stmts) {
    std::vector<CompiledStmt> out;
    for (const Stmt& s : stmts) {
      CompiledStmt c;
      c.kind = s.kind;
      c.reduce_op = s.reduce_op;
      c.dtype = s.dtype;
      switch (s.kind) {
        case StmtKind::For:
          c.var = slots_.var(s.var);
          c.extent = compile_expr(s.extent, slots_);
          c.body = compile(s.body);
          c.name = s.var;
          break;
        case StmtKind::Let:
        case StmtKind::DefineAccumulator:
        case StmtKind::Accumulate:
          c.local = slots_.local(s.name);
          c.name = s.name;
          if (s.kind != StmtKind::DefineAccumulator) c.value = compile_value(s.value, slots_);
          c.index = compile_expr(s.index, slots_);
          break;
        case StmtKind::Store:
          if (!params_.count(s.buffer) || !params_.at(s.buffer)->written) {
            throw std::logic_error("interpreter: kernel " + kernel_.name + " stores " + s.buffer +
                                   ", not a written param");
          }
          c.buffer = slots_.buffer(s.buffer);
          c.name = s.buffer;
          c.value = compile_value(s.value, slots_);
          c.index = compile_expr(s.index, slots_);
          break;
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  /// Symbols get their values; loop variables and %ind placeholders are set while running.
  void bind_variables() {
    vars_.assign(slots_.var_count(), 0);
    const std::vector<std::string> names = slots_.var_names();
    std::set<std::string> loop_vars;
    collect_loop_vars(kernel_.body, loop_vars);
    for (size_t k = 0; k < names.size(); ++k) {
      if (loop_vars.count(names[k]) || names[k].rfind("%ind", 0) == 0) continue;
      auto s = memory_.symbols().find(names[k]);
      if (s == memory_.symbols().end()) {
        throw std::invalid_argument("interpreter: unbound variable " + names[k] + " in kernel " +
                                    kernel_.name);
      }
      vars_[k] = s->second;
    }
  }

  static void collect_loop_vars(const std::vector<Stmt>& stmts, std::set<std::string>& out) {
    for (const Stmt& s : stmts) {
      if (s.kind == StmtKind::For) out.insert(s.var);
      collect_loop_vars(s.body, out);
    }
  }

  /// Storage of every buffer the kernel touches: read params must hold data, written ones
  /// get storage (fresh, or reused per the memory plan).
  void bind_buffers() {
    buffer_names_ = slots_.buffer_names();
    for (const std::string& name : buffer_names_) {
      auto p = params_.find(name);
      if (p == params_.end())
        throw std::logic_error("interpreter: kernel " + kernel_.name + " loads " + name +
                               ", not a param");
      Elements* s = p->second->written ? &memory_.allocate(name) : memory_.find(name);
      if (!s)
        throw std::logic_error("interpreter: kernel " + kernel_.name + " reads " + name +
                               " before it is written");
      storage_.push_back(s);
      base_.push_back(memory_.layout(name).offset);
    }
  }

  size_t position(int32_t buffer, int64_t offset, const std::string& name) const {
    const int64_t p = base_[static_cast<size_t>(buffer)] + offset;
    if (p < 0 || static_cast<size_t>(p) >= storage_[static_cast<size_t>(buffer)]->size()) {
      throw std::out_of_range("interpreter: kernel " + kernel_.name + " accesses " + name +
                              " at offset " + std::to_string(offset) + ", outside its storage");
    }
    return static_cast<size_t>(p);
  }

  void exec(const std::vector<CompiledStmt>& stmts) {
    for (const CompiledStmt& s : stmts) {
      switch (s.kind) {
        case StmtKind::For: {
          const int64_t extent = eval_expr(s.extent, vars_.data());
          for (int64_t v = 0; v < extent; ++v) {
            vars_[static_cast<size_t>(s.var)] = v;
            exec(s.body);
          }
          break;
        }
        case StmtKind::Let:
          lets_[static_cast<size_t>(s.local)] = run_tape(s.value, vars_, *this, regs_, index_);
          local_state_[static_cast<size_t>(s.local)] = LocalState::Let;
          break;
        case StmtKind::DefineAccumulator:
          accumulators_[static_cast<size_t>(s.local)] = Accumulator(s.reduce_op, s.dtype);
          local_state_[static_cast<size_t>(s.local)] = LocalState::Accumulator;
          break;
        case StmtKind::Accumulate: {
          if (local_state_[static_cast<size_t>(s.local)] != LocalState::Accumulator) {
            throw std::logic_error("interpreter: kernel " + kernel_.name + " accumulates into " +
                                   s.name + ", not an accumulator");
          }
          const Scalar v = run_tape(s.value, vars_, *this, regs_, index_);
          accumulators_[static_cast<size_t>(s.local)].combine(v, eval_expr(s.index, vars_.data()));
          break;
        }
        case StmtKind::Store: {
          const Scalar v = run_tape(s.value, vars_, *this, regs_, index_);
          storage_[static_cast<size_t>(s.buffer)]->set(
              position(s.buffer, eval_expr(s.index, vars_.data()), s.name), v);
          break;
        }
      }
    }
  }

  const Kernel& kernel_;
  Memory& memory_;
  std::map<std::string, const KernelParam*> params_;
  SlotTable slots_;
  std::vector<CompiledStmt> body_;
  std::vector<std::string> buffer_names_;
  std::vector<Elements*> storage_;
  std::vector<int64_t> base_;
  std::vector<Scalar> lets_;
  std::vector<Accumulator> accumulators_;
  std::vector<LocalState> local_state_;
  std::vector<int64_t> vars_, index_;
  std::vector<Scalar> regs_;
};

}  // namespace

Outputs run_scheduled_program(const ScheduledProgram& program, const BufferStorage& inputs,
                              const InterpreterOptions& options) {
  Memory memory(program.buffers, inputs, options);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ScheduledStep& step = program.steps[s];
    if (step.kind == ScheduledStep::Kind::Kernel) {
      KernelRunner(step.kernel, memory).run();
    } else {
      memory.run_extern(step.call, [&](const std::string& name) { return memory.read(name); });
    }
    memory.end_step();
  }
  Outputs out;
  for (const std::string& name : program.outputs) {
    if (name.empty()) {
      out.emplace_back(std::nullopt);
      continue;
    }
    out.emplace_back(memory.read(name));
  }
  return out;
}

}  // namespace inductor_cpp::ir::interp
