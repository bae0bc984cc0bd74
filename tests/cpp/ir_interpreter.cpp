/// \file
/// The loop-level half of the reference interpreter: runs a LoopProgram step by step,
/// materializing each kernel group's computes point by point and evaluating computes that no
/// step stores (views, producers not inlined yet) where their readers load them.
#include "tests/cpp/ir_interpreter.h"

#include <memory>
#include <set>
#include <stdexcept>

#include "tests/cpp/ir_interpreter_internal.h"

namespace inductor_cpp::ir::interp {

namespace {

class LoopInterpreter;

/// One compute, compiled, evaluated one point at a time.
class ComputeEvaluator : public ValueSource {
 public:
  ComputeEvaluator(const Compute& c, LoopInterpreter& interpreter);
  /// The compute's value at `point` (one index per range).
  Scalar at(const std::vector<int64_t>& point);
  const std::vector<int64_t>& ranges() const { return ranges_; }

  Scalar load(int32_t buffer, const std::vector<int64_t>& index, const std::string& name) override;
  Scalar local(int32_t, const std::string& name) override {
    throw std::invalid_argument("interpreter: local " + name + " in a loop-level body");
  }

 private:
  /// Where one buffer the body loads comes from, as of the interpreter's current generation.
  struct Source {
    const Elements* storage = nullptr;
    const Layout* layout = nullptr;
    ComputeEvaluator* compute = nullptr;  ///< evaluated where it is read
  };
  void resolve();

  const Compute& compute_;
  LoopInterpreter& interpreter_;
  Tape tape_;
  std::vector<std::string> buffer_names_;
  std::vector<int32_t> range_slots_, reduce_slots_;
  std::vector<int64_t> ranges_, reduce_ranges_;
  std::vector<Source> sources_;
  uint64_t resolved_generation_ = UINT64_MAX;
  bool active_ = false;
  // Scratch for evaluation.
  std::vector<int64_t> vars_, index_, reduce_point_;
  std::vector<Scalar> regs_;
};

class LoopInterpreter {
 public:
  LoopInterpreter(const LoopProgram& p, const BufferStorage& inputs,
                  const InterpreterOptions& options)
      : program_(p), memory_(p.buffers, inputs, options) {
    for (const Step& s : p.steps) {
      if (s.kind == Step::Kind::Kernel)
        stored_.insert(s.kernel.computes.begin(), s.kernel.computes.end());
    }
  }

  Outputs run() {
    for (const Step& s : program_.steps) {
      if (s.kind == Step::Kind::Kernel) {
        for (const std::string& c : s.kernel.computes) materialize(c);
        continue;
      }
      memory_.run_extern(s.call, [&](const std::string& name) { return value_of(name); });
      ++generation_;
    }
    Outputs out;
    for (const std::string& name : program_.outputs) {
      if (name.empty()) {
        out.emplace_back(std::nullopt);
        continue;
      }
      out.emplace_back(value_of(name));
    }
    return out;
  }

  const LoopProgram& program() const { return program_; }
  const Memory& memory() const { return memory_; }
  uint64_t generation() const { return generation_; }

  /// The evaluator of a compute no step stores (null when it is stored: then reading it
  /// before its step has run is an error).
  ComputeEvaluator* on_demand(const std::string& name) {
    if (stored_.count(name)) return nullptr;
    auto c = program_.computes.find(name);
    if (c == program_.computes.end()) return nullptr;
    return &evaluator(name);
  }

 private:
  ComputeEvaluator& evaluator(const std::string& name) {
    auto it = evaluators_.find(name);
    if (it != evaluators_.end()) return *it->second;
    auto e = std::make_unique<ComputeEvaluator>(program_.computes.at(name), *this);
    return *(evaluators_[name] = std::move(e));
  }

  void materialize(const std::string& name) {
    ComputeEvaluator& e = evaluator(name);
    Elements& out = memory_.allocate(name);
    const Layout& layout = memory_.layout(name);
    if (layout.sizes != e.ranges())
      throw std::logic_error("interpreter: " + name + " has ranges unlike its sizes");
    ++generation_;
    std::vector<int64_t> point(layout.sizes.size(), 0);
    if (layout.numel() > 0) {
      do {
        out.set(static_cast<size_t>(layout.position(point, name)), e.at(point));
      } while (next_index(point, layout.sizes));
    }
    ++generation_;
  }

  /// A buffer's logical values: from memory, or evaluated where no step stores it.
  Tensor value_of(const std::string& name) {
    if (memory_.find(name)) return memory_.read(name);
    ComputeEvaluator* e = on_demand(name);
    if (!e) throw std::logic_error("interpreter: " + name + " is read but was never written");
    const Buffer& b = memory_.buffer(name);
    const Layout& layout = memory_.layout(name);
    Tensor t{layout.sizes, Elements(b.dtype, static_cast<size_t>(layout.numel()))};
    std::vector<int64_t> point(layout.sizes.size(), 0);
    size_t k = 0;
    if (layout.numel() == 0) return t;
    do {
      t.elements.set(k++, e->at(point));
    } while (next_index(point, layout.sizes));
    return t;
  }

  const LoopProgram& program_;
  Memory memory_;
  std::set<std::string> stored_;
  std::map<std::string, std::unique_ptr<ComputeEvaluator>> evaluators_;
  uint64_t generation_ = 0;
};

ComputeEvaluator::ComputeEvaluator(const Compute& c, LoopInterpreter& interpreter)
    : compute_(c), interpreter_(interpreter) {
  SlotTable slots;
  for (size_t k = 0; k < c.ranges.size(); ++k) range_slots_.push_back(slots.var(range_var(k)));
  for (size_t k = 0; k < c.reduce_ranges.size(); ++k)
    reduce_slots_.push_back(slots.var(reduce_var(k)));
  tape_ = compile_value(c.body, slots);
  buffer_names_ = slots.buffer_names();
  vars_.assign(slots.var_count(), 0);
  const auto& symbols = interpreter.memory().symbols();
  const std::vector<std::string> var_names = slots.var_names();
  for (size_t k = range_slots_.size() + reduce_slots_.size(); k < var_names.size(); ++k) {
    const std::string& v = var_names[k];
    if (v.rfind("%ind", 0) == 0) continue;
    auto s = symbols.find(v);
    if (s == symbols.end())
      throw std::invalid_argument("interpreter: unbound variable " + v + " in " + c.name);
    vars_[k] = s->second;
  }
  for (const Expr& e : c.ranges) ranges_.push_back(evaluate(e, symbols));
  for (const Expr& e : c.reduce_ranges) reduce_ranges_.push_back(evaluate(e, symbols));
}

void ComputeEvaluator::resolve() {
  sources_.assign(buffer_names_.size(), Source{});
  for (size_t k = 0; k < buffer_names_.size(); ++k) {
    const std::string& name = buffer_names_[k];
    if (const Elements* s = interpreter_.memory().find(name)) {
      sources_[k].storage = s;
      sources_[k].layout = &interpreter_.memory().layout(name);
      continue;
    }
    sources_[k].compute = interpreter_.on_demand(name);
  }
  resolved_generation_ = interpreter_.generation();
}

Scalar ComputeEvaluator::load(int32_t buffer, const std::vector<int64_t>& index,
                              const std::string& name) {
  const Source& s = sources_[static_cast<size_t>(buffer)];
  if (s.storage) {
    const int64_t p = s.layout->position(index, name);
    if (p < 0 || static_cast<size_t>(p) >= s.storage->size()) {
      throw std::out_of_range("interpreter: a load of " + name + " reaches past its storage");
    }
    return s.storage->get(static_cast<size_t>(p));
  }
  if (!s.compute)
    throw std::logic_error("interpreter: " + compute_.name + " reads " + name +
                           " before it is written");
  if (index.size() != s.compute->ranges().size()) {
    throw std::out_of_range("interpreter: " + compute_.name + " loads " + name +
                            " with the wrong number of indices");
  }
  for (size_t k = 0; k < index.size(); ++k) {
    if (index[k] < 0 || index[k] >= s.compute->ranges()[k]) {
      throw std::out_of_range("interpreter: " + compute_.name + " loads " + name + " at index " +
                              std::to_string(index[k]) + " of dimension " + std::to_string(k) +
                              ", outside [0, " + std::to_string(s.compute->ranges()[k]) + ")");
    }
  }
  return s.compute->at(index);
}

Scalar ComputeEvaluator::at(const std::vector<int64_t>& point) {
  if (active_) throw std::logic_error("interpreter: " + compute_.name + " depends on itself");
  if (resolved_generation_ != interpreter_.generation()) resolve();
  active_ = true;
  struct Deactivate {
    bool& flag;
    ~Deactivate() { flag = false; }
  } deactivate{active_};
  for (size_t k = 0; k < point.size(); ++k) vars_[range_slots_[k]] = point[k];
  if (!compute_.is_reduction()) return run_tape(tape_, vars_, *this, regs_, index_);
  Accumulator acc(compute_.reduce_op, compute_.body->dtype);
  reduce_point_.assign(reduce_ranges_.size(), 0);
  int64_t total = 1;
  for (int64_t r : reduce_ranges_) total *= r;
  for (int64_t position = 0; position < total; ++position) {
    for (size_t k = 0; k < reduce_point_.size(); ++k) vars_[reduce_slots_[k]] = reduce_point_[k];
    acc.combine(run_tape(tape_, vars_, *this, regs_, index_), position);
    next_index(reduce_point_, reduce_ranges_);
  }
  return acc.result();
}

/// `buffer` as a contiguous graph input or computed buffer of a one-compute program.
Buffer contiguous_copy(const Buffer& buffer, BufferOrigin origin, int64_t index) {
  Buffer b = buffer;
  b.strides = contiguous_strides(b.sizes);
  b.offset = Expr(0);
  b.origin = origin;
  b.index = index;
  return b;
}

}  // namespace

Outputs run_loop_program(const LoopProgram& program, const BufferStorage& inputs,
                         const InterpreterOptions& options) {
  return LoopInterpreter(program, inputs, options).run();
}

ExternHandler view_externs_of(const LoopProgram& defining, ExternHandler other) {
  return [defining, other](
             const ExternCall& call,
             const std::vector<Tensor>& inputs) -> std::optional<std::vector<Tensor>> {
    auto view = call.outputs.size() == 1 ? defining.computes.find(call.outputs[0])
                                         : defining.computes.end();
    if (!call.view || view == defining.computes.end() || !view->second.view) {
      return other ? other(call, inputs) : std::nullopt;
    }
    // The view's body as a program of its own over contiguous copies of its sources.
    LoopProgram p;
    BufferStorage storage;
    for (size_t k = 0; k < call.inputs.size(); ++k) {
      p.buffers.push_back(contiguous_copy(defining.buffer(call.inputs[k]), BufferOrigin::Input,
                                          static_cast<int64_t>(k)));
      storage[call.inputs[k]] = inputs[k].elements;
    }
    p.buffers.push_back(contiguous_copy(defining.buffer(view->first), BufferOrigin::Computed, -1));
    Compute c = view->second;
    c.view = false;
    p.computes.emplace(c.name, c);
    Step s;
    s.kernel.computes = {c.name};
    p.steps.push_back(s);
    p.outputs = {c.name};
    p.symbol_ranges = defining.symbol_ranges;
    return std::vector<Tensor>{*run_loop_program(p, storage).at(0)};
  };
}

}  // namespace inductor_cpp::ir::interp
