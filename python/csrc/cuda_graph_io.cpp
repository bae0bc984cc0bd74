/// \file
/// The per-call half of a recorded CUDA graph (python/inductor_cpp/cuda_graphs.py holds the
/// graph and decides when to record one): whether a call's arguments fit a recording, copying
/// the inputs that change from call to call into the graph's static buffers, and handing the
/// graph's outputs out as fresh tensors over its memory whose liveness is tracked, so that a
/// replay never overwrites a tensor the caller still holds (the caller then replays another
/// recording, or records one).
///
/// In C++ because it runs on every call over every input and output (a training backward
/// takes hundreds), where Python would spend about a microsecond on each.
#include "python/csrc/cuda_graph_io.h"

#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <ATen/ops/from_blob.h>
#include <c10/core/GradMode.h>
#include <c10/core/Storage.h>

#include <vector>

namespace py = pybind11;

namespace inductor_cpp::python {
namespace {

/// The deleter of an output's storage. Its context is the graph's own storage of that output,
/// kept alive (and so out of the allocator's hands) while the output lives. It also marks a
/// tensor as a graph's output (is_graph_output).
void release_graph_memory(void* ctx) { delete static_cast<c10::Storage*>(ctx); }

bool is_graph_output(const at::Tensor& t) {
  return t.defined() && t.has_storage() && t.storage().data_ptr().get_deleter() == &release_graph_memory;
}

enum class InputKind { kBaked, kCopied, kValue };

/// A recorded argument: a tensor read at its own address (baked), a tensor copied into a
/// static buffer each call (copied), or anything else, which must be equal on every call.
struct RecordedInput {
  InputKind kind = InputKind::kValue;
  at::Tensor buffer;               ///< kCopied: the buffer the graph reads
  const void* address = nullptr;  ///< kBaked: the address the graph reads
  at::ScalarType dtype = at::kFloat;
  c10::Device device = c10::Device(c10::kCPU);
  std::vector<int64_t> sizes, strides;
  py::object value;  ///< kValue
  bool written = false;  ///< the graph writes it
};

/// Where an output of the recording lies.
constexpr int64_t kGraphMemory = -1;  ///< memory the replay writes: handed out fresh, tracked
constexpr int64_t kOtherMemory = -2;  ///< memory no replay writes (a constant's)

struct RecordedOutput {
  int64_t source = kGraphMemory;  ///< or an input's index: the output is a view of it
  at::Tensor tensor;              ///< a tensor in graph or other memory, as recorded
  bool is_tensor = false;
  /// Input views: their geometry only (holding the view would hold the input: a recording's
  /// output that another recording's view kept alive would make that one busy for good).
  std::vector<int64_t> sizes, strides;
  int64_t element_offset = 0;  ///< from the input's first element
  bool whole_input = false;    ///< the input itself (same sizes and strides)
  py::object value;            ///< a non-tensor output
};

bool fits(const RecordedInput& r, const py::handle& arg) {
  if (r.kind == InputKind::kValue) {
    if (THPVariable_Check(arg.ptr())) return false;
    if (r.value.is_none() || arg.is_none()) return r.value.is_none() && arg.is_none();
    if (Py_TYPE(r.value.ptr()) != Py_TYPE(arg.ptr())) return false;
    const int equal = PyObject_RichCompareBool(r.value.ptr(), arg.ptr(), Py_EQ);
    if (equal < 0) throw py::error_already_set();
    return equal == 1;
  }
  if (!THPVariable_Check(arg.ptr())) return false;
  const at::Tensor& t = THPVariable_Unpack(arg.ptr());
  if (r.kind == InputKind::kBaked && t.data_ptr() != r.address) return false;
  return t.scalar_type() == r.dtype && t.device() == r.device && t.sizes().equals(r.sizes) &&
         t.strides().equals(r.strides);
}

class CudaGraphIO {
 public:
  /// `recorded_args`: what the recording ran on (copied inputs: their buffers); `copied[i]`:
  /// whether argument i is copied in on each call; `written[i]`: whether the graph writes it
  /// (a copied one is copied back after the replay); `outputs`: the recording's outputs;
  /// `sources[j]`: where output j lies: kGraphMemory (memory a replay writes: tracked),
  /// kOtherMemory (a constant's), or an input's index (handed out as a view of that call's
  /// argument, or the argument itself).
  CudaGraphIO(const py::sequence& recorded_args, const std::vector<bool>& copied, const std::vector<bool>& written,
              const py::list& outputs, const std::vector<int64_t>& sources) {
    if (copied.size() != py::len(recorded_args) || written.size() != copied.size() ||
        sources.size() != py::len(outputs))
      throw py::value_error("CudaGraphIO: one flag per argument and one source per output");
    for (size_t i = 0; i < copied.size(); ++i) {
      const py::handle arg = recorded_args[i];
      RecordedInput r;
      if (THPVariable_Check(arg.ptr())) {
        const at::Tensor& t = THPVariable_Unpack(arg.ptr());
        r.kind = copied[i] ? InputKind::kCopied : InputKind::kBaked;
        if (copied[i]) r.buffer = t;
        r.written = written[i];
        r.address = t.data_ptr();
        r.dtype = t.scalar_type();
        r.device = t.device();
        r.sizes = t.sizes().vec();
        r.strides = t.strides().vec();
      } else {
        r.value = py::reinterpret_borrow<py::object>(arg);
      }
      inputs_.push_back(std::move(r));
    }
    for (size_t j = 0; j < sources.size(); ++j) {
      const py::handle out = outputs[j];
      RecordedOutput o;
      o.source = sources[j];
      if (THPVariable_Check(out.ptr())) {
        const at::Tensor& t = THPVariable_Unpack(out.ptr());
        o.is_tensor = true;
        if (o.source >= 0) {
          const RecordedInput& in = inputs_.at(static_cast<size_t>(o.source));
          const auto delta = static_cast<const char*>(t.data_ptr()) - static_cast<const char*>(in.address);
          if (in.kind == InputKind::kValue || t.scalar_type() != in.dtype || delta < 0 ||
              delta % static_cast<int64_t>(t.element_size()) != 0)
            throw py::value_error("CudaGraphIO: output " + std::to_string(j) + " is not a view of input " +
                                  std::to_string(o.source));
          o.sizes = t.sizes().vec();
          o.strides = t.strides().vec();
          o.element_offset = delta / static_cast<int64_t>(t.element_size());
          o.whole_input = o.element_offset == 0 && t.sizes().equals(in.sizes) && t.strides().equals(in.strides);
          needed_.push_back(o.source);
        } else {
          o.tensor = t;
        }
      } else {
        o.value = py::reinterpret_borrow<py::object>(out);
      }
      outputs_.push_back(std::move(o));
    }
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (inputs_[i].written && inputs_[i].kind == InputKind::kCopied) needed_.push_back(static_cast<int64_t>(i));
  }

  /// When the call fits the recording (every tensor of its dtype, device, sizes and strides,
  /// baked ones at their address, other arguments equal) and no tracked output of the previous
  /// replay is still held: copies the copied inputs into their buffers and returns true. Else
  /// returns false having done nothing.
  bool prepare(const py::sequence& args) {
    if (outputs_held() || py::len(args) != inputs_.size()) return false;
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (!fits(inputs_[i], args[i])) return false;
    c10::AutoGradMode no_grad(false);  // a copy must not enter the buffer into autograd
    call_args_.clear();
    for (int64_t i : needed_) call_args_.emplace_back(i, py::reinterpret_borrow<py::object>(args[i]));
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (inputs_[i].kind != InputKind::kCopied) continue;
      const at::Tensor& t = THPVariable_Unpack(args[i].ptr());
      if (t.data_ptr() != inputs_[i].buffer.data_ptr()) inputs_[i].buffer.copy_(t, /*non_blocking=*/true);
    }
    return true;
  }

  /// After the replay was launched: the inputs it wrote that were copied in are copied back,
  /// and its outputs returned, each tensor a fresh one over the graph's memory or a view of the
  /// call's own argument.
  py::list outputs() {
    c10::AutoGradMode no_grad(false);
    for (const auto& [i, arg] : call_args_) {
      const RecordedInput& in = inputs_[static_cast<size_t>(i)];
      if (in.written && in.kind == InputKind::kCopied) THPVariable_Unpack(arg.ptr()).copy_(in.buffer, true);
    }
    held_.clear();
    py::list result;
    for (const RecordedOutput& o : outputs_) {
      if (!o.is_tensor) {
        result.append(o.value);
      } else if (o.source >= 0) {
        result.append(input_view(o));
      } else {
        auto* keep = new c10::Storage(o.tensor.storage());
        at::Tensor alias = at::for_blob(o.tensor.data_ptr(), o.tensor.sizes())
                               .strides(o.tensor.strides())
                               .context(keep, &release_graph_memory)
                               .options(o.tensor.options())
                               .target_device(o.tensor.device())
                               .make_tensor();
        if (o.source == kGraphMemory) held_.push_back(alias.storage().getWeakStorageImpl());
        result.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(std::move(alias))));
      }
    }
    call_args_.clear();
    return result;
  }

  /// Whether a tracked output of the last replay is still referenced (by the caller, a view
  /// of it, autograd's saved tensors, a .grad).
  bool outputs_held() const {
    for (const auto& w : held_)
      if (!w.expired()) return true;
    return false;
  }

 private:
  /// Output `o` as a view of this call's argument (or the argument itself).
  py::object input_view(const RecordedOutput& o) const {
    for (const auto& [i, arg] : call_args_) {
      if (i != o.source) continue;
      if (o.whole_input) return arg;
      const at::Tensor& t = THPVariable_Unpack(arg.ptr());
      return py::reinterpret_steal<py::object>(
          THPVariable_Wrap(t.as_strided(o.sizes, o.strides, t.storage_offset() + o.element_offset)));
    }
    throw std::logic_error("CudaGraphIO: output source not kept");
  }

  std::vector<RecordedInput> inputs_;
  std::vector<RecordedOutput> outputs_;
  std::vector<int64_t> needed_;  ///< inputs outputs are views of, and written copied ones
  std::vector<std::pair<int64_t, py::object>> call_args_;  ///< this call's, from prepare() to outputs()
  std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> held_;
};

}  // namespace

void register_cuda_graph_io(py::module_& m) {
  py::class_<CudaGraphIO>(m, "CudaGraphIO",
                          "The inputs and outputs of one recorded CUDA graph (cuda_graphs.py)")
      .def(py::init<const py::sequence&, const std::vector<bool>&, const std::vector<bool>&, const py::list&,
                    const std::vector<int64_t>&>(),
           py::arg("recorded_args"), py::arg("copied"), py::arg("written"), py::arg("outputs"), py::arg("sources"))
      .def("prepare", &CudaGraphIO::prepare, py::arg("args"),
           "True (and the changing inputs copied in) when the call fits and the last outputs are free")
      .def("outputs", &CudaGraphIO::outputs, "The replay's outputs, as fresh tensors")
      .def("outputs_held", &CudaGraphIO::outputs_held);
  m.def(
      "is_cuda_graph_output", [](const at::Tensor& t) { return is_graph_output(t); }, py::arg("tensor"),
      "Whether the tensor is an output of a recorded CUDA graph (its memory stays put)");
}

}  // namespace inductor_cpp::python
