/// \file
/// Scheduled kernel IR: statement factories and structural equality. (The text form,
/// kernel_to_text and parse_kernel, lives in kernel_text.cpp next to the other printers.)
#include "ir/kernel_ir.h"

namespace inductor_cpp::ir {

const char* stmt_kind_name(StmtKind k) {
  switch (k) {
#define INDUCTOR_CPP_STMT_NAME(x) \
  case StmtKind::x:               \
    return #x;
    INDUCTOR_CPP_STMT_KINDS(INDUCTOR_CPP_STMT_NAME)
#undef INDUCTOR_CPP_STMT_NAME
  }
  return "?";
}

Stmt Stmt::loop(std::string var, Expr extent, std::vector<Stmt> body) {
  Stmt s;
  s.kind = StmtKind::For;
  s.var = std::move(var);
  s.extent = extent;
  s.body = std::move(body);
  return s;
}

Stmt Stmt::let(std::string name, Value value) {
  Stmt s;
  s.kind = StmtKind::Let;
  s.name = std::move(name);
  if (value) s.dtype = value->dtype;
  s.value = std::move(value);
  return s;
}

Stmt Stmt::define_accumulator(std::string name, ReduceOp op, DType dtype) {
  Stmt s;
  s.kind = StmtKind::DefineAccumulator;
  s.name = std::move(name);
  s.reduce_op = op;
  s.dtype = dtype;
  return s;
}

Stmt Stmt::accumulate(std::string name, Value value, Expr index) {
  Stmt s;
  s.kind = StmtKind::Accumulate;
  s.name = std::move(name);
  if (value) s.dtype = value->dtype;
  s.value = std::move(value);
  s.index = index;
  return s;
}

Stmt Stmt::store(std::string buffer, Expr index, Value value) {
  Stmt s;
  s.kind = StmtKind::Store;
  s.buffer = std::move(buffer);
  s.index = index;
  if (value) s.dtype = value->dtype;
  s.value = std::move(value);
  return s;
}

// Only the fields a kind uses take part (the others keep whatever a pass left there); a
// loop's chunk matters only when it is parallel. Let/Accumulate/Store take their dtype from
// the value, so it is not compared separately.
bool Stmt::operator==(const Stmt& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case StmtKind::For:
      return var == o.var && extent == o.extent && parallel == o.parallel &&
             (!parallel || chunk == o.chunk) && vector_width == o.vector_width &&
             gpu_threads == o.gpu_threads && body == o.body;
    case StmtKind::Let:
      return name == o.name && value == o.value;
    case StmtKind::DefineAccumulator:
      return name == o.name && reduce_op == o.reduce_op && dtype == o.dtype;
    case StmtKind::Accumulate:
      return name == o.name && value == o.value && index == o.index;
    case StmtKind::Store:
      return buffer == o.buffer && index == o.index && value == o.value;
  }
  return false;
}

bool KernelParam::operator==(const KernelParam& o) const {
  return buffer == o.buffer && dtype == o.dtype && written == o.written;
}

bool Kernel::operator==(const Kernel& o) const {
  return name == o.name && params == o.params && symbols == o.symbols && body == o.body;
}

}  // namespace inductor_cpp::ir
