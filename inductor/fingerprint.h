/// \file
/// What, besides the graph, decides what we would generate: the identity of this compiler
/// build and of the toolchain generated code is built with. Both enter the cache key, so an
/// upgraded compiler or a different host never loads an old artifact.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace inductor_cpp::inductor {

/// sha256 of the shared object (or executable) this code was linked into. Computed once per
/// process: a rebuilt compiler is a different compiler.
const std::string& build_id();

/// {"cxx": path, "cxx_version": "...", "cxx_flags": "...", "isa": ["avx2", ...]}: the C++
/// compiler generated CPU kernels are built with ($CXX, else g++), its flags, the host's vector ISA
/// and CPU model (kernels use -march=native).
/// Computed once per value of $CXX.
const nlohmann::json& host_toolchain();

/// The toolchain part of a graph's cache key: host_toolchain(), plus, for a graph on a GPU
/// (`gpu_device` "cuda:0"; "" for none), {"gpu": sm architecture, LLVM version, PTX ISA,
/// driver and ptxas versions} (build_plan_gpu.h: gpu_toolchain).
nlohmann::json toolchain_for(const std::string& gpu_device);

}  // namespace inductor_cpp::inductor
