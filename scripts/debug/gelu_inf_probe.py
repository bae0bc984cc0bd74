"""Which elements of GELU(Linear(x)) with an +inf input differ between eager and ours."""
import torch, torch.nn.functional as F
import inductor_cpp  # noqa: F401
torch.manual_seed(0)
lin = torch.nn.Linear(64, 48)
x = torch.randn(20, 64); x[0, 5] = float("nan"); x[7, 1] = float("inf")
f = lambda t: F.gelu(lin(t))
with torch.no_grad():
    e = f(x); o = torch.compile(f, backend="inductor_cpp", options={"matrix_kernels": True})(x)
    pre = lin(x)
bad = ~((e == o) | (e.isnan() & o.isnan()) | ((e - o).abs() <= 1e-5 + 1e-4 * e.abs()))
for i, j in bad.nonzero().tolist()[:12]:
    print(f"({i},{j}) pre {pre[i, j].item()} eager {e[i, j].item()} ours {o[i, j].item()}")
print("eager gelu(+inf) vec", F.gelu(torch.full((64,), float("inf")))[:1].tolist(),
      "scalar", F.gelu(torch.tensor([float("inf")])).tolist())
