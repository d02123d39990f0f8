// Chooses the kernel table once per process, from what the CPU and the OS support:
// x86_64: avx512bw > fma3+avx2 > sse2; aarch64 (from HWCAP): the lane-FMA GEMM variant that
// kernels/arm_cores.def names for the CPU's MIDR part (the fastest core's), then the other
// lane-FMA variants, then arm64+neon. PG_KERNELS=<name> (for example "reference", "sse2",
// "arm64+neon+fmla-lane-12x8") picks a named table instead, if this CPU can run it;
// PG_CPU_MIDR=<hex> makes dispatch take the CPU for another core (kernels/arm_cores.hpp).
#include "kernels/dispatch.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/thread_pool.hpp"
#include "kernels/arm_cores.hpp"
#include "kernels/bf16_gemm.hpp"
#include "kernels/fp16_gemm.hpp"
#include "kernels/int8_tile.hpp"
#include "kernels/quant_gemm.hpp"
#include "kernels/kernel_table.hpp"
#include "kernels/reference/reference_kernels.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif
#include <string>

namespace pg::kernels {

namespace {

#if defined(__x86_64__)
// xsimd's own detection reads CPUID only; an OS that does not save the wide registers on a
// context switch (XCR0 bits clear) must not get AVX code, so XGETBV is checked too.
uint64_t read_xcr0() {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (uint64_t(edx) << 32) | eax;
}

struct X86Features {
    bool avx2_fma = false;
    bool avx512bw = false;
    bool avx512_bf16 = false;  // VDPBF16PS (Zen 4, Sapphire Rapids): the bf16-arithmetic GEMM
    bool avx512_vnni = false;  // VPDPBUSD on zmm (Cascade Lake, Zen 4): the int8 tile
    bool avx_vnni = false;     // VPDPBUSD on ymm, VEX (Alder Lake, Zen 5)
};

X86Features detect_x86() {
    X86Features f;
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
    const bool osxsave = ecx & (1u << 27), avx = ecx & (1u << 28), fma = ecx & (1u << 12);
    const bool f16c = ecx & (1u << 29);  // the fp16 conversions of both AVX tables
    if (!osxsave || !avx) return f;
    const uint64_t xcr0 = read_xcr0();
    const bool os_ymm = (xcr0 & 0x6) == 0x6;     // SSE and AVX state
    const bool os_zmm = (xcr0 & 0xe6) == 0xe6;   // plus opmask and both zmm halves
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return f;
    const bool avx2 = ebx & (1u << 5);
    const bool avx512 = (ebx & (1u << 16)) && (ebx & (1u << 17)) && (ebx & (1u << 28)) &&
                        (ebx & (1u << 30));  // F, DQ, CD, BW
    f.avx2_fma = os_ymm && avx2 && fma && f16c;
    f.avx512bw = f.avx2_fma && os_zmm && avx512;
    const bool avx512vl = ebx & (1u << 31);  // the bf16 GEMM's file is built with VL too
    f.avx512_vnni = f.avx512bw && (ecx & (1u << 11));
    if (f.avx2_fma && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
        f.avx512_bf16 = f.avx512bw && avx512vl && (eax & (1u << 5));
        f.avx_vnni = eax & (1u << 4);
    }
    return f;
}
#elif defined(__aarch64__)
// What the Linux (and Android) kernel reports in the ELF auxiliary vector. Every ARMv8-A CPU has
// ASIMD (NEON); the ARMv8.2+ extensions are detected so a phone run can show them. Training
// uses none of them: FP16 arithmetic (fphp, asimdhp) and the int8 dot products (asimddp, i8mm)
// do not give fp32 training results (docs/phone.md). asimdhp enables the opt-in fp16 inference
// GEMM (GemmArgs::fp16_arithmetic, kernels/fp16_gemm.hpp).
struct ArmFeatures {
    bool asimd = false;    // NEON: both aarch64 tables need it
    bool fphp = false;     // scalar FP16 arithmetic (ARMv8.2)
    bool asimdhp = false;  // vector FP16 arithmetic (ARMv8.2)
    bool asimddp = false;  // SDOT/UDOT int8 dot product (ARMv8.2, mandatory from ARMv8.4)
    bool sve = false;
    bool i8mm = false;     // int8 matrix multiply (ARMv8.6)
    bool bf16 = false;     // BFloat16 dot products (ARMv8.6)
};

ArmFeatures detect_arm() {
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    ArmFeatures f;
    f.asimd = hw & HWCAP_ASIMD;
    f.fphp = hw & HWCAP_FPHP;
    f.asimdhp = hw & HWCAP_ASIMDHP;
    f.asimddp = hw & HWCAP_ASIMDDP;
    f.sve = hw & HWCAP_SVE;
    f.i8mm = hw2 & HWCAP2_I8MM;
    f.bf16 = hw2 & HWCAP2_BF16;
    return f;
}
#endif

const KernelTable& make_reference_table() {
    static const KernelTable table = {
        "reference",
        1,
        1,
        1,
        &reference::sgemm,
        &reference::layernorm_forward,
        &reference::layernorm_backward,
        &reference::gelu_forward,
        &reference::gelu_backward,
        &reference::softmax_cross_entropy,
        &reference::softmax,
        &reference::row_max,
        &reference::row_exp_shift,
        &reference::transpose,
        &reference::vexp,
        &reference::vtanh,
        &reference::axpy,
        &reference::dot,
        &reference::sum_squares,
        &reference::dropout_apply,
        &reference::dropout_residual,
        &reference::dropout_mask,
        &reference::adamw,
        &reference::half_to_float,
        &reference::attn_scores,
        &reference::attn_accumulate,
        &reference::rmsnorm_forward,
        &reference::rmsnorm_backward,
        &reference::rope_forward,
        &reference::rope_backward,
        &reference::swiglu_forward,
        &reference::swiglu_backward,
    };
    return table;
}

// The table chosen at first use: PG_KERNELS if it names a table this CPU runs, else the best.
const KernelTable& chosen_table() {
    static const KernelTable* chosen = [] {
        std::vector<const KernelTable*> tables = available_tables();
        if (const char* want = std::getenv("PG_KERNELS")) {
            for (const KernelTable* t : tables)
                if (std::strcmp(t->name, want) == 0) return t;
        }
        return tables.front();
    }();
    return *chosen;
}

bool g_force_reference = false;

}  // namespace

const KernelTable& reference_table() { return make_reference_table(); }

std::vector<const KernelTable*> available_tables() {
    std::vector<const KernelTable*> tables;
#if defined(__x86_64__)
    const X86Features f = detect_x86();
    if (f.avx512bw) tables.push_back(&avx512bw_table());
    if (f.avx2_fma) tables.push_back(&avx2_table());
    tables.push_back(&sse2_table());
#elif defined(__aarch64__)
    // FMLA by element is ARMv8.0 NEON, so every lane GEMM variant runs wherever the xsimd
    // table does; the one chosen for this core comes first.
    if (detect_arm().asimd) {
        static const char* const preferred = lane_variant_for_midr(dispatch_midr());
        for (const KernelTable* t : neon64_lane_tables())
            if (std::strcmp(t->name, preferred) == 0) tables.push_back(t);
        for (const KernelTable* t : neon64_lane_tables())
            if (std::strcmp(t->name, preferred) != 0) tables.push_back(t);
        tables.push_back(&neon64_table());
    }
#endif
    tables.push_back(&reference_table());
    return tables;
}

namespace {

using GemmFn = void (*)(const GemmArgs&);

// The FMLA .8h GEMM where the CPU has vector FP16 arithmetic, else null.
GemmFn fp16_gemm() {
#if defined(__aarch64__)
    static const GemmFn f = detect_arm().asimdhp ? &neon::sgemm_fp16 : nullptr;
    return f;
#else
    return nullptr;
#endif
}

// Whether g goes to the fp16 GEMM on `table`: asked for, an fp16 weight and a plain A, a CPU
// that has it, not the scalar reference, and no partial sum that could overflow (the largest
// |A| is read here, once for the whole product, so every thread of a split decides the same).
bool takes_fp16_gemm(const KernelTable& table, const GemmArgs& g) {
    if (!g.fp16_arithmetic || !g.B16 || g.Bq || g.b16_format != HalfFormat::fp16 || g.trans_a) return false;
    if (g.M <= 0 || g.N <= 0 || g.K <= 0 || &table == &reference_table() || !fp16_gemm()) return false;
#if defined(__aarch64__)
    return fp16_partials_bounded(neon::max_abs(g.A, g.M, g.K, g.lda), g.b16_max_abs);
#else
    return false;
#endif
}

// The VDPBF16PS GEMM where the CPU has AVX512_BF16 (and the AVX-512 table), else null.
GemmFn bf16_gemm() {
#if defined(__x86_64__)
    static const GemmFn f = detect_x86().avx512_bf16 ? &x86::sgemm_bf16 : nullptr;
    return f;
#else
    return nullptr;
#endif
}

// Whether g goes to the bf16 GEMM on `table`: asked for, a bf16 weight and a plain A, a CPU
// that has it, and not the scalar reference.
bool takes_bf16_gemm(const KernelTable& table, const GemmArgs& g) {
    if (!g.bf16_arithmetic || !g.B16 || g.Bq || g.b16_format != HalfFormat::bf16 || g.trans_a) return false;
    return g.M > 0 && g.N > 0 && g.K > 0 && &table != &reference_table() && bf16_gemm();
}

// The GEMM that computes g on `table`.
GemmFn gemm_for(const KernelTable& table, const GemmArgs& g) {
    if (takes_fp16_gemm(table, g)) return fp16_gemm();
    if (takes_bf16_gemm(table, g)) return bf16_gemm();
    return table.sgemm;
}

}  // namespace

std::vector<const Int8Tile*> available_int8_tiles() {
    std::vector<const Int8Tile*> tiles;
#if defined(__x86_64__)
    const X86Features f = detect_x86();
    if (f.avx512_vnni) tiles.push_back(&avx512_vnni_int8_tile());
    if (f.avx_vnni) tiles.push_back(&avx_vnni_int8_tile());
    if (f.avx2_fma) tiles.push_back(&avx2_int8_tile());
#elif defined(__aarch64__)
    const ArmFeatures f = detect_arm();
    if (f.i8mm) tiles.push_back(&i8mm_int8_tile());
    if (f.asimddp) tiles.push_back(&dotprod_int8_tile());
    if (f.asimd) tiles.push_back(&neon_int8_tile());
#endif
    tiles.push_back(&generic_int8_tile());
    return tiles;
}

const Int8Tile& active_int8_tile() {
    static const Int8Tile* best = [] {
        const std::vector<const Int8Tile*> tiles = available_int8_tiles();
        if (const char* want = std::getenv("PG_INT8_KERNEL")) {
            for (const Int8Tile* t : tiles)
                if (std::strcmp(t->name, want) == 0) return t;
        }
        return tiles.front();
    }();
    return &active_table() == &reference_table() ? generic_int8_tile() : *best;
}

const char* fp16_arithmetic_gemm() {
    return fp16_gemm() && &active_table() != &reference_table() ? "arm64+fp16+fmla-8h" : "none";
}

const char* bf16_arithmetic_gemm() {
    return bf16_gemm() && &active_table() != &reference_table() ? "avx512-bf16+vdpbf16ps" : "none";
}

const char* cpu_features() {
    static const std::string features = [] {
        std::string s;
        auto add = [&s](bool has, const char* name) {
            if (has) s += (s.empty() ? "" : " ") + std::string(name);
        };
#if defined(__x86_64__)
        const X86Features f = detect_x86();
        add(true, "sse2");
        add(f.avx2_fma, "avx2 fma f16c");
        add(f.avx512bw, "avx512f avx512dq avx512cd avx512bw");
        add(f.avx512_bf16, "avx512_bf16");
        add(f.avx512_vnni, "avx512_vnni");
        add(f.avx_vnni, "avx_vnni");
#elif defined(__aarch64__)
        const ArmFeatures f = detect_arm();
        add(f.asimd, "asimd");
        add(f.fphp, "fphp");
        add(f.asimdhp, "asimdhp(fp16)");
        add(f.asimddp, "asimddp(dotprod)");
        add(f.sve, "sve");
        add(f.i8mm, "i8mm");
        add(f.bf16, "bf16");
#endif
        return s.empty() ? std::string("none") : s;
    }();
    return features.c_str();
}

const char* cpu_core() {
#if defined(__aarch64__)
    static const std::string core = describe_midr(dispatch_midr());
#else
    static const std::string core = describe_midr(0);
#endif
    return core.c_str();
}

const KernelTable& active_table() {
    return g_force_reference ? reference_table() : chosen_table();
}

const char* active_arch_name() { return active_table().name; }

const char* force_reference(bool on) {
    const char* previous = active_arch_name();
    g_force_reference = on;
    return previous;
}

GemmArgs gemm_args(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda,
                   const float* B, int ldb, float* C, int ldc, float alpha, float beta) {
    GemmArgs g;
    g.trans_a = trans_a;
    g.trans_b = trans_b;
    g.M = M;
    g.N = N;
    g.K = K;
    g.alpha = alpha;
    g.A = A;
    g.lda = lda;
    g.B = B;
    g.ldb = ldb;
    g.beta = beta;
    g.C = C;
    g.ldc = ldc;
    return g;
}

void sgemm(const GemmArgs& g) { gemm_for(active_table(), g)(g); }

// Small products are not worth splitting: on this 2-vCPU VM a split GEMM pays ~15-25 us over
// its share of the work (waking the idle worker core, each thread packing its own B, cold
// caches; an empty parallel_for alone is ~4 us), so it only pays above ~16 MFLOP (N = K = 128
// NT, best of 2000: M = 256 34 us serial, 41 us split; M = 512 66 vs 60 us). A product with a
// narrow side (N or K under 16: a rank-8 LoRA factor's x A^T, t B^T, u A) does few flops per
// byte, so its time is what it streams: 1 MB of A or C (about 50 us at 20 GB/s) repays a split
// with fewer flops (x A^T at 1024 x 8 x 512, 8.4 MFLOP: 154 us serial).
bool gemm_worth_splitting(const GemmArgs& g) {
    if (2.0 * g.M * g.N * g.K >= 1.6e7) return true;
    const bool narrow = g.N < 16 || g.K < 16;
    return narrow && int64_t(g.M) * std::max(g.N, g.K) >= (int64_t(1) << 18);
}

void sgemm_parallel_with(const KernelTable& table, const GemmArgs& g, ThreadPool& pool) {
    if (g.M <= 0 || g.N <= 0) return;
    // The fp16 and bf16 GEMMs compute each element of C by the same operations wherever its
    // tile falls too, so the split below keeps them bitwise equal to the serial call.
    const GemmFn gemm = gemm_for(table, g);
    // Each thread computes whole register tiles of C with the full K, so the result is the
    // same bit for bit for any thread count (the kernels compute every element of C by the
    // same sequence of operations wherever its tile falls). Split the longer side of C: rows
    // for activations (M = B*T), columns for a weight gradient whose M (output features) is
    // shorter than N; chunks are multiples of the tile so no thread gets extra edge tiles.
    // A weight gradient dy^T x (trans_a) is always split by columns, at vector granularity
    // (N = 128 in 48-column panels would split 96 + 32): split by rows, every thread would
    // pack the whole of x, one row per token, instead of its own columns of it.
    const bool weight_gradient = g.trans_a && g.N >= 2 * table.gemm_lanes;
    const bool split_rows =
        !weight_gradient && int64_t(g.M) * table.gemm_nr >= int64_t(g.N) * table.gemm_mr;
    const int unit = split_rows        ? table.gemm_mr
                     : weight_gradient ? table.gemm_lanes
                                       : table.gemm_nr;
    const int extent = split_rows ? g.M : g.N;
    const int64_t units = (extent + unit - 1) / unit;
    if (pool.size() == 1 || units < 2 || !gemm_worth_splitting(g)) {
        gemm(g);
        return;
    }
    pool.parallel_for(units, [&](int, int64_t begin, int64_t end) {
        const int first = int(begin) * unit;
        const int count = std::min(extent, int(end) * unit) - first;
        GemmArgs part = g;
        if (split_rows) {
            part.M = count;
            part.A = g.trans_a ? g.A + first : g.A + int64_t(first) * g.lda;
            part.C = g.C + int64_t(first) * g.ldc;
            if (g.gelu_out) part.gelu_out = g.gelu_out + int64_t(first) * g.ldc;
            if (g.gelu_grad_input)
                part.gelu_grad_input = g.gelu_grad_input + int64_t(first) * g.ldc;
        } else {
            part.N = count;
            const int64_t b_offset = g.trans_b ? int64_t(first) * g.ldb : first;
            if (g.B) part.B = g.B + b_offset;
            if (g.B16) part.B16 = g.B16 + b_offset;
            part.bq_offset = g.bq_offset + b_offset;
            part.C = g.C + first;
            if (g.gelu_out) part.gelu_out = g.gelu_out + first;
            if (g.gelu_grad_input) part.gelu_grad_input = g.gelu_grad_input + first;
            if (g.bias) part.bias = g.bias + first;
        }
        gemm(part);
    });
}

void sgemm_parallel(const GemmArgs& g, ThreadPool& pool) {
    sgemm_parallel_with(active_table(), g, pool);
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int64_t rows, int C, float eps) {
    active_table().layernorm_forward(out, mean, rstd, x, w, b, rows, C, eps);
}
void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int64_t rows, int C) {
    active_table().layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, rows, C);
}
void rmsnorm_forward(float* out, float* rstd, const float* x, const float* w, int64_t rows, int C, float eps) {
    active_table().rmsnorm_forward(out, rstd, x, w, rows, C, eps);
}
void rmsnorm_backward(float* dx, float* dw, const float* dout, const float* x, const float* w, const float* rstd,
                      int64_t rows, int C) {
    active_table().rmsnorm_backward(dx, dw, dout, x, w, rstd, rows, C);
}
void rope_forward(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads, int head_dim) {
    active_table().rope_forward(x, ld, cos, sin, rows, n_heads, head_dim);
}
void rope_backward(float* x, int64_t ld, const float* cos, const float* sin, int64_t rows, int n_heads,
                   int head_dim) {
    active_table().rope_backward(x, ld, cos, sin, rows, n_heads, head_dim);
}
void swiglu_forward(float* out, const float* gate, const float* up, int64_t n) {
    active_table().swiglu_forward(out, gate, up, n);
}
void swiglu_backward(float* dgate, float* dup, const float* gate, const float* up, const float* dout, int64_t n) {
    active_table().swiglu_backward(dgate, dup, gate, up, dout, n);
}
void gelu_forward(float* out, const float* x, int64_t n) { active_table().gelu_forward(out, x, n); }
void gelu_backward(float* dx, const float* x, const float* dout, int64_t n) {
    active_table().gelu_backward(dx, x, dout, n);
}
float softmax_cross_entropy(const float* logits, int V, int target, float* dlogits, float dscale) {
    return active_table().softmax_cross_entropy(logits, V, target, dlogits, dscale);
}
void softmax(float* out, const float* x, int n) { active_table().softmax(out, x, n); }
float row_max(const float* x, int64_t n, int64_t width) {
    return active_table().row_max(x, n, width);
}
float row_exp_shift(float* x, int64_t n, int64_t width, float shift) {
    return active_table().row_exp_shift(x, n, width, shift);
}
void attn_scores(float* S, int64_t lds, const float* A, int64_t lda, const float* Bt, int64_t ldb,
                 int M, int N, int K, float alpha, int diag) {
    active_table().attn_scores(S, lds, A, lda, Bt, ldb, M, N, K, alpha, diag);
}
void attn_accumulate(float* C, int64_t ldc, const float* A, int64_t lda, bool trans_a, const float* B,
                     int64_t ldb, int M, int N, int K, int diag) {
    active_table().attn_accumulate(C, ldc, A, lda, trans_a, B, ldb, M, N, K, diag);
}
void transpose(float* dst, int64_t ldd, const float* src, int64_t lds, int rows, int cols) {
    active_table().transpose(dst, ldd, src, lds, rows, cols);
}
void vexp(float* out, const float* x, int64_t n) { active_table().vexp(out, x, n); }
void vtanh(float* out, const float* x, int64_t n) { active_table().vtanh(out, x, n); }
void axpy(float* y, float a, const float* x, int64_t n) { active_table().axpy(y, a, x, n); }
float dot(const float* a, const float* b, int64_t n) { return active_table().dot(a, b, n); }
double sum_squares(const float* x, int64_t n) { return active_table().sum_squares(x, n); }
void dropout_apply(float* out, const float* in, int64_t n, const DropoutArgs& d) {
    active_table().dropout_apply(out, in, n, d);
}
void dropout_residual(float* out, const float* x, const float* branch, int64_t n,
                      const DropoutArgs& d) {
    active_table().dropout_residual(out, x, branch, n, d);
}
void dropout_mask(float* mask, int64_t n, const DropoutArgs& d) {
    active_table().dropout_mask(mask, n, d);
}
void adamw(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1,
           float beta2, float eps, float weight_decay, float bc1, float bc2) {
    active_table().adamw(p, g, m, v, n, lr, beta1, beta2, eps, weight_decay, bc1, bc2);
}
void half_to_float(float* out, const uint16_t* in, int64_t n, HalfFormat format) {
    active_table().half_to_float(out, in, n, format);
}

}  // namespace pg::kernels
