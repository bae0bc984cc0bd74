/// \file
/// Library calls in the loop-level IR (library_call.h).
#include "ir/library_call.h"

#include <algorithm>

namespace inductor_cpp::ir {

const char* library_op_name(LibraryOp op) {
  switch (op) {
#define INDUCTOR_CPP_NAME_ENTRY(k) \
  case LibraryOp::k:               \
    return #k;
    INDUCTOR_CPP_LIBRARY_CALL_OPS(INDUCTOR_CPP_NAME_ENTRY)
#undef INDUCTOR_CPP_NAME_ENTRY
  }
  return "?";
}

std::optional<LibraryOp> library_op_from_name(const std::string& name) {
#define INDUCTOR_CPP_PARSE_ENTRY(k) \
  if (name == #k) return LibraryOp::k;
  INDUCTOR_CPP_LIBRARY_CALL_OPS(INDUCTOR_CPP_PARSE_ENTRY)
#undef INDUCTOR_CPP_PARSE_ENTRY
  return std::nullopt;
}

bool library_op_has_epilogue(LibraryOp op) {
  return op == LibraryOp::mm || op == LibraryOp::addmm || op == LibraryOp::bmm || op == LibraryOp::conv2d;
}

double LibraryCall::attr(const std::string& name, double fallback) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? fallback : it->second;
}

std::vector<std::string> LibraryCall::reads() const {
  std::vector<std::string> out;
  const auto add = [&out](const std::string& name) {
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  for (const std::string& o : operands) add(o);
  if (epilogue) {
    for (const std::string& b : buffers_read(epilogue)) add(b);
  }
  return out;
}

bool LibraryCall::operator==(const LibraryCall& o) const {
  return op == o.op && operands == o.operands && attrs == o.attrs && epilogue == o.epilogue &&
         tile_compute == o.tile_compute && tile_input == o.tile_input;
}

Value epilogue_accumulator(DType dtype) {
  return local(kEpilogueAccumulator, dtype);
}

LibraryCall renamed(const LibraryCall& call, const std::map<std::string, std::string>& rename) {
  const auto name = [&rename](const std::string& n) {
    auto it = rename.find(n);
    return it == rename.end() ? n : it->second;
  };
  LibraryCall out = call;
  for (std::string& o : out.operands) o = name(o);
  out.tile_input = name(out.tile_input);
  if (out.epilogue) {
    out.epilogue = replace_loads(out.epilogue, [&](const Value& l) -> Value {
      auto it = rename.find(l->name);
      if (it == rename.end()) return Value();
      return load(it->second, l->dtype, l->index, l->mask, l->operands, l->bounds);
    });
  }
  return out;
}

}  // namespace inductor_cpp::ir
