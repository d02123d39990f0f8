#include "lora/lora_hook.hpp"

#include <string>

#include "core/error.hpp"
#include "kernels/dispatch.hpp"

namespace pg::lora {

namespace {

// Grows a scratch buffer to at least n floats (contents are overwritten by every user).
float* scratch(AlignedBuffer<float>& b, int64_t n) {
    if (b.size() < static_cast<std::size_t>(n)) b.resize(static_cast<std::size_t>(n));
    return b.data();
}

kernels::DropoutArgs lora_dropout(float p, int layer, LinearKind kind, const LinearHookContext& ctx) {
    kernels::DropoutArgs d;
    d.seed = ctx.seed;
    d.stream = ctx.stream * 16 + kLoraDropoutSlot + static_cast<uint64_t>(kind);
    d.first_index = uint64_t(layer) << 40;
    d.p = p;
    d.scale = 1.0f / (1.0f - p);
    return d;
}

void check_shape(const AdaptedLinear& m, int n_in, int n_out) {
    require(m.in == n_in && m.out == n_out, PG_ERR_INTERNAL,
            "lora hook: layer " + std::to_string(m.layer) + " " + linear_kind_name(m.target) +
                " is [" + std::to_string(n_out) + ", " + std::to_string(n_in) +
                "] in the engine but the adapter has [" + std::to_string(m.out) + ", " +
                std::to_string(m.in) + "]");
}

}  // namespace

LoraHook::LoraHook(const Adapter& adapter, float* grads) : adapter_(adapter), grads_(grads) {}

const float* LoraHook::branch_input(int layer, LinearKind kind, const float* in, int64_t rows,
                                    int n_in, const LinearHookContext& ctx) {
    const float p = adapter_.config().dropout;
    if (!ctx.training || p == 0.0f) return in;
    const int64_t n = rows * n_in;
    float* x = scratch(scratch_x_, n);
    const kernels::DropoutArgs base = lora_dropout(p, layer, kind, ctx);
    ctx.pool.parallel_for(n, [&](int, int64_t begin, int64_t end) {
        kernels::DropoutArgs d = base;
        d.first_index += static_cast<uint64_t>(begin);
        kernels::dropout_apply(x + begin, in + begin, end - begin, d);
    });
    return x;
}

void LoraHook::forward(int layer, LinearKind kind, const float* in, int64_t rows, int n_in,
                       float* out, int n_out, const LinearHookContext& ctx) {
    const AdaptedLinear* m = adapter_.find(layer, kind);
    if (!m) return;
    check_shape(*m, n_in, n_out);
    const int r = adapter_.config().rank, R = static_cast<int>(rows);
    const float* x = branch_input(layer, kind, in, rows, n_in, ctx);
    float* t = scratch(scratch_t_, rows * r);
    // T [R, r] = x~ [R, in] A^T;  out [R, out] += scale T B^T.
    kernels::sgemm_parallel(kernels::gemm_args(false, true, R, r, n_in, x, n_in, adapter_.a(*m), n_in, t, r), ctx.pool);
    kernels::sgemm_parallel(kernels::gemm_args(false, true, R, n_out, r, t, r, adapter_.b(*m), r, out, n_out,
                                               adapter_.scale(), 1.0f),
                            ctx.pool);
}

void LoraHook::backward(int layer, LinearKind kind, const float* in, const float* dout, int64_t rows,
                        int n_in, float* din, int n_out, const LinearHookContext& ctx) {
    const AdaptedLinear* m = adapter_.find(layer, kind);
    if (!m) return;
    check_shape(*m, n_in, n_out);
    require(grads_ != nullptr, PG_ERR_INTERNAL, "lora hook: backward without a gradient buffer");
    const int r = adapter_.config().rank, R = static_cast<int>(rows);
    const float scale = adapter_.scale();
    const float* A = adapter_.a(*m);
    const float* B = adapter_.b(*m);
    const float* x = branch_input(layer, kind, in, rows, n_in, ctx);
    float* t = scratch(scratch_t_, rows * r);
    float* u = scratch(scratch_u_, rows * r);
    auto& pool = ctx.pool;
    // T [R, r] = x~ A^T (as in forward), U [R, r] = scale dout [R, out] B [out, r].
    kernels::sgemm_parallel(kernels::gemm_args(false, true, R, r, n_in, x, n_in, A, n_in, t, r), pool);
    kernels::sgemm_parallel(kernels::gemm_args(false, false, R, r, n_out, dout, n_out, B, r, u, r, scale), pool);
    // dB [out, r] += scale dout^T T;  dA [r, in] += U^T x~.
    kernels::sgemm_parallel(kernels::gemm_args(true, false, n_out, r, R, dout, n_out, t, r,
                                               grads_ + m->b_offset, r, scale, 1.0f),
                            pool);
    if (!adapter_.config().freeze_a)
        kernels::sgemm_parallel(kernels::gemm_args(true, false, r, n_in, R, u, r, x, n_in,
                                                   grads_ + m->a_offset, n_in, 1.0f, 1.0f),
                                pool);
    // din [R, in] += mask * (U A): straight into din without dropout, through the mask with it.
    if (x == in) {
        kernels::sgemm_parallel(kernels::gemm_args(false, false, R, n_in, r, u, r, A, n_in, din, n_in, 1.0f, 1.0f), pool);
        return;
    }
    const int64_t n = rows * n_in;
    float* dx = scratch(scratch_dx_, n);
    kernels::sgemm_parallel(kernels::gemm_args(false, false, R, n_in, r, u, r, A, n_in, dx, n_in), pool);
    const kernels::DropoutArgs base = lora_dropout(adapter_.config().dropout, layer, kind, ctx);
    pool.parallel_for(n, [&](int, int64_t begin, int64_t end) {
        kernels::DropoutArgs d = base;
        d.first_index += static_cast<uint64_t>(begin);
        kernels::dropout_residual(din + begin, din + begin, dx + begin, end - begin, d);
    });
}

}  // namespace pg::lora
