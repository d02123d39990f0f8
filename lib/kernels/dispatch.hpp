// The kernel API: every hot loop of the library, behind one table chosen once per process for
// the CPU it runs on (x86: avx512bw > fma3+avx2 > sse2; aarch64: NEON, with a GEMM around FMLA
// by element). Each kernel has a plain scalar twin in kernels/reference, which is the truth the
// fast versions are tested against (tests/unit/test_kernels.cpp).
//
// All arrays are row-major fp32 unless stated. Kernels are single-threaded; callers split work
// across a ThreadPool (sgemm_parallel does it for GEMM) so results are deterministic for a given
// thread count.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quant_blocks.hpp"

namespace pg {
class ThreadPool;
}

namespace pg::kernels {

// C[M,N] = alpha * op(A) * op(B) + beta * C (+ bias[N] broadcast over rows, if bias != null).
// op(A) is [M,K]: A is [M,K] (lda >= K) or, with trans_a, [K,M] (lda >= M).
// op(B) is [K,N]: B is [K,N] (ldb >= N) or, with trans_b, [N,K] (ldb >= K).
// A linear layer y = x W^T + b with W [out,in] is trans_b = true; its input gradient
// dx = dy W is plain; its weight gradient dW += dy^T x is trans_a = true, beta = 1.
// beta = 0 means C is not read (it may hold NaN).
//
// The MLP's GELU can be fused into its two GEMMs (at most one of the two pointers set), applied
// to each register tile of C while it is still in L1, so the [rows, 4C] activations are not
// read back from memory; both arrays are [M, N] with C's ldc, and both use the GELU of
// gelu_forward / gelu_backward:
//   gelu_out:        gelu_out[i, j] = gelu(C[i, j]) as well;
//   gelu_grad_input: C[i, j] = gelu'(gelu_grad_input[i, j]) * C[i, j] (the GELU backward).

// The 16-bit float formats of a frozen weight (GemmArgs::B16, half_to_float): IEEE binary16 and
// bfloat16 (the top half of an fp32).
enum class HalfFormat : uint8_t { fp16, bf16 };

struct GemmArgs {
    bool trans_a = false;
    bool trans_b = false;
    int M = 0, N = 0, K = 0;
    float alpha = 1.0f;
    const float* A = nullptr;
    int lda = 0;
    const float* B = nullptr;
    int ldb = 0;
    float beta = 0.0f;
    float* C = nullptr;
    int ldc = 0;
    const float* bias = nullptr;
    float* gelu_out = nullptr;
    const float* gelu_grad_input = nullptr;
    // A frozen 16-bit weight as B (a LoRA base stored in fp16 or bf16): when set, op(B) is read
    // from B16 in b16_format, with ldb and trans_b as for B (B is ignored). Each value is
    // converted to fp32 (exactly) while the GEMM packs its B panels (FCVTL on NEON, F16C or
    // AVX-512 on x86), so C equals, bit for bit, what the same table computes from an fp32 copy
    // of the weight, without the copy: half the weight's memory and memory traffic.
    const uint16_t* B16 = nullptr;
    HalfFormat b16_format = HalfFormat::fp16;
    // Inference only (never a training pass): with an fp16 B16 and a plain A, multiply in fp16
    // where the CPU has ARMv8.2's FP16 arithmetic (FMLA .8h, 8 lanes; kernels/fp16_gemm.hpp):
    // A rounded to fp16, partial sums of 16 products in fp16 folded into fp32 accumulators.
    // Not exact: relative RMS error about 6e-4 against the exact product (docs/phone.md).
    // Everywhere else (no FP16 arithmetic, the reference table, bf16, a transposed A), and when
    // b16_max_abs times the largest |A| could overflow a partial sum, the exact GEMM runs.
    // b16_max_abs: an upper bound of |B16| (the weight's largest magnitude).
    bool fp16_arithmetic = false;
    float b16_max_abs = 0.0f;
    // Training and inference: with a bf16 B16 and a plain A, multiply in bfloat16 where the CPU
    // has AVX512_BF16 (VDPBF16PS, twice the multiply-adds per instruction of an fp32 FMA;
    // kernels/bf16_gemm.hpp): op(A) rounded to bf16 while it is packed, products of bf16 pairs
    // added into fp32 accumulators. Not exact (A loses 16 of its 24 significand bits; PyTorch's
    // bf16 autocast makes the same trade). bf16 has fp32's range, so nothing can overflow that
    // fp32 would not. Everywhere else (no AVX512_BF16, the reference table, fp16, a transposed
    // A) the exact GEMM runs.
    bool bf16_arithmetic = false;
    // A frozen block-quantized weight as B (kernels/quant_blocks.hpp): when set, op(B) is read
    // from the block stream Bq in bq_format, element (r, c) of the stored matrix being stream
    // element bq_offset + r * ldb + c (ldb = the stored row length, a multiple of kQuantBlock;
    // B and B16 are ignored). Each value is decoded to fp32 while the GEMM packs its B panels, so C
    // equals, bit for bit, what the same table computes from the dequantized fp32 weight.
    const void* Bq = nullptr;
    QuantFormat bq_format = QuantFormat::q8_0;
    int64_t bq_offset = 0;
};

// A GemmArgs for C[M, N] = alpha op(A) op(B) + beta C (bias and fused GELU unset: set them on
// the result).
GemmArgs gemm_args(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda,
                   const float* B, int ldb, float* C, int ldc, float alpha = 1.0f,
                   float beta = 0.0f);

void sgemm(const GemmArgs& g);
// Splits C into per-thread blocks of whole register tiles and runs sgemm on each. Every element
// of C is computed by the same operations whatever the split, so the result is bitwise the same
// as sgemm's for any thread count.
void sgemm_parallel(const GemmArgs& g, ThreadPool& pool);
// Whether a product is big enough to repay splitting it across threads (what sgemm_parallel
// decides by; callers that split a product their own way ask the same).
bool gemm_worth_splitting(const GemmArgs& g);

// LayerNorm over rows of C: out = (x - mean) * rstd * w + b; stores mean and rstd per row.
void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int64_t rows, int C, float eps);
// dx += ..., dw += ..., db += ... (accumulating; callers give each thread its own dw/db).
void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int64_t rows, int C);

// tanh-approximate GELU (GPT-2's "gelu_new"). backward: dx += gelu'(x) * dout.
void gelu_forward(float* out, const float* x, int64_t n);
void gelu_backward(float* dx, const float* x, const float* dout, int64_t n);

// The Llama family's row kernels (Hugging Face's formulas, in fp32).
// RMSNorm over rows of C: out = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps), stored per row.
void rmsnorm_forward(float* out, float* rstd, const float* x, const float* w, int64_t rows, int C, float eps);
// dx += ..., dw += ... (accumulating, as layernorm_backward).
void rmsnorm_backward(float* dx, float* dw, const float* dout, const float* x, const float* w, const float* rstd,
                      int64_t rows, int C);
// Rotary positions, rotate-half pairing, in place on `rows` rows of n_heads heads of head_dim
// (row r starts at x + r * ld): element i < half = head_dim / 2 of a head pairs with i + half,
// (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin), with row r's angles cos/sin[r * half + i].
// rope_backward applies the transpose (the rotation by minus the angle) to a gradient.
void rope_forward(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads, int head_dim);
void rope_backward(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads,
                   int head_dim);
// SwiGLU's gate: out = silu(gate) * up, silu(g) = g / (1 + exp(-g)). backward writes (not adds)
// dgate = dout * up * silu'(gate) and dup = dout * silu(gate). The SIMD tables use the fast
// sigmoid (kernels/simd/fast_math.hpp).
void swiglu_forward(float* out, const float* gate, const float* up, int64_t n);
void swiglu_backward(float* dgate, float* dup, const float* gate, const float* up, const float* dout, int64_t n);

// Cross-entropy of one row of logits [V] (V = the real vocabulary, padding excluded) against
// target: returns -log softmax(logits)[target]. If dlogits != null, writes
// dlogits = dscale * (softmax(logits) - onehot(target)); dlogits may be logits (in place).
float softmax_cross_entropy(const float* logits, int V, int target, float* dlogits, float dscale);

// Numerically safe softmax of one row: out[i] = exp(x[i] - max) / sum (out may alias x).
// The SIMD tables use a fast exp: relative error <= 4e-7 (kernels/simd/fast_math.hpp).
void softmax(float* out, const float* x, int n);
// The pieces of a causal (flash-attention) softmax over one row of a score tile, whose first n
// of width entries are visible (1 <= n <= width). row_max: the largest visible entry.
// row_exp_shift: x[i] = exp(x[i] - shift) for i < n (the fast exp of softmax) and 0 for
// n <= i < width; returns the sum over i < n. Both may read all width entries, so the SIMD
// tables run whole vectors and mask, instead of a scalar tail on every row.
float row_max(const float* x, int64_t n, int64_t width);
float row_exp_shift(float* x, int64_t n, int64_t width, float shift);
// The products of one causal-attention tile (the engine's flash attention; K is the head size,
// 32 at the PhoneGPT shape, too shallow for the blocked GEMM to pay for its set-up): a tile of
// queries [q0, q0 + M) against keys [k0, k0 + N) of one head, where query row i sees key column
// j when j <= i + diag (diag = q0 - k0). Fully hidden parts are skipped: about half of a
// diagonal tile.
// attn_scores: S[i * lds + j] = alpha * sum_k A[i * lda + k] * Bt[k * ldb + j] for every
//   visible j < N (A: the queries [M, K]; Bt: the keys transposed, [K, N]). Hidden entries of S
//   are unspecified (a table may write them or not): callers mask them (row_exp_shift).
// attn_accumulate: C[M, N] += op(A) B, op(A) [M, K] being A [M, K] (lda) or, with trans_a, the
//   transpose of A [K, M]; B [K, N] (ldb). op(A) must be 0 where the mask hides it, and a table
//   may skip those products: plain (rows are queries, k keys: P V, dS K) where k > i + diag;
//   transposed (rows are keys, k queries: P^T dY, dS^T Q) where i > k + diag.
// Rounding: one fused multiply-add per product where the table has FMA (SSE2: a multiply and an
// add), summed in k order, then alpha applied (scores) or the sum added to C (accumulate).
void attn_scores(float* S, int64_t lds, const float* A, int64_t lda, const float* Bt, int64_t ldb,
                 int M, int N, int K, float alpha, int diag);
void attn_accumulate(float* C, int64_t ldc, const float* A, int64_t lda, bool trans_a, const float* B,
                     int64_t ldb, int M, int N, int K, int diag);
// dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols (a copy: exact on every table).
// The SIMD tables gather a column of W rows at a time (one head's K or V slice to [hs, T]).
void transpose(float* dst, int64_t ldd, const float* src, int64_t lds, int rows, int cols);
// Elementwise exp and tanh, with the same fast approximations as softmax and GELU (exp:
// relative error <= 4e-7 on [-87, 88]; tanh: absolute error <= 6e-7). out may alias x.
void vexp(float* out, const float* x, int64_t n);
void vtanh(float* out, const float* x, int64_t n);

// out[i] = in[i] as fp32, for n 16-bit floats of the given format (exact; NaN stays NaN).
void half_to_float(float* out, const uint16_t* in, int64_t n, HalfFormat format);

// y[i] += a * x[i]; dot product; sum of squares accumulated in double (gradient norms).
void axpy(float* y, float a, const float* x, int64_t n);
float dot(const float* a, const float* b, int64_t n);
double sum_squares(const float* x, int64_t n);

// One AdamW step over n parameters: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p -= lr * (m / bc1 / (sqrt(v / bc2) + eps) + weight_decay * p), bc = 1 - beta^t.
void adamw(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1,
           float beta2, float eps, float weight_decay, float bc1, float bc2);

// Dropout with the counter-hash masks of lib/core/rng.hpp: element i of a call is kept when
// counter_uniform(seed, stream, first_index + i) >= p (model/dropout_mask.hpp maps a model's
// dropout sites to seed, stream and index). The SIMD tables compute the same hash many lanes at a
// time and apply the mask without branches, bit for bit equal to the scalar reference.
struct DropoutArgs {
    uint64_t seed = 0;
    uint64_t stream = 0;
    uint64_t first_index = 0;  // the hash index of element 0
    float p = 0.0f;            // drop probability, in [0, 1)
    float scale = 1.0f;        // what survivors are multiplied by (1 / (1 - p))
};
// out[i] = keep(i) ? in[i] * scale : 0 (out may alias in).
void dropout_apply(float* out, const float* in, int64_t n, const DropoutArgs& d);
// out[i] = x[i] + (keep(i) ? branch[i] * scale : 0): a dropped branch added to the residual
// stream (out may alias x or branch); the product and the sum are rounded separately (no fused
// multiply-add), on every table.
void dropout_residual(float* out, const float* x, const float* branch, int64_t n,
                      const DropoutArgs& d);
// mask[i] = keep(i) ? scale : 0, for callers that use the mask more than once.
void dropout_mask(float* mask, int64_t n, const DropoutArgs& d);

// The GEMM GemmArgs::fp16_arithmetic selects on this CPU: "arm64+fp16+fmla-8h" where HWCAP
// reports asimdhp (and the active table is not the reference), else "none" (the exact GEMM).
const char* fp16_arithmetic_gemm();

// The GEMM GemmArgs::bf16_arithmetic selects on this CPU: "avx512-bf16+vdpbf16ps" where CPUID
// reports AVX512_BF16 (and the active table is not the reference), else "none" (the exact GEMM).
const char* bf16_arithmetic_gemm();

// Which table is active ("avx512bw", "fma3+avx2", "sse2", "arm64+neon+fmla-lane" or one of its
// variants, "arm64+neon", "reference").
const char* active_arch_name();
// The core dispatch chose the aarch64 GEMM variant for: "cortex-a76 (MIDR 0x414fd0b1)" (see
// kernels/arm_cores.hpp); "MIDR unknown" where there is none (x86, or no way to read it).
const char* cpu_core();
// The CPU features dispatch detected, space-separated (static storage). x86_64: "sse2 avx2
// fma f16c avx512f avx512dq avx512cd avx512bw avx512_bf16 avx512_vnni avx_vnni" as far as the CPU
// and the OS allow;
// aarch64, from HWCAP:
// "asimd fphp asimdhp(fp16) asimddp(dotprod) sve i8mm bf16" as present. Benchmarks print
// it so a figure can be matched to the hardware.
const char* cpu_features();
// Forces the scalar reference table (tests and PG_KERNELS=reference); returns the previous
// name. Not thread-safe: call before any work starts.
const char* force_reference(bool on);

}  // namespace pg::kernels
