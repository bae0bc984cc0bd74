"""The GPU probes' parts that need no GPU: gpu_ptx's PTX rewrites (on a small hand-written PTX
function shaped like LLVM's output) and gpu_raw's file naming. The launches themselves run on
the GPU machine only (`python -m inductor_cpp.bench gpu_raw`)."""

from __future__ import annotations

from inductor_cpp.bench import gpu_ptx, gpu_raw

PTX = """\
.visible .entry k(
\t.param .u64 k_param_0,
\t.param .u64 k_param_1,
\t.param .u64 k_param_2
)
{
\tld.param.u64 \t%rd1, [k_param_0];
\tld.param.u64 \t%rd2, [k_param_1];
\tld.param.u64 \t%rd3, [k_param_2];
\tadd.s64 \t%rd4, %rd1, 16;
$L__BB0_1:
\tld.global.f32 \t%f1, [%rd4];
\tst.global.f32 \t[%rd3], %f1;
\tld.global.f32 \t%f2, [%rd4+4];
\tst.global.f32 \t[%rd3+4], %f2;
\tld.global.f32 \t%f3, [%rd2];
\tst.global.f32 \t[%rd3+8], %f3;
\tbra.uni \t$L__BB0_1;
}
"""


def test_registers_are_traced_from_their_parameter():
    regs = gpu_ptx.param_registers(PTX)
    assert regs[0] == {"%rd1", "%rd4"} and regs[1] == {"%rd2"} and regs[2] == {"%rd3"}


def test_loads_move_ahead_of_the_stores():
    text, moved = gpu_ptx.loads_ahead(PTX, 8)
    assert moved == 2
    assert text.index("%f2, [%rd4+4]") < text.index("st.global") and "ld.global.nc" not in text
    nc, _ = gpu_ptx.loads_ahead(PTX, 8, non_coherent=True)
    assert nc.count("ld.global.nc.f32") == 2  # the moved loads only


def test_cache_hints_by_buffer():
    text = gpu_ptx.hinted(PTX, x_l2="evict_first", store=".cs")
    assert "createpolicy.fractional.L2::evict_first.b64 %rdpol_evict_first" in text
    assert text.count("ld.global.L2::cache_hint.f32") == 2  # the loads of parameter 0
    assert "ld.global.f32 \t%f3, [%rd2];" in text  # the other buffer's load as it was
    assert text.count("st.global.cs.f32") == 3
    variants = gpu_ptx.ptx_variants(PTX, "layernorm")
    assert {"ptx nc", "ptx ahead8", "ptx ahead8 nc", "ptx x L2 evict_first",
            "ptx wb L2 evict_last"} <= set(variants)


def test_ptx_files_are_named_by_case_label_entry_and_launch(tmp_path):
    (tmp_path / "sum1__unrolled__k__g264_b256.ptx").write_text("x")
    (tmp_path / "sum0__other__k__g1_b1.ptx").write_text("y")
    assert gpu_raw.file_variants("sum1", str(tmp_path)) == [("unrolled", "k", b"x", 264, 256)]
    assert gpu_raw.file_variants("sum1", "") == []
