"""Bench subcommands over models, each at tiny sizes: `zoo` (eval and training checks, and the
default results path bench/results/), `dynamic` (a model over four shapes), and `train`'s
--mk-off / --profile flags and extra models. No timing is asserted."""

from __future__ import annotations

import json
import socket

import torch
from torch import nn

from inductor_cpp.bench import __main__ as bench_main
from inductor_cpp.bench import train_models, zoo


class TinyNet(nn.Module):
    """A classifier with what the zoo's models have: convolution, BatchNorm, ReLU, pooling."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))

    def forward(self, x):
        return self.body(x)


def test_results_go_to_bench_results_by_default(monkeypatch, tmp_path):
    monkeypatch.setattr(bench_main, "repo_root", lambda: str(tmp_path))
    expected = tmp_path / "bench" / "results" / f"micro-{socket.gethostname()}-3t.json"
    assert bench_main.default_json_path("micro", 3) == str(expected)


def test_zoo_checks_eval_and_writes_default_results(monkeypatch, tmp_path):
    monkeypatch.setattr(bench_main, "repo_root", lambda: str(tmp_path))
    monkeypatch.setattr(zoo, "build_zoo_model", lambda name, image: TinyNet())
    rc = bench_main.main(["zoo", "tiny", "--image", "8", "--threads", "1"])
    assert rc == 0
    (path,) = (tmp_path / "bench" / "results").glob("zoo-*-1t.json")  # the default path
    data = json.loads(path.read_text())
    assert data["ok"]
    (model,) = data["models"]
    assert [c["check"] for c in model["checks"]] == [
        "eval cl=0 b2", "eval cl=0 b3", "eval cl=1 b2", "eval cl=1 b3"]
    assert all(c["ok"] for c in model["checks"])


def test_zoo_checks_training_gradients_against_float64():
    check = zoo.check_train(TinyNet(), image=8, channels_last=True)
    assert check["ok"] and check["grads"] == 6 and check["check"] == "train cl=1"


def test_zoo_reports_a_model_that_raises(monkeypatch):
    def broken(name, image):
        raise RuntimeError("no such model")

    monkeypatch.setattr(zoo, "build_zoo_model", broken)
    args = bench_main.build_parser().parse_args(["zoo", "broken"])
    result = zoo.check_model("broken", args)
    assert not result["ok"] and "no such model" in result["error"]


def test_dynamic_shapes_run(tmp_path):
    out = tmp_path / "dynamic.json"
    rc = bench_main.main(["dynamic", "--small", "--variant", "symbolic", "--rounds", "1",
                          "--threads", "1", "--json", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["shapes"] == "2x6x32, 2x7x32, 2x8x32, 2x9x32"
    assert len(data["resident_mib"]) == 4 and data["timing"]["symbolic"]["median_s"] > 0


def test_train_with_matrix_kernels_off_and_a_profile(tmp_path, capsys):
    out = tmp_path / "train.json"
    rc = bench_main.main(["train", "--only", "mlp", "--size", "test", "--no-stock", "--mk-off",
                          "--profile", "3", "--iters", "1", "--warmup", "0", "--check-steps",
                          "2", "--threads", "1", "--json", str(out)])
    assert rc == 0
    assert "mlp / ours mk=off: self CPU time" in capsys.readouterr().out
    (result,) = json.loads(out.read_text())["results"]
    assert set(result["variants"]) == {"eager", "ours", "ours mk=off"}
    assert result["variants"]["ours mk=off"]["correct"]


def test_extra_training_models_build():
    for name, shape in (("encoder", (2, 16, 64)), ("resnet18", (2, 3, 32, 32))):
        model, x, target = train_models.build_model(name, "test")
        assert x.shape == shape and target.shape == (2,)
        assert model(x).shape == (2, 10)
    assert train_models.build_model("resnet18")[1].is_contiguous(
        memory_format=torch.channels_last)
