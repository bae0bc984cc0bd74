/// \file
/// Random loop programs (see random_program.h), written as IR text the way lowering writes
/// it: views as index rewrites, cat/pad as masked loads, index_select as indirect loads.
#include "tests/cpp/random_program.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

namespace inductor_cpp::ir::testing {

namespace {

struct Operand {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;  ///< "float32", "int32", "int64", "bool"
};

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t k = 0; k < parts.size(); ++k) out += (k ? ", " : "") + parts[k];
  return out;
}

std::string dims(const std::vector<int64_t>& v) {
  std::vector<std::string> parts;
  for (int64_t x : v) parts.push_back(std::to_string(x));
  return "[" + join(parts) + "]";
}

std::string i_var(size_t k) {
  return "i" + std::to_string(k);
}

std::vector<std::string> i_vars(size_t rank) {
  std::vector<std::string> v;
  for (size_t k = 0; k < rank; ++k) v.push_back(i_var(k));
  return v;
}

int64_t numel(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
}

/// "[sizes]{strides}" as buffer lines write a layout.
std::string layout(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  const std::string s = dims(strides);
  return dims(shape) + "{" + s.substr(1, s.size() - 2) + "}";
}

std::vector<int64_t> contiguous(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) s[k - 1] = s[k] * shape[k];
  return s;
}

constexpr int64_t kMaxElements = 4096;

class Builder {
 public:
  explicit Builder(uint64_t seed) : rng_(seed) {}

  RandomProgram build() {
    RandomProgram out;
    add_input(random_shape(), chance(0.15) ? "int32" : "float32");
    if (chance(0.5)) add_input(broadcast_variant(tensors_.back().shape), "float32");
    const int ops = static_cast<int>(pick(2, 8));
    for (int k = 0; k < ops; ++k) random_op();
    std::vector<std::string> outputs = {tensors_.back().name};
    for (int k = 0; k < 3; ++k) {
      if (!chance(0.5)) continue;
      const std::string& name =
          tensors_[static_cast<size_t>(pick(0, static_cast<int64_t>(tensors_.size()) - 1))].name;
      if (std::find(outputs.begin(), outputs.end(), name) == outputs.end()) outputs.push_back(name);
    }
    out.text = "program {\n";
    for (const std::string& l : buffers_) out.text += "  " + l + "\n";
    for (const std::string& l : computes_) out.text += "  " + l + "\n";
    for (const std::string& l : steps_) out.text += "  " + l + "\n";
    out.text += "  output " + join(outputs) + "\n}\n";
    out.check.fill = fill_;
    out.check.seeds = {1};
    out.check.rtol = 1e-7;  // split reductions reassociate sums; random programs may amplify
    out.check.atol = 1e-9;
    out.check.options.split = SplitOptions{64, 16, 4};
    out.check.options.schedule.vector_width = 4;
    out.check.options.schedule.parallel_min_work = 64;
    out.check.options.schedule.block = 8;
    const int64_t inline_limits[] = {0, 6, 1000};
    out.check.options.inlining.max_shared_inline_nodes = one_of(inline_limits);
    const std::set<int32_t> clones = clones_;
    out.check.externs = [clones](const ExternCall& call, const std::vector<interp::Tensor>& inputs)
        -> std::optional<std::vector<interp::Tensor>> {
      if (!clones.count(call.graph_node)) return std::nullopt;
      return inputs;
    };
    return out;
  }

 private:
  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T, size_t N>
  T one_of(const T (&options)[N]) {
    return options[pick(0, static_cast<int64_t>(N) - 1)];
  }
  const Operand& any_tensor() {
    return tensors_[static_cast<size_t>(pick(0, static_cast<int64_t>(tensors_.size()) - 1))];
  }

  std::vector<int64_t> random_shape() {
    static const int64_t sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 31, 33};
    if (chance(0.1))
      return chance(0.5) ? std::vector<int64_t>{pick(1000, 3000)}
                         : std::vector<int64_t>{pick(2, 5), pick(300, 700)};
    for (;;) {
      std::vector<int64_t> shape(static_cast<size_t>(pick(1, 3)));
      for (int64_t& d : shape) d = one_of(sizes);
      if (numel(shape) <= 600) return shape;
    }
  }

  /// `shape` with some dims set to 1 and maybe leading dims dropped: broadcasts against it.
  std::vector<int64_t> broadcast_variant(std::vector<int64_t> shape) {
    for (int64_t& d : shape) {
      if (chance(0.4)) d = 1;
    }
    while (shape.size() > 1 && chance(0.3)) shape.erase(shape.begin());
    return shape;
  }

  void add_input(const std::vector<int64_t>& shape, const std::string& dtype) {
    // A random dimension order, sometimes with gaps between rows and a storage offset.
    std::vector<size_t> order(shape.size());
    std::iota(order.begin(), order.end(), 0);
    if (chance(0.3)) std::shuffle(order.begin(), order.end(), rng_);
    std::vector<int64_t> strides(shape.size(), 1);
    int64_t extent = 1;
    for (size_t k = order.size(); k-- > 0;) {
      strides[order[k]] = extent;
      extent *= shape[order[k]] + (chance(0.15) ? 1 : 0);
    }
    const int64_t offset = chance(0.2) ? pick(1, 3) : 0;
    const std::string name = "%in" + std::to_string(inputs_);
    buffers_.push_back("buffer " + name + ": " + dtype + layout(shape, strides) +
                       (offset ? "+" + std::to_string(offset) : "") + " input " +
                       std::to_string(inputs_) + " cpu");
    ++inputs_;
    if (dtype != "float32") fill_.int_ranges[name] = {-5, 5};
    tensors_.push_back({name, shape, dtype});
  }

  /// Defines a computed buffer; `spec` is what follows the compute's name and node.
  const Operand& add_compute(const std::vector<int64_t>& shape, const std::string& dtype,
                             const std::string& spec, bool view = false) {
    const std::string id = std::to_string(node_++);
    const std::string name = "%" + id;
    buffers_.push_back("buffer " + name + ": " + dtype + layout(shape, contiguous(shape)) +
                       " computed cpu");
    computes_.push_back("compute " + name + " (node " + id + ") " + (view ? "view " : "") + spec);
    if (!view) {
      steps_.push_back("kernel " + name);
      specs_.push_back({shape, dtype, spec});
    }
    tensors_.push_back({name, shape, dtype});
    return tensors_.back();
  }

  /// A float32 value of `t` at `index` (integers and bools are cast).
  static std::string value_at(const Operand& t, const std::vector<std::string>& index,
                              const std::string& extra = "") {
    const std::string l = "load(" + t.name + ", [" + join(index) + "]" + extra + ")";
    return t.dtype == "float32" ? l : "cast(" + l + ", float32)";
  }

  /// `t` read at the points of `out` (right-aligned broadcasting: size-1 dims read index 0).
  static std::string broadcast_value(const Operand& t, const std::vector<int64_t>& out) {
    std::vector<std::string> index;
    const size_t lead = out.size() - t.shape.size();
    for (size_t k = 0; k < t.shape.size(); ++k)
      index.push_back(t.shape[k] == 1 ? "0" : i_var(k + lead));
    return value_at(t, index);
  }

  void random_op() {
    switch (pick(0, 11)) {
      case 0:
      case 1:
        return unary(any_tensor());
      case 2:
      case 3:
        return binary(any_tensor());
      case 4:
      case 5:
        return reduction(any_tensor());
      case 6:
      case 7:
        return view(any_tensor());
      case 8:
        return chance(0.5) ? cat(any_tensor()) : pad(any_tensor());
      case 9:
        return index_select(any_tensor());
      case 10:
        return chance(0.5) ? extern_clone(any_tensor()) : duplicate();
      default:
        return unary(tensors_.back());
    }
  }

  void unary(Operand t) {
    static const char* ops[] = {"neg(X)",
                                "abs(X)",
                                "sin(X)",
                                "tanh(X)",
                                "sigmoid(X)",
                                "sqrt(abs(X))",
                                "log(add(abs(X), 1.0:float32))",
                                "floor(mul(X, 2.0:float32))",
                                "exp(tanh(X))",
                                "mul(X, X)",
                                "erf(X)",
                                "sub(X, 0.5:float32)"};
    std::string body = one_of(ops);
    const std::string x = value_at(t, i_vars(t.shape.size()));
    for (size_t at = body.find('X'); at != std::string::npos; at = body.find('X', at + x.size()))
      body.replace(at, 1, x);
    add_compute(t.shape, "float32", "pointwise" + dims(t.shape) + " = " + body);
  }

  void binary(Operand a) {
    auto compatible = [&](const std::vector<int64_t>& x, const std::vector<int64_t>& y) {
      for (size_t k = 0; k < std::min(x.size(), y.size()); ++k) {
        const int64_t dx = x[x.size() - 1 - k], dy = y[y.size() - 1 - k];
        if (dx != dy && dx != 1 && dy != 1) return false;
      }
      return true;
    };
    std::vector<const Operand*> partners;
    for (const Operand& t : tensors_) {
      if (compatible(a.shape, t.shape)) partners.push_back(&t);
    }
    const Operand* b =
        partners[static_cast<size_t>(pick(0, static_cast<int64_t>(partners.size()) - 1))];
    const Operand partner = *b;
    if (chance(0.3)) {
      add_input(broadcast_variant(a.shape), "float32");
      return binary_of(a, tensors_.back());
    }
    binary_of(a, partner);
  }

  void binary_of(const Operand& a, const Operand& b) {
    std::vector<int64_t> out(std::max(a.shape.size(), b.shape.size()), 1);
    for (size_t k = 0; k < out.size(); ++k) {
      const size_t ka = a.shape.size() + k, kb = b.shape.size() + k;
      const int64_t da = ka >= out.size() ? a.shape[ka - out.size()] : 1;
      const int64_t db = kb >= out.size() ? b.shape[kb - out.size()] : 1;
      out[k] = std::max(da, db);
    }
    if (numel(out) > kMaxElements) return;
    static const char* ops[] = {"add(X, Y)",
                                "sub(X, Y)",
                                "mul(X, Y)",
                                "maximum(X, Y)",
                                "minimum(X, Y)",
                                "div(X, add(abs(Y), 1.0:float32))",
                                "where(gt(X, Y), X, mul(Y, 0.5:float32))",
                                "atan2(X, Y)"};
    std::string body = one_of(ops);
    const std::string x = broadcast_value(a, out), y = broadcast_value(b, out);
    for (size_t at = body.find('X'); at != std::string::npos; at = body.find('X', at + x.size()))
      body.replace(at, 1, x);
    for (size_t at = body.find('Y'); at != std::string::npos; at = body.find('Y', at + y.size()))
      body.replace(at, 1, y);
    add_compute(out, "float32", "pointwise" + dims(out) + " = " + body);
  }

  void reduction(Operand t) {
    if (t.shape.empty()) return unary(t);
    std::vector<bool> reduced(t.shape.size());
    bool any = false;
    for (size_t k = 0; k < reduced.size(); ++k) any |= (reduced[k] = chance(0.5));
    if (!any)
      reduced[static_cast<size_t>(pick(0, static_cast<int64_t>(reduced.size()) - 1))] = true;
    std::vector<int64_t> kept, over;
    std::vector<std::string> index;
    for (size_t k = 0; k < t.shape.size(); ++k) {
      index.push_back(reduced[k] ? "r" + std::to_string(over.size()) : i_var(kept.size()));
      (reduced[k] ? over : kept).push_back(t.shape[k]);
    }
    static const char* ops[] = {"sum",    "sum",    "max",        "min",
                                "argmax", "argmin", "welford_m2", "any"};
    const std::string op = one_of(ops);
    std::string body = value_at(t, index);
    std::string dtype = "float32";
    if (op == "argmax" || op == "argmin") dtype = "int64";
    if (op == "any") {
      body = "gt(" + body + ", 0.0:float32)";
      dtype = "bool";
    }
    const Operand r = add_compute(
        kept, dtype, "reduce " + op + dims(kept) + " over " + dims(over) + " = " + body);
    if (!chance(0.4)) return;
    // keepdim: a view with the reduced dims back as size 1.
    std::vector<int64_t> shape = t.shape;
    std::vector<std::string> read;
    for (size_t k = 0; k < shape.size(); ++k) {
      if (reduced[k])
        shape[k] = 1;
      else
        read.push_back(i_var(k));
    }
    add_compute(shape, dtype,
                "pointwise" + dims(shape) + " = load(" + r.name + ", [" + join(read) + "])", true);
  }

  void view(Operand t) {
    const size_t rank = t.shape.size();
    std::vector<int64_t> shape = t.shape;
    std::vector<std::string> index = i_vars(rank);
    const int kind = static_cast<int>(pick(0, 5));
    if (kind == 0 && rank >= 2) {  // permute
      std::vector<size_t> perm(rank);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng_);
      for (size_t k = 0; k < rank; ++k) {
        shape[k] = t.shape[perm[k]];
        index[perm[k]] = i_var(k);
      }
    } else if (kind == 1 && rank >= 2) {  // merge dims d, d+1
      const size_t d = static_cast<size_t>(pick(0, static_cast<int64_t>(rank) - 2));
      const int64_t inner = t.shape[d + 1];
      shape[d] *= inner;
      shape.erase(shape.begin() + static_cast<long>(d) + 1);
      index.clear();
      for (size_t k = 0; k < rank; ++k) {
        if (k < d) index.push_back(i_var(k));
        if (k == d) index.push_back(i_var(d) + " // " + std::to_string(inner));
        if (k == d + 1) index.push_back(i_var(d) + " % " + std::to_string(inner));
        if (k > d + 1) index.push_back(i_var(k - 1));
      }
    } else if (kind == 2 && rank >= 1 && rank <= 3) {  // split dim d into p x q
      const size_t d = static_cast<size_t>(pick(0, static_cast<int64_t>(rank) - 1));
      int64_t q = 0;
      for (int64_t c = 2; c < t.shape[d]; ++c) {
        if (t.shape[d] % c == 0) q = c;
      }
      if (q == 0) return unary(t);
      shape[d] = t.shape[d] / q;
      shape.insert(shape.begin() + static_cast<long>(d) + 1, q);
      for (size_t k = 0; k < rank; ++k) {
        index[k] = k < d    ? i_var(k)
                   : k == d ? i_var(d) + "*" + std::to_string(q) + " + " + i_var(d + 1)
                            : i_var(k + 1);
      }
    } else if (kind == 3 && rank >= 1) {  // slice
      const size_t d = static_cast<size_t>(pick(0, static_cast<int64_t>(rank) - 1));
      if (t.shape[d] < 2) return unary(t);
      const int64_t start = pick(0, t.shape[d] - 1), step = pick(1, 3);
      shape[d] = (t.shape[d] - start + step - 1) / step;
      index[d] = i_var(d) + (step > 1 ? "*" + std::to_string(step) : "") +
                 (start ? " + " + std::to_string(start) : "");
    } else if (kind == 4 &&
               std::count(t.shape.begin(), t.shape.end(), 1) > 0) {  // expand a size-1 dim
      const size_t d =
          static_cast<size_t>(std::find(t.shape.begin(), t.shape.end(), 1) - t.shape.begin());
      shape[d] = pick(2, 5);
      index[d] = "0";
      if (numel(shape) > kMaxElements) return;
    } else if (rank <= 3) {  // unsqueeze
      const size_t d = static_cast<size_t>(pick(0, static_cast<int64_t>(rank)));
      shape.insert(shape.begin() + static_cast<long>(d), 1);
      for (size_t k = d; k < rank; ++k) index[k] = i_var(k + 1);
    } else {
      return unary(t);
    }
    add_compute(shape, t.dtype,
                "pointwise" + dims(shape) + " = load(" + t.name + ", [" + join(index) + "])", true);
  }

  /// cat([t, f(t)], d): each piece a masked load, chosen by a where.
  void cat(Operand t) {
    if (t.shape.empty()) return unary(t);
    const Operand first = t;
    unary(first);
    const Operand second = tensors_.back();
    const size_t d = static_cast<size_t>(pick(0, static_cast<int64_t>(first.shape.size()) - 1));
    const int64_t n = first.shape[d];
    std::vector<int64_t> shape = first.shape;
    shape[d] *= 2;
    if (numel(shape) > kMaxElements) return;
    std::vector<std::string> a = i_vars(shape.size()), b = a;
    b[d] = i_var(d) + " - " + std::to_string(n);
    const std::string in_first = i_var(d) + " < " + std::to_string(n);
    const std::string body =
        "where(ne(index(" + in_first + ", int64), 0:int64), " +
        value_at(first, a, ", mask=" + in_first) + ", " +
        value_at(second, b, ", mask=" + std::to_string(n) + " <= " + i_var(d)) + ")";
    add_compute(shape, "float32", "pointwise" + dims(shape) + " = " + body);
  }

  void pad(Operand t) {
    if (t.shape.empty()) return unary(t);
    const size_t d = static_cast<size_t>(pick(0, static_cast<int64_t>(t.shape.size()) - 1));
    const int64_t before = pick(0, 2), after = pick(before == 0 ? 1 : 0, 2), n = t.shape[d];
    std::vector<int64_t> shape = t.shape;
    shape[d] += before + after;
    if (numel(shape) > kMaxElements) return;
    std::vector<std::string> index = i_vars(shape.size());
    if (before) index[d] = i_var(d) + " - " + std::to_string(before);
    const std::string inside = "(" + std::to_string(before) + " <= " + i_var(d) + ")*(" + i_var(d) +
                               " < " + std::to_string(before + n) + ")";
    const std::string body = "where(ne(index(" + inside + ", int64), 0:int64), " +
                             value_at(t, index, ", mask=" + inside) + ", -1.5:float32)";
    add_compute(shape, "float32", "pointwise" + dims(shape) + " = " + body);
  }

  void index_select(Operand t) {
    if (t.shape.empty()) return unary(t);
    const Operand source = t;
    const size_t d = static_cast<size_t>(pick(0, static_cast<int64_t>(source.shape.size()) - 1));
    const int64_t picks = pick(1, 6);
    add_input({picks}, "int64");
    const Operand indices = tensors_.back();
    fill_.int_ranges[indices.name] = {0, source.shape[d] - 1};
    std::vector<int64_t> shape = source.shape;
    shape[d] = picks;
    std::vector<std::string> index = i_vars(shape.size());
    index[d] = "%ind0";
    const std::string extra = ", indirect=[load(" + indices.name + ", [" + i_var(d) +
                              "])], bounds=[" + std::to_string(source.shape[d]) + "]";
    add_compute(shape, "float32",
                "pointwise" + dims(shape) + " = " + value_at(source, index, extra));
  }

  /// An ATen op the interpreter runs as a copy: fusion must not cross it.
  void extern_clone(Operand t) {
    const Operand source = t;
    const std::string id = std::to_string(node_++);
    const std::string name = "%" + id;
    buffers_.push_back("buffer " + name + ": " + source.dtype +
                       layout(source.shape, contiguous(source.shape)) + " extern cpu");
    steps_.push_back("extern node " + id + " (" + source.name + ") -> (" + name + ")");
    clones_.insert(static_cast<int32_t>(node_ - 1));
    tensors_.push_back({name, source.shape, source.dtype});
  }

  /// The same computation again under a new name (what CSE merges).
  void duplicate() {
    if (specs_.empty()) return unary(any_tensor());
    const Spec s = specs_[static_cast<size_t>(pick(0, static_cast<int64_t>(specs_.size()) - 1))];
    add_compute(s.shape, s.dtype, s.text);
  }

  struct Spec {
    std::vector<int64_t> shape;
    std::string dtype, text;
  };

  std::mt19937_64 rng_;
  std::vector<Operand> tensors_;
  std::vector<Spec> specs_;
  std::vector<std::string> buffers_, computes_, steps_;
  std::set<int32_t> clones_;
  int node_ = 0, inputs_ = 0;
  interp::RandomFill fill_;
};

}  // namespace

RandomProgram random_program(uint64_t seed) {
  return Builder(seed).build();
}

}  // namespace inductor_cpp::ir::testing
