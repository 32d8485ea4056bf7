#!/usr/bin/env python3
"""Triton's tf32x3 (tl.dot with input_precision="tf32x3") against cuBLAS SGEMM, for docs/BENCHMARKS.md.

Usage: triton_tf32x3.py SIZES LAYOUTS > triton-tf32x3.json     e.g. 4096,8192 nn,nt
Where the device image has Triton and PyTorch. Row-major C = A op(B) as cm-tune's problems: nn takes B
stored K x N (N-major), nt B stored N x K (K-major). For each problem: the best of a few block
configurations (Triton's autotuner), its TF/s and cuBLAS SGEMM's (torch.matmul, TF32 off) timed by
triton.testing.do_bench (L2 cleared before each run), and each one's largest error against an FP64
reference in units of 2^-24 of each element's scale (sum over k of |a||b|), as cm-tune precision.
Prints one JSON object: {"triton": version, "torch": version, "rows": [...]}; exits 2 without Triton
or PyTorch, saying so.
"""
import json
import sys

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as e:  # the device image may lack either
    print(json.dumps({"error": f"not run: {e}"}))
    sys.exit(2)


@triton.autotune(
    configs=[
        triton.Config({"BM": 128, "BN": 128, "BK": 32}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 256, "BK": 32}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 128, "BK": 64}, num_stages=3, num_warps=8),
        triton.Config({"BM": 64, "BN": 128, "BK": 32}, num_stages=4, num_warps=4),
    ],
    key=["M", "N", "K", "sbk", "sbn"],
)
@triton.jit
def matmul_tf32x3(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ka = k0 + rk
        ta = tl.load(a + rm[:, None] * sam + ka[None, :] * sak, mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        tb = tl.load(b + ka[:, None] * sbk + rn[None, :] * sbn, mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(ta, tb, acc, input_precision="tf32x3")
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def error_units(got, ref, scale):
    return float(((got.double() - ref).abs() / scale.clamp_min(1e-300)).max() / 2.0**-24)


def main():
    sizes = [int(s) for s in sys.argv[1].split(",")] if len(sys.argv) > 1 else [4096, 8192]
    layouts = sys.argv[2].split(",") if len(sys.argv) > 2 else ["nn", "nt"]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(1)
    rows = []
    for n in sizes:
        m = k = n
        a = torch.rand(m, k, device="cuda") * 2 - 1
        for layout in layouts:
            b_stored = torch.rand(k, n, device="cuda") * 2 - 1 if layout == "nn" else torch.rand(n, k, device="cuda") * 2 - 1
            b = b_stored if layout == "nn" else b_stored.t()   # op(B), K x N (a view for nt)
            c = torch.empty(m, n, device="cuda")

            def run_triton():
                grid = lambda meta: (triton.cdiv(m, meta["BM"]), triton.cdiv(n, meta["BN"]))
                matmul_tf32x3[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                                    c.stride(1))

            def run_cublas():
                return torch.matmul(a, b)

            run_triton()
            ref = torch.matmul(a.double(), b.double())
            scale = torch.matmul(a.double().abs(), b.double().abs())
            triton_err = error_units(c, ref, scale)
            cublas_err = error_units(run_cublas(), ref, scale)
            flops = 2.0 * m * n * k
            t_triton = triton.testing.do_bench(run_triton, warmup=50, rep=500)
            t_cublas = triton.testing.do_bench(run_cublas, warmup=50, rep=500)
            rows.append({"problem": f"{m}x{n}x{k}" + ("" if layout == "nn" else f":{layout}"),
                         "triton_tflops": flops / t_triton / 1e9, "cublas_tflops": flops / t_cublas / 1e9,
                         "triton_error_units": triton_err, "cublas_error_units": cublas_err,
                         "config": str(matmul_tf32x3.best_config)})
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(json.dumps({"triton": triton.__version__, "torch": torch.__version__,
                      "device": torch.cuda.get_device_name(), "rows": rows}))


if __name__ == "__main__":
    main()
