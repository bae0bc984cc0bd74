/// \file
/// Private to the verifiers (verify.cpp, verify_kernel.cpp, verify_library.cpp): failing with a
/// located message, walking a value DAG, checking which variables index expressions use.
#pragma once

#include <functional>
#include <set>
#include <string>

#include "ir/index_expr.h"
#include "ir/loop_ir.h"
#include "ir/value.h"

namespace inductor_cpp::ir::verify_detail {

/// Throws std::invalid_argument("verify: <where>: <what>").
[[noreturn]] void fail(const std::string& where, const std::string& what);

/// Calls f on every distinct node reachable from v (operands before their users).
void for_each_node(const Value& v, const std::function<void(const ValueNode&)>& f);

/// Fails unless every variable of e is in `allowed`; `what` names the expression's role.
void check_vars(const Expr& e, const std::set<std::string>& allowed, const std::string& where,
                const std::string& what);

/// A load's own expressions: index (which may also use %ind<k> for each indirect value),
/// mask, and one bound per indirect value.
void check_load_exprs(const ValueNode& load, const std::set<std::string>& allowed,
                      const std::string& where);

/// The library call an extern step carries, if any (rules in verify.h); `where` names the step.
void check_library_call(const LoopProgram& p, const ExternCall& call, const std::string& where);

/// "%ind<k>": the placeholder for a load's k-th indirect value.
std::string indirect_var(size_t k);

}  // namespace inductor_cpp::ir::verify_detail
