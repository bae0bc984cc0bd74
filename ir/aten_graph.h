/// \file
/// The ATen-level graph: what TorchDynamo + AOT autograd hand us, as plain C++ data.
///
/// One node per ATen operator call, addressed by full schema name (`aten::add.Tensor`), with
/// its arguments (tensor references or literals) and the metadata of each output. This is the
/// first IR level; it knows nothing of libtorch or Python, so it builds and tests in seconds.
/// The serialized form is the graph description documented in docs/graph_schema.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace inductor_cpp::ir {

/// A size, stride or offset: a number, or, in a graph with dynamic shapes, the symbolic
/// expression Dynamo gave it ("s0", "2*s1"). Expressions are kept as text for now: they
/// identify the graph (cache key) and show in its text form; nothing computes with them yet.
using Dim = std::variant<int64_t, std::string>;

/// Layout and type of one tensor value, read from FX's `node.meta["val"]`.
struct TensorMeta {
  std::vector<Dim> sizes;
  std::vector<Dim> strides;
  Dim storage_offset = int64_t{0};
  std::string dtype;   ///< torch name without prefix: "float32", "int64", "bool", ...
  std::string device;  ///< "cpu", "cuda:0", ...
  bool requires_grad = false;

  bool operator==(const TensorMeta& o) const;
};

/// One argument of a node, or one graph output.
struct Arg {
  enum class Kind {
    None,      ///< Python None
    Input,     ///< graph input `index`
    Constant,  ///< constant tensor `index` (an FX get_attr)
    Value,     ///< output `output` of node `index`
    Int,
    Float,
    Bool,
    Str,
    Dtype,         ///< text: torch dtype name
    Device,        ///< text: "cpu", "cuda:0"
    Layout,        ///< text: "strided", ...
    MemoryFormat,  ///< text: "contiguous_format", "channels_last", ...
    List,          ///< items
  };
  Kind kind = Kind::None;
  int64_t index = 0;
  int64_t output = 0;
  int64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  std::string text;
  std::vector<Arg> items;

  static Arg none() { return Arg{}; }
  static Arg input(int64_t i);
  static Arg constant(int64_t i);
  static Arg value(int64_t node, int64_t output = 0);
  static Arg of_int(int64_t v);
  static Arg of_float(double v);
  static Arg of_bool(bool v);
  static Arg named(Kind kind, std::string text);  ///< Str, Dtype, Device, Layout, MemoryFormat
  static Arg list(std::vector<Arg> items);

  bool is_tensor_ref() const {
    return kind == Kind::Input || kind == Kind::Constant || kind == Kind::Value;
  }
  bool operator==(const Arg& o) const;
};

/// One operator call: an ATen (dispatcher) operator, or arithmetic on Python numbers.
struct Node {
  /// Full schema name: "aten::add.Tensor" ("aten::relu" has no overload); or "sym::<fn>"
  /// for arithmetic on sizes in graphs with dynamic shapes ("sym::mul", "sym::floordiv"),
  /// with Python's semantics (see is_scalar_op).
  std::string op;
  std::vector<Arg> args;
  std::vector<std::pair<std::string, Arg>> kwargs;
  /// One entry per output; nullopt for outputs that are not tensors (or unknown).
  std::vector<std::optional<TensorMeta>> outputs;
  /// Where the user wrote it: "model.py:12 in forward: x = self.fc(x)". Not part of the
  /// graph's identity (never hashed), only used in messages.
  std::string source;
};

/// One graph input: a tensor, or a Python number (symbolic in graphs with dynamic shapes).
struct GraphInput {
  std::optional<TensorMeta> tensor;
  std::string scalar_type;  ///< for a number: "int", "float" or "bool"; empty if unknown
  std::string expr;         ///< for a symbolic number: its symbol ("s0")

  GraphInput() = default;
  GraphInput(TensorMeta meta) : tensor(std::move(meta)) {}  // NOLINT: implicit on purpose
  static GraphInput number(std::string scalar_type, std::string expr);
  bool operator==(const GraphInput& o) const;
};

/// A whole graph: inputs, constants, nodes in execution order, outputs.
struct Graph {
  static constexpr int kSchemaVersion = 1;
  std::string kind = "inference";  ///< "forward", "backward" or "inference"
  std::vector<GraphInput> inputs;
  std::vector<TensorMeta> constants;
  std::vector<Node> nodes;
  std::vector<Arg> outputs;
};

/// True for the "sym::" ops: Python arithmetic and comparisons on numbers, run by the runtime
/// itself rather than by the dispatcher.
bool is_scalar_op(const std::string& op);

/// Splits "aten::add.Tensor" into {"aten::add", "Tensor"}; no dot gives an empty overload.
std::pair<std::string, std::string> split_op_name(const std::string& op);

/// Readable one-line forms, used in messages and in the text form of a graph.
std::string to_string(const Dim& dim);
std::string to_string(const TensorMeta& meta);
std::string to_string(const GraphInput& input);
std::string to_string(const Arg& arg);

/// The text form of a graph, e.g.
///   graph inference(%in0: float32[2, 3]{3, 1} cpu) {
///     %0 = aten::relu(%in0) -> (float32[2, 3]{3, 1} cpu)
///     return (%0)
///   }
std::string to_text(const Graph& graph);

}  // namespace inductor_cpp::ir
