/// \file
/// Epilogue absorption (absorb_epilogues.h).
#include "ir/passes/absorb_epilogues.h"

#include <algorithm>
#include <set>

#include "ir/epilogue_ops.h"
#include "ir/passes/column_affine.h"
#include "ir/passes/tile_epilogue.h"
#include "ir/simplify.h"

namespace inductor_cpp::ir {
namespace {

bool writes(const Step& s, const std::string& buffer) {
  if (s.kind == Step::Kind::Extern) return std::count(s.call.outputs.begin(), s.call.outputs.end(), buffer) > 0;
  return std::count(s.kernel.computes.begin(), s.kernel.computes.end(), buffer) > 0;
}

/// True when `buffer` holds its value before step `index`: an input or constant, or written by
/// an earlier step.
bool ready_before(const LoopProgram& p, const std::string& buffer, size_t index) {
  const Buffer* b = p.find_buffer(buffer);
  if (b && (b->origin == BufferOrigin::Input || b->origin == BufferOrigin::Constant)) return true;
  for (size_t s = 0; s < index; ++s)
    if (writes(p.steps[s], buffer)) return true;
  return false;
}

/// The one step reading `buffer`: a kernel step of a single compute, after `after`; nothing when
/// anything else reads it (an extern, another compute, a tile, the graph's outputs).
std::optional<size_t> sole_consumer(const LoopProgram& p, const std::string& buffer, size_t after) {
  if (std::count(p.outputs.begin(), p.outputs.end(), buffer)) return std::nullopt;
  std::optional<size_t> found;
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const Step& step = p.steps[s];
    bool reads = false;
    if (step.kind == Step::Kind::Extern) {
      reads = std::count(step.call.inputs.begin(), step.call.inputs.end(), buffer) > 0;
      if (step.call.library && !step.call.library->tile_compute.empty())
        reads = reads || buffers_read(p.computes.at(step.call.library->tile_compute).body).count(buffer);
    } else {
      for (const std::string& c : step.kernel.computes) reads = reads || buffers_read(p.computes.at(c).body).count(buffer);
    }
    if (!reads) continue;
    if (found || s <= after || step.kind != Step::Kind::Kernel || step.kernel.computes.size() != 1) return std::nullopt;
    found = s;
  }
  return found;
}

Expr element_offset(const Buffer& b, const std::vector<Expr>& index) {
  Expr off = b.offset;
  for (size_t k = 0; k < index.size(); ++k) off = off + index[k] * b.strides[k];
  return off;
}

Expr numel(const std::vector<Expr>& sizes) {
  Expr n(1);
  for (const Expr& s : sizes) n = n * s;
  return n;
}

/// The one index at which `body` loads `buffer` (unmasked, direct), or nothing.
std::optional<std::vector<Expr>> single_index(const Value& body, const std::string& buffer) {
  std::optional<std::vector<Expr>> index;
  for (const Value& l : loads_in(body)) {
    if (l->name != buffer) continue;
    if (l->mask != Expr(1) || !l->operands.empty() || (index && *index != l->index)) return std::nullopt;
    index = l->index;
  }
  return index;
}

/// Whether the consumer's element at each point of its ranges sits where the library output's
/// element it reads at `index` does, over as many elements.
bool reads_in_place(const LoopProgram& p, const Compute& c, const Buffer& out, const std::vector<Expr>& index) {
  const Buffer& written = p.buffer(c.name);
  if (written.sizes.size() != c.ranges.size()) return false;
  std::vector<Expr> own;
  for (size_t k = 0; k < c.ranges.size(); ++k) own.push_back(Expr::var(range_var(k)));
  const RangeMap ranges = ranges_of(c, p);
  return provably_equal(numel(out.sizes), numel(written.sizes), ranges) &&
         provably_equal(element_offset(out, index), element_offset(written, own), ranges);
}

/// The epilogue rewritten from the library output's coordinates into the consumer's.
Value in_consumer_coordinates(const Value& epilogue, const std::vector<Expr>& index) {
  std::map<std::string, Expr> to;
  for (size_t k = 0; k < index.size(); ++k) to[range_var(k)] = index[k];
  return map_indices(epilogue, [&to](const Expr& e) { return substitute(e, to); });
}

/// Whether call `op` can store its result in `written` (whose elements sit where its own output
/// `out`'s do): a GEMM writes dense row-major tensors, a convolution channels-last ones of its
/// output's sizes.
bool layout_fits(LibraryOp op, const Buffer& out, const Buffer& written) {
  if (op == LibraryOp::conv2d) return written.sizes == out.sizes && written.strides == out.strides;
  Expr expected(1);
  for (size_t d = written.sizes.size(); d-- > 0;) {
    if (written.sizes[d] != Expr(1) && simplify(written.strides[d]) != simplify(expected)) return false;
    expected = expected * written.sizes[d];
  }
  return written.offset == Expr(0);
}

bool on_gpu(const std::string& device) {
  return device == "cuda" || device.rfind("cuda:", 0) == 0;
}

bool static_sizes(const Buffer& b) {
  return std::all_of(b.sizes.begin(), b.sizes.end(), [](const Expr& e) { return e.is_const(); }) &&
         std::all_of(b.strides.begin(), b.strides.end(), [](const Expr& e) { return e.is_const(); });
}

bool row_major(const Buffer& b) {
  int64_t expected = 1;
  for (size_t d = b.sizes.size(); d-- > 0;) {
    if (b.sizes[d].value() != 1 && b.strides[d].value() != expected) return false;
    expected *= b.sizes[d].value();
  }
  return true;
}

/// The distinct largest subtrees of `v` that read `out` and otherwise only buffers ready before
/// step `s`.
void collect_parts(const Value& v, const std::string& out, size_t s, std::vector<Value>& parts, const LoopProgram& p) {
  const std::set<std::string> reads = buffers_read(v);
  if (!reads.count(out)) return;
  bool ready = true;
  for (const std::string& b : reads) ready = ready && (b == out || ready_before(p, b, s));
  if (ready) {
    if (std::find(parts.begin(), parts.end(), v) == parts.end()) parts.push_back(v);
    return;
  }
  if (v->kind == ValueKind::Load) return;
  for (const Value& o : v->operands) collect_parts(o, out, s, parts, p);
}

class Absorber {
 public:
  Absorber(const LoopProgram& p, const AbsorbOptions& options) : p_(p), options_(options) {}

  LoopProgram run() {
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      while (absorb_one(s)) s = index_of_call_;
    }
    return p_;
  }

 private:
  const Buffer* buffer_of(const std::string& name) const { return p_.find_buffer(name); }

  /// Absorbs the consumer of the library call at step `s`, if it can; true when it did. The
  /// call's step may move later (vectors computed before it): index_of_call_ follows it.
  bool absorb_one(size_t s) {
    index_of_call_ = s;
    Step& step = p_.steps[s];
    if (step.kind != Step::Kind::Extern || !step.call.library) return false;
    const LibraryCall& call = *step.call.library;
    if (!library_op_has_epilogue(call.op) || !call.tile_compute.empty() || step.call.outputs.size() != 1) return false;
    const std::string out_name = step.call.outputs[0];
    const Buffer& out = p_.buffer(out_name);
    if (out.dtype != DType::Float32) return false;
    const auto k = sole_consumer(p_, out_name, s);
    if (!k) return false;
    const Compute& consumer = p_.computes.at(p_.steps[*k].kernel.computes[0]);
    if (consumer.is_reduction() || consumer.view || consumer.dtype() != DType::Float32) return false;
    const auto index = single_index(consumer.body, out_name);
    if (!index || index->size() != out.sizes.size() || !reads_in_place(p_, consumer, out, *index)) return false;
    bool all_ready = true;
    for (const std::string& b : buffers_read(consumer.body)) all_ready = all_ready && (b == out_name || ready_before(p_, b, s));

    const Value before = call.epilogue ? call.epilogue : epilogue_accumulator(DType::Float32);
    const Value moved = in_consumer_coordinates(before, *index);
    if (!all_ready) {
      split(s, consumer, moved);  // the consumer stays: the chain ends
      return false;
    }
    const Value composed = replace_loads(consumer.body, [&](const Value& l) { return l->name == out_name ? moved : Value(); });
    const Buffer& written = p_.buffer(consumer.name);
    const EpilogueShape shape = epilogue_shape(call, written);
    if (!layout_fits(call.op, out, written)) return false;
    if (const auto folded = selectable(call.op, composed, shape, consumer.name, written.device)) {
      commit(s, *k, consumer, *folded);
      return true;
    }
    if (options_.tile_epilogues && !on_gpu(written.device)) tile(s, *k, consumer);  // a tile ends the chain
    return false;
  }

  /// A consumer that also reads what is not ready before the call (the other convolution of a
  /// resnet downsample block's end, relu(bn2(conv2(.)) + bn(conv(x)))): the part of its body
  /// that depends on this call's result and on ready buffers alone (bn(conv(x))) moves into the
  /// call's epilogue, the call writes it to a buffer of its own, and the consumer reads that
  /// buffer instead (then the other call can absorb the consumer whole).
  bool split(size_t s, const Compute& consumer, const Value& moved) {
    ExternCall& call = p_.steps[s].call;
    const std::string out_name = call.outputs[0];
    std::vector<Value> parts;
    collect_parts(consumer.body, out_name, s, parts, p_);
    if (parts.size() != 1) return false;
    const Value part = parts.front();
    if (part->kind == ValueKind::Load) return false;  // nothing to take over
    const Value composed = replace_loads(part, [&](const Value& l) { return l->name == out_name ? moved : Value(); });
    const Buffer& written = p_.buffer(consumer.name);
    const EpilogueShape shape = epilogue_shape(*call.library, written);
    const auto folded = selectable(call.library->op, composed, shape, out_name + "_part", written.device);
    if (!folded) return false;
    Buffer part_buffer = written;
    part_buffer.name = out_name + "_part";
    part_buffer.origin = BufferOrigin::Extern;
    p_.buffers.push_back(part_buffer);
    std::vector<Expr> own;
    for (size_t d = 0; d < consumer.ranges.size(); ++d) own.push_back(Expr::var(range_var(d)));
    Compute& rewritten = p_.computes.at(consumer.name);
    rewritten.body = replace_value(rewritten.body, part, load(part_buffer.name, DType::Float32, own));
    // The call's side, as an absorption into a buffer of its own.
    Compute stand_in;
    stand_in.name = part_buffer.name;
    commit_epilogue(s, stand_in, *folded);
    return true;
  }

  /// `epilogue` as it is when the library's operations express it, else with its per-column
  /// runs folded when they then do (folding first would reorder what selection recognises as
  /// a whole, GELU's x·½ for one), else nothing. On a GPU, only what its libraries apply
  /// (gpu_epilogue_fits), unfolded: a folded scale_col is not among those.
  std::optional<FoldedEpilogue> selectable(LibraryOp op, const Value& epilogue, const EpilogueShape& shape,
                                           const std::string& prefix, const std::string& device) {
    const auto buffer_of = [this](const std::string& name) -> const Buffer* {
      for (const Buffer& b : pending_)
        if (b.name == name) return &b;
      return p_.find_buffer(name);
    };
    pending_.clear();
    if (on_gpu(device)) {
      // cuDNN adds a bias in a second kernel over the output; generated code adds it in the
      // kernel that reads the output next (python/inductor_cpp/decompositions.py peels it off).
      if (op == LibraryOp::conv2d) return std::nullopt;
      const auto ops = select_epilogue_ops(epilogue, shape, buffer_of);
      if (!ops || !gpu_epilogue_fits(op, *ops)) return std::nullopt;
      return FoldedEpilogue{epilogue, {}, {}};
    }
    if (select_epilogue_ops(epilogue, shape, buffer_of)) return FoldedEpilogue{epilogue, {}, {}};
    FoldedEpilogue folded = fold_column_affine(epilogue, shape, buffer_of, prefix, device);
    pending_ = folded.buffers;
    const bool ok = select_epilogue_ops(folded.epilogue, shape, buffer_of).has_value();
    pending_.clear();
    if (!ok) return std::nullopt;
    return folded;
  }

  /// The call at step `s` takes over kernel step `k` (computing `consumer`).
  void commit(size_t s, size_t k, const Compute& consumer, const FoldedEpilogue& folded) {
    const Compute taken = consumer;  // erased below
    p_.steps.erase(p_.steps.begin() + static_cast<std::ptrdiff_t>(k));  // k > s: s stays
    commit_epilogue(s, taken, folded);
    const std::string& name = taken.name;
    p_.computes.erase(name);
    for (Buffer& b : p_.buffers)
      if (b.name == name) b.origin = BufferOrigin::Extern;
  }

  /// The call at step `s` now computes `consumer` (its buffer, its nodes) with the `folded`
  /// epilogue, the per-column vectors computed right before it.
  void commit_epilogue(size_t s, const Compute& consumer, const FoldedEpilogue& folded) {
    const std::string name = consumer.name;
    const int32_t node = consumer.graph_node;
    const std::vector<int32_t> inlined = consumer.inlined_nodes;
    ExternCall& call = p_.steps[s].call;
    LibraryCall& library = *call.library;
    const std::string out_name = call.outputs[0];
    library.epilogue = folded.epilogue;
    if (node >= 0) library.absorbed_nodes.push_back(node);
    library.absorbed_nodes.insert(library.absorbed_nodes.end(), inlined.begin(), inlined.end());
    call.outputs[0] = name;
    std::vector<std::string> inputs;
    for (const std::string& in : call.inputs)
      if (in != out_name) inputs.push_back(in);
    for (const std::string& b : library.reads())
      if (std::find(inputs.begin(), inputs.end(), b) == inputs.end()) inputs.push_back(b);
    call.inputs = inputs;
    // The per-column vectors: one kernel (they share their range) right before the call.
    if (folded.computes.empty()) return;
    Step vectors;
    vectors.kind = Step::Kind::Kernel;
    for (size_t i = 0; i < folded.computes.size(); ++i) {
      p_.buffers.push_back(folded.buffers[i]);
      p_.computes[folded.computes[i].name] = folded.computes[i];
      vectors.kernel.computes.push_back(folded.computes[i].name);
    }
    p_.steps.insert(p_.steps.begin() + static_cast<std::ptrdiff_t>(index_of_call_), vectors);
    ++index_of_call_;
  }

  /// The consumer as the call's tile compute, when ir::tile_epilogue_kernel can reschedule it.
  bool tile(size_t s, size_t k, const Compute& consumer) {
    ExternCall& call = p_.steps[s].call;
    LibraryCall& library = *call.library;
    if (library.op != LibraryOp::mm && library.op != LibraryOp::addmm && library.op != LibraryOp::conv2d) return false;
    const std::string out_name = call.outputs[0];
    const Buffer& out = p_.buffer(out_name);
    const Buffer& written = p_.buffer(consumer.name);
    if (!static_sizes(out) || !static_sizes(written)) return false;
    int64_t rows = 0, cols = 0;
    if (library.op == LibraryOp::conv2d) {
      // The channels-last [N, C, H, W] output is the [N·H·W, C] matrix; the consumer must keep it.
      if (written.sizes != out.sizes || written.strides != out.strides) return false;
      rows = out.sizes[0].value() * out.sizes[2].value() * out.sizes[3].value();
      cols = out.sizes[1].value();
    } else {
      if (out.sizes.size() != 2 || !row_major(written)) return false;
      rows = out.sizes[0].value();
      cols = out.sizes[1].value();
    }
    const auto tiled = tile_epilogue_kernel(p_, {k, out_name, rows, cols, "tile_probe"});
    if (!tiled || tiled->written != consumer.name) return false;
    library.tile_compute = consumer.name;
    library.tile_input = out_name;
    if (consumer.graph_node >= 0) library.absorbed_nodes.push_back(consumer.graph_node);
    library.absorbed_nodes.insert(library.absorbed_nodes.end(), consumer.inlined_nodes.begin(),
                                  consumer.inlined_nodes.end());
    call.outputs[0] = consumer.name;
    for (const std::string& b : buffers_read(consumer.body))
      if (b != out_name && std::find(call.inputs.begin(), call.inputs.end(), b) == call.inputs.end())
        call.inputs.push_back(b);
    p_.steps.erase(p_.steps.begin() + static_cast<std::ptrdiff_t>(k));  // the compute stays: the tile's
    return true;
  }

  LoopProgram p_;
  const AbsorbOptions& options_;
  size_t index_of_call_ = 0;
  std::vector<Buffer> pending_;  ///< buffers of per-column vectors being tried
};

}  // namespace

LoopProgram absorb_epilogues(const LoopProgram& program, const AbsorbOptions& options) {
  if (!options.enabled) return program;
  return Absorber(program, options).run();
}

}  // namespace inductor_cpp::ir
