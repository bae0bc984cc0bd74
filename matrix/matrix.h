/// \file matrix.h
/// \brief The matrix-kernel library's entry header: what code outside matrix/ may use.
///
/// matrix/ is one concept: float32 and bfloat16 matrix products, 2-D convolutions (forward and
/// backward) and scaled dot-product attention (forward and backward) on register-blocked
/// micro-kernels that matrix/jit/ generates at run time with xbyak. It knows nothing of
/// libtorch, the IR or plans: callers hand it raw pointers, strides and an epilogue
/// description. runtime/ binds plan steps to it (runtime/matmul_step.h, conv_step.h,
/// attention_step.h); inductor/ asks it what it supports when choosing library calls.
/// Everything else in matrix/ (pack.h, gemm_driver.h, jit/ but cpu_features.h, ...) is private,
/// but for gemm_config.h's for_each_worker (the thread-team runner), which
/// runtime/weight_fingerprint.cpp shares.
#pragma once

#include "matrix/attention.h"
#include "matrix/attention_backward.h"
#include "matrix/conv.h"
#include "matrix/conv_backward.h"
#include "matrix/gemm.h"
#include "matrix/gemm_bf16.h"
#include "matrix/gemv.h"
#include "matrix/jit/cpu_features.h"
#include "matrix/scratch.h"
