"""CUDA smoke test of the ATen-fallback runtime: resnet18 inference and an MLP training step on
the GPU through inductor_cpp, compared with eager (see gpu_smoke.sh)."""

import copy
import json

import torch
import torchvision

import inductor_cpp

assert torch.cuda.is_available(), "no GPU"
dev = torch.device("cuda")
torch.manual_seed(0)
results = {"device": torch.cuda.get_device_name()}

model = torchvision.models.resnet18(weights=None).eval().to(dev)
x = torch.randn(16, 3, 224, 224, device=dev)
with torch.no_grad():
    expected = model(x)
    actual = torch.compile(model, backend=inductor_cpp.backend)(x)
results["resnet18_max_abs_err"] = (actual - expected).abs().max().item()
results["resnet18_ok"] = torch.allclose(actual, expected, rtol=1e-3, atol=1e-3)

mlp = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512),
                          torch.nn.Linear(512, 10)).to(dev)
compiled_mlp = copy.deepcopy(mlp)
cm = torch.compile(compiled_mlp, backend=inductor_cpp.backend)
xb, yb = torch.randn(64, 256, device=dev), torch.randint(0, 10, (64,), device=dev)
torch.nn.functional.cross_entropy(mlp(xb), yb).backward()
torch.nn.functional.cross_entropy(cm(xb), yb).backward()
results["mlp_grad_max_abs_err"] = max((p.grad - q.grad).abs().max().item()
                                      for p, q in zip(mlp.parameters(), compiled_mlp.parameters()))
results["mlp_ok"] = results["mlp_grad_max_abs_err"] < 1e-4
results["counters"] = inductor_cpp.counters()
print(json.dumps(results, indent=1))
assert results["resnet18_ok"] and results["mlp_ok"]
