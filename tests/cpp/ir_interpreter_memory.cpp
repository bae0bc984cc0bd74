/// \file
/// Storage, layouts and buffer memory of the reference interpreter (shared by the loop-level
/// and kernel-level halves), plus random inputs and result comparison for tests.
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

#include "tests/cpp/ir_interpreter_internal.h"

namespace inductor_cpp::ir::interp {

// ---- Elements and layouts ----

Elements::Elements(DType type, size_t count) : dtype(type) {
  if (is_floating(type)) {
    floats.assign(count, std::numeric_limits<double>::quiet_NaN());
  } else {
    ints.assign(count, kUnwrittenInt);
  }
}

size_t Elements::size() const {
  return is_floating(dtype) ? floats.size() : ints.size();
}

Scalar Elements::get(size_t k) const {
  if (is_floating(dtype)) return Scalar{floats.at(k), 0};
  const int64_t v = ints.at(k);
  return Scalar{static_cast<double>(v), v};
}

void Elements::set(size_t k, Scalar v) {
  if (is_floating(dtype)) {
    floats.at(k) = v.f;
  } else {
    ints.at(k) = v.i;
  }
}

int64_t Layout::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

int64_t Layout::position(const std::vector<int64_t>& index, const std::string& name) const {
  if (index.size() != sizes.size()) {
    throw std::out_of_range("interpreter: " + std::to_string(index.size()) + " indices for " +
                            name + " of rank " + std::to_string(sizes.size()));
  }
  int64_t p = offset;
  for (size_t k = 0; k < index.size(); ++k) {
    if (index[k] < 0 || index[k] >= sizes[k]) {
      throw std::out_of_range("interpreter: index " + std::to_string(index[k]) + " of dimension " +
                              std::to_string(k) + " of " + name + " outside [0, " +
                              std::to_string(sizes[k]) + ")");
    }
    p += index[k] * strides[k];
  }
  return p;
}

Layout layout_of(const Buffer& b, const std::map<std::string, int64_t>& symbols) {
  Layout l;
  for (const Expr& e : b.sizes) l.sizes.push_back(evaluate(e, symbols));
  for (const Expr& e : b.strides) l.strides.push_back(evaluate(e, symbols));
  l.offset = evaluate(b.offset, symbols);
  return l;
}

int64_t storage_size(const Buffer& b, const std::map<std::string, int64_t>& symbols) {
  const Layout l = layout_of(b, symbols);
  int64_t end = l.offset + 1;
  for (size_t k = 0; k < l.sizes.size(); ++k) {
    if (l.sizes[k] == 0) return l.offset;
    end += (l.sizes[k] - 1) * l.strides[k];
  }
  return end;
}

bool next_index(std::vector<int64_t>& index, const std::vector<int64_t>& sizes) {
  for (size_t k = index.size(); k-- > 0;) {
    if (++index[k] < sizes[k]) return true;
    index[k] = 0;
  }
  return false;
}

Tensor read_tensor(const Elements& storage, const Layout& layout, const std::string& name) {
  Tensor t{layout.sizes, Elements(storage.dtype, static_cast<size_t>(layout.numel()))};
  if (layout.numel() == 0) return t;
  std::vector<int64_t> index(layout.sizes.size(), 0);
  size_t k = 0;
  do {
    const int64_t p = layout.position(index, name);
    if (p < 0 || static_cast<size_t>(p) >= storage.size()) {
      throw std::out_of_range("interpreter: " + name + " reaches past its storage");
    }
    t.elements.set(k++, storage.get(static_cast<size_t>(p)));
  } while (next_index(index, layout.sizes));
  return t;
}

Elements storage_from(const Tensor& t, const Layout& layout, DType dtype, const std::string& name) {
  if (t.sizes != layout.sizes || t.elements.dtype != dtype) {
    throw std::invalid_argument("interpreter: value for " + name + " has the wrong sizes or dtype");
  }
  int64_t end = layout.offset + 1;
  for (size_t k = 0; k < layout.sizes.size(); ++k) end += (layout.sizes[k] - 1) * layout.strides[k];
  Elements out(dtype, static_cast<size_t>(std::max<int64_t>(end, layout.offset)));
  if (layout.numel() == 0) return out;
  std::vector<int64_t> index(layout.sizes.size(), 0);
  size_t k = 0;
  do {
    out.set(static_cast<size_t>(layout.position(index, name)), t.elements.get(k++));
  } while (next_index(index, layout.sizes));
  return out;
}

// ---- Memory ----

Memory::Memory(const std::vector<Buffer>& buffers, const BufferStorage& inputs,
               const InterpreterOptions& options)
    : options_(options) {
  for (const Buffer& b : buffers) {
    buffers_[b.name] = &b;
    layouts_[b.name] = layout_of(b, options.symbols);
  }
  for (const auto& [name, elements] : inputs) {
    const Buffer& b = buffer(name);
    if (elements.dtype != b.dtype)
      throw std::invalid_argument("interpreter: input " + name + " has the wrong dtype");
    if (static_cast<int64_t>(elements.size()) < storage_size(b, options.symbols)) {
      throw std::invalid_argument("interpreter: storage of input " + name +
                                  " is too small for its layout");
    }
    storage_[name] = std::make_shared<Elements>(elements);
  }
}

const Buffer& Memory::buffer(const std::string& name) const {
  auto it = buffers_.find(name);
  if (it == buffers_.end()) throw std::out_of_range("interpreter: no buffer " + name);
  return *it->second;
}

const Layout& Memory::layout(const std::string& name) const {
  auto it = layouts_.find(name);
  if (it == layouts_.end()) throw std::out_of_range("interpreter: no buffer " + name);
  return it->second;
}

Elements* Memory::find(const std::string& name) const {
  auto it = storage_.find(name);
  return it == storage_.end() ? nullptr : it->second.get();
}

Elements& Memory::allocate(const std::string& name) {
  const Buffer& b = buffer(name);
  if (b.origin == BufferOrigin::Input || b.origin == BufferOrigin::Constant) {
    throw std::logic_error("interpreter: a kernel writes " + name + ", a graph input or constant");
  }
  auto it = storage_.find(name);
  if (it != storage_.end()) return *it->second;
  const int64_t size = storage_size(b, options_.symbols);
  const MemoryPlan* plan = options_.memory_plan;
  auto reuse = plan ? plan->reuse.find(name) : std::map<std::string, std::string>::const_iterator();
  if (!plan || reuse == plan->reuse.end()) {
    return *(storage_[name] = std::make_shared<Elements>(b.dtype, static_cast<size_t>(size)));
  }
  const std::string& dead = reuse->second;
  std::shared_ptr<Elements> taken;
  auto last = plan->last_use.find(dead);
  if (storage_.count(dead) && last != plan->last_use.end() && last->second == step_) {
    taken = storage_[dead];  // in place: the buffer dies in this very step
  } else if (freed_.count(dead)) {
    taken = freed_[dead];
    freed_.erase(dead);
    *taken = Elements(taken->dtype, taken->size());  // its old contents mean nothing now
  } else {
    throw std::logic_error(
        "interpreter: memory plan gives " + name + " the storage of " + dead +
        ", which is neither dying in this step nor freed (or was taken already)");
  }
  if (taken->dtype != b.dtype || static_cast<int64_t>(taken->size()) < size) {
    throw std::logic_error("interpreter: memory plan gives " + name + " the storage of " + dead +
                           ", of another dtype or too small");
  }
  taken_.insert(dead);
  return *(storage_[name] = taken);
}

void Memory::end_step() {
  const size_t step = step_++;
  if (!options_.memory_plan) return;
  for (const auto& [name, last] : options_.memory_plan->last_use) {
    if (last != step) continue;
    auto it = storage_.find(name);
    if (it == storage_.end()) continue;
    if (!taken_.count(name)) freed_[name] = it->second;
    storage_.erase(it);
  }
}

void Memory::run_extern(const ExternCall& call,
                        const std::function<Tensor(const std::string&)>& value_of) {
  std::vector<Tensor> inputs;
  for (const std::string& in : call.inputs) inputs.push_back(value_of(in));
  std::optional<std::vector<Tensor>> results;
  if (options_.run_extern) results = options_.run_extern(call, inputs);
  if (results) {
    if (results->size() != call.outputs.size()) {
      throw std::invalid_argument(
          "interpreter: extern handler returned the wrong number of outputs for node " +
          std::to_string(call.graph_node));
    }
    for (size_t k = 0; k < call.outputs.size(); ++k) {
      const std::string& out = call.outputs[k];
      if (out.empty()) continue;
      storage_[out] = std::make_shared<Elements>(
          storage_from((*results)[k], layout(out), buffer(out).dtype, out));
    }
    return;
  }
  if (call.view && call.inputs.size() == 1 && call.outputs.size() == 1 &&
      storage_.count(call.inputs[0])) {
    storage_[call.outputs[0]] = storage_[call.inputs[0]];  // an alias, as the ATen view op makes
    return;
  }
  throw std::invalid_argument("interpreter: no handler for extern node " +
                              std::to_string(call.graph_node));
}

Tensor Memory::read(const std::string& name) const {
  const Elements* s = find(name);
  if (!s) throw std::logic_error("interpreter: " + name + " is read but was never written");
  return read_tensor(*s, layout(name), name);
}

// ---- Random inputs and comparison ----

BufferStorage random_inputs(const std::vector<Buffer>& buffers, uint64_t seed,
                            const RandomFill& fill, const std::map<std::string, int64_t>& symbols) {
  std::mt19937_64 rng(seed);
  BufferStorage out;
  for (const Buffer& b : buffers) {
    if (b.origin != BufferOrigin::Input && b.origin != BufferOrigin::Constant) continue;
    Elements e(b.dtype, static_cast<size_t>(storage_size(b, symbols)));
    if (is_floating(b.dtype)) {
      std::uniform_real_distribution<double> dist(fill.lo, fill.hi);
      for (double& x : e.floats) x = dist(rng);
    } else {
      auto range = fill.int_ranges.count(b.name) ? fill.int_ranges.at(b.name)
                                                 : std::make_pair(fill.int_lo, fill.int_hi);
      if (b.dtype == DType::Bool) range = {0, 1};
      std::uniform_int_distribution<int64_t> dist(range.first, range.second);
      for (int64_t& x : e.ints) x = wrap_int(dist(rng), b.dtype);
    }
    out.emplace(b.name, std::move(e));
  }
  return out;
}

std::string compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.elements.dtype != want.elements.dtype) {
    return std::string("dtype ") + dtype_name(got.elements.dtype) + ", expected " +
           dtype_name(want.elements.dtype);
  }
  if (got.sizes != want.sizes) return "sizes differ";
  for (size_t k = 0; k < want.elements.size(); ++k) {
    const Scalar a = got.elements.get(k), b = want.elements.get(k);
    std::ostringstream msg;
    msg.precision(17);
    if (is_floating(want.elements.dtype)) {
      if (std::isnan(a.f) && std::isnan(b.f)) continue;
      if (a.f == b.f ||
          std::fabs(a.f - b.f) <= rtol * std::fmax(std::fabs(a.f), std::fabs(b.f)) + atol)
        continue;
      msg << "element " << k << ": " << a.f << ", expected " << b.f;
      return msg.str();
    }
    if (a.i != b.i) {
      msg << "element " << k << ": " << a.i << ", expected " << b.i;
      return msg.str();
    }
  }
  return "";
}

std::string compare(const Outputs& got, const Outputs& want, double rtol, double atol) {
  if (got.size() != want.size()) return "number of outputs differs";
  for (size_t k = 0; k < want.size(); ++k) {
    if (got[k].has_value() != want[k].has_value())
      return "output " + std::to_string(k) + ": None vs a tensor";
    if (!want[k]) continue;
    const std::string m = compare(*got[k], *want[k], rtol, atol);
    if (!m.empty()) return "output " + std::to_string(k) + ": " + m;
  }
  return "";
}

}  // namespace inductor_cpp::ir::interp
