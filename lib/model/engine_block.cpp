// The engine's layers (see engine.cpp for the engine as a whole): the embedding (encoder) and
// the transformer blocks, forward and backward, with the LayerNorm and dropout steps between them.
#include <cstring>
#include <vector>

#include "model/engine_impl.hpp"

namespace pg {

using namespace engine_detail;

namespace {

// LayerNorm, or RMSNorm (rms: weight only, mean unused) over rows of C.
void layernorm_forward(bool rms, float* out, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int N, int C, float eps, ThreadPool& pool) {
    for_rows(pool, N, [&](int, int64_t r0, int64_t r1) {
        if (rms)
            k::rmsnorm_forward(out + r0 * C, rstd + r0, x + r0 * C, w, r1 - r0, C, eps);
        else
            k::layernorm_forward(out + r0 * C, mean + r0, rstd + r0, x + r0 * C, w, b, r1 - r0, C, eps);
    });
}

// dx[N, C] += the norm's input gradient; dw, db [C] += weight gradients (summed per thread,
// then added in thread order), unless dw is null (a frozen base: the kernel computes the sums
// alongside dx anyway, they are just not kept). RMSNorm has no db.
void layernorm_backward(bool rms, float* dx, float* dw, float* db, const float* dout, const float* x,
                        const float* w, const float* mean, const float* rstd, int N, int C,
                        ThreadPool& pool, StepProfile* profile) {
    StepProfile::Scope phase(profile, "backward layernorm");
    const int nt = pool.size();
    if (profile) profile->add_bytes(int64_t(N) * (3 * C + 2) * 4, int64_t(N) * C * 4);
    std::vector<float> partial(size_t(nt) * 2 * C, 0.0f);
    pool.parallel_for(N, [&](int t, int64_t r0, int64_t r1) {
        float* pw = partial.data() + size_t(t) * 2 * C;
        if (rms)
            k::rmsnorm_backward(dx + r0 * C, pw, dout + r0 * C, x + r0 * C, w, rstd + r0, r1 - r0, C);
        else
            k::layernorm_backward(dx + r0 * C, pw, pw + C, dout + r0 * C, x + r0 * C, w, mean + r0,
                                  rstd + r0, r1 - r0, C);
    });
    if (!dw) return;
    StepProfile::Scope reduction(profile, kReductionPhase);
    for (int t = 0; t < nt; ++t) {
        const float* pw = partial.data() + size_t(t) * 2 * C;
        for (int i = 0; i < C; ++i) dw[i] += pw[i];
        if (!rms)
            for (int i = 0; i < C; ++i) db[i] += pw[C + i];
    }
}

// out[N, C] = dout * dropout mask (the gradient flowing into a dropped branch).
void dropout_backward(float* out, const float* dout, int N, int C, const Dropout& d,
                      DropoutPlace place, int layer, ThreadPool& pool) {
    pool.parallel_for(N, [&](int, int64_t r0, int64_t r1) {
        const int64_t i = r0 * C;
        k::dropout_apply(out + i, dout + i, (r1 - r0) * C, dropout_args(d, place, layer, uint64_t(i)));
    });
}

}  // namespace

// ----------------------------------------------------------------------------------------
// encoder: resid[0][b,t,:] = dropout(wte[inputs[b,t]] + wpe[first_position + t]) (no wpe with
// rotary positions)

void Engine::Impl::encoder_forward(const WeightsView& v, const int32_t* inputs, int B, int T,
                                   const Dropout& d, ThreadPool& pool, int first_position) {
    StepProfile::Scope phase(profile, "forward encoder");
    const int C = cfg.n_embd;
    traffic(2 * int64_t(B) * T * C, int64_t(B) * T * C);
    const bool drop = dropout_active(d);
    const WeightMatrix wte = v.matrix(kWte);
    const float* wpe = dims.rotary ? nullptr : v.f32[kWpe];
    float* out = resid[0];
    for_rows(pool, int64_t(B) * T, [&](int, int64_t r0, int64_t r1) {
        for (int64_t n = r0; n < r1; ++n) {
            float* o = out + n * C;
            // A 16-bit embedding row is widened into the output row itself, then summed.
            const float* we = wte.row(inputs[n], C, o);
            if (wpe) {
                const float* pe = wpe + (first_position + n % T) * C;
                for (int i = 0; i < C; ++i) o[i] = we[i] + pe[i];
            } else if (we != o) {
                std::memcpy(o, we, sizeof(float) * size_t(C));
            }
            if (drop) k::dropout_apply(o, o, C, dropout_args(d, kDropEmbedding, 0, uint64_t(n * C)));
        }
    });
}

// dresid holds d(loss)/d(resid[0]); it is consumed (dropout applied in place).
void Engine::Impl::encoder_backward(const GptTensors<float>& g, const int32_t* inputs, int B, int T,
                                    const Dropout& d, ThreadPool& pool) {
    StepProfile::Scope phase(profile, "backward encoder");
    const int C = cfg.n_embd;
    const int64_t N = int64_t(B) * T;
    if (dropout_active(d)) {
        traffic(N * C, N * C);
        dropout_backward(dresid, dresid, int(N), C, d, kDropEmbedding, 0, pool);
    }
    // wpe by positions, wte by channels: each thread reads rows of every sequence.
    const int nt = pool.size();
    traffic(2 * N * C + 2 * int64_t(T) * C, int64_t(T) * C + N * C, 2 * N * C * (nt - 1) / nt);
    const float* dx = dresid;
    // wpe: each thread owns positions and sums over the batch in order.
    if (!dims.rotary) pool.parallel_for(T, [&](int, int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t)
            for (int b = 0; b < B; ++b) k::axpy(g.wpe + t * C, 1.0f, dx + (int64_t(b) * T + t) * C, C);
    });
    // wte: each thread owns a slice of the channels and walks all positions in order, so
    // repeated tokens never race.
    pool.parallel_for(C, [&](int, int64_t c0, int64_t c1) {
        for (int64_t n = 0; n < N; ++n) {
            float* row = g.wte + int64_t(inputs[n]) * C;
            const float* dr = dx + n * C;
            for (int64_t c = c0; c < c1; ++c) row[c] += dr[c];
        }
    });
}

// ----------------------------------------------------------------------------------------
// one transformer block: x [N, C] -> out [N, C]

// a: where this layer's activations go (its own slot, or a shared one when nothing needs
// to be kept). out == nullptr: only rebuild what the backward pass reads (recomputation),
// skipping the MLP's output projection, whose result is already in the residual stream.
// training: the pass will be followed by a backward pass (the hook's dropout is on).
// cached (the KV-cached pass of one sequence, B = 1): attention reads and extends the
// cache instead of attending within the batch; on the last layer only the last row goes on
// past the cache update, so `out` then holds one row.
void Engine::Impl::block_forward(const WeightsView& v, int l, LayerActs& a, const float* x, float* out,
                                 int B, int T, const Dropout& d, bool training, ThreadPool& pool,
                                 const CachedPass* cached) {
    const Dims& D = dims;
    const int C = D.C;
    const GptTensors<const float> w = v.fp32_tensors();
    int N = B * T;
    ln2_layer = -1;  // ln_out gets ln_1's output
    {
        StepProfile::Scope phase(profile, kForwardLayerNormPhase[recomputing]);
        traffic(int64_t(N) * C, int64_t(N) * (C + 2));
        layernorm_forward(D.rms, ln_out, a.ln1_mean, a.ln1_rstd, x, w.ln1w + l * C, D.rms ? nullptr : w.ln1b + l * C,
                          N, C, cfg.layernorm_eps, pool);
    }
    linear(l, LinearKind::attn_qkv, a.qkv, ln_out, v.matrix(kQkvw).at(int64_t(l) * D.QKV * C),
           cfg.qkv_bias ? w.qkvb + int64_t(l) * D.QKV : nullptr, N, C, D.QKV, false, d, training, pool);
    if (cfg.qk_norm || D.rotary)
        qk_forward(a, cfg.qk_norm ? w.qnorm + l * D.hd : nullptr, cfg.qk_norm ? w.knorm + l * D.hd : nullptr, B, T,
                   cached ? cached_cos.data() : rope_cos.data(), cached ? cached_sin.data() : rope_sin.data(), pool);
    if (cached) {
        store_keys_values(*cached->cache, l, a.qkv, N, cached->first);
        const float* q = a.qkv;
        int first = cached->first;
        if (cached->last_row_only && N > 1) {
            // Every row's keys and values are cached; only the last row predicts.
            q += int64_t(N - 1) * D.QKV;
            x += int64_t(N - 1) * C;
            first += N - 1;
            N = 1;
        }
        attention_cached(a.atty, q, N, first, *cached->cache, l, pool);
    } else {
        attention_forward(a, l, B, T, d, pool);
    }
    const float* attproj_bias = cfg.linear_bias ? w.attprojb + l * C : nullptr;
    const float* fc_bias = cfg.linear_bias ? w.fcb + int64_t(l) * D.F : nullptr;
    const float* fcproj_bias = cfg.linear_bias ? w.fcprojb + l * C : nullptr;
    linear_residual(l, LinearKind::attn_proj, a.res2, x, a.atty, v.matrix(kAttprojw).at(int64_t(l) * C * D.Q),
                    attproj_bias, N, D.Q, C, d, kDropAttnProj, training, pool);
    {
        StepProfile::Scope phase(profile, kForwardLayerNormPhase[recomputing]);
        traffic(int64_t(N) * C, int64_t(N) * (C + 2));
        layernorm_forward(D.rms, ln_out, a.ln2_mean, a.ln2_rstd, a.res2, w.ln2w + l * C,
                          D.rms ? nullptr : w.ln2b + l * C, N, C, cfg.layernorm_eps, pool);
    }
    ln2_layer = l;
    // fch = ln_2(x) W_fc^T + b, and its GELU into big_a (when recomputing, for the backward
    // pass that follows, which reads it first); SwiGLU's gate and up, then silu(gate) * up
    linear(l, LinearKind::mlp_fc, a.fch, ln_out, v.matrix(kFcw).at(int64_t(l) * D.F * C), fc_bias, N, C, D.F, false,
           d, training, pool, D.swiglu ? nullptr : big_a);
    if (D.swiglu) swiglu_rows(big_a, a.fch, N, D.H, pool);
    gelu_layer = l;
    if (!out) return;
    linear_residual(l, LinearKind::mlp_proj, out, a.res2, big_a, v.matrix(kFcprojw).at(int64_t(l) * C * D.H),
                    fcproj_bias, N, D.H, C, d, kDropMlpProj, training, pool);
}

// dresid: d(loss)/d(resid[l+1]) on entry, d(loss)/d(resid[l]) on exit. g == nullptr: a
// frozen base (no weight gradient is computed; input gradients and the hook's still are, as
// far down as an adapted linear reads them: see backward_floor).
void Engine::Impl::block_backward(const WeightsView& v, const GptTensors<float>* g, int l, int B, int T,
                                  const Dropout& d, ThreadPool& pool) {
    const Dims& D = dims;
    const int C = D.C, N = B * T;
    const GptTensors<const float> w = v.fp32_tensors();
    const bool drop = dropout_active(d);
    LayerActs& a = slot(l);
    const float* x = resid[size_t(l)];
    float* dln = branch;  // branch is free in the backward pass
    // This layer's weight gradients, or nulls for a frozen base or a tensor the model lacks.
    using G = GptTensors<float>;
    auto grad = [&](float* G::*tensor, int64_t per_layer, bool present = true) -> float* {
        return g && present ? g->*tensor + l * per_layer : nullptr;
    };
    // What this layer's backward must produce. A trained base needs all of it (its weight
    // gradients read every layer's inputs; the embeddings take the gradient below layer 0). A
    // frozen one needs a linear's input only where the hook adapts it, and a gradient only
    // where an adapted linear at or below it reads it.
    auto trains = [&](LinearKind kind) { return g != nullptr || hook_for(l, kind) != nullptr; };
    const bool qkv = trains(LinearKind::attn_qkv), proj = trains(LinearKind::attn_proj);
    const bool fc = trains(LinearKind::mlp_fc), fcproj = trains(LinearKind::mlp_proj);
    const bool below = g != nullptr || l > backward_floor;  // d(loss)/d(resid[l]) is read below
    const bool attn_grad = below || qkv;                     // d(attention output)
    const bool res2_grad = attn_grad || proj;                // d(res2), through the MLP
    const bool fch_grad = res2_grad || fc;                   // d(fc output), through the activation
    const bool lb = cfg.linear_bias, nb = !D.rms;
    // d(loss)/d(a branch's output) from dresid: through its dropout mask into branch, or dresid.
    auto branch_gradient = [&](DropoutPlace place) -> const float* {
        if (!drop) return dresid;
        StepProfile::Scope phase(profile, "backward dropout");
        traffic(int64_t(N) * C, int64_t(N) * C);
        dropout_backward(branch, dresid, N, C, d, place, l, pool);
        return branch;
    };
    // A norm's output into ln_out again, from its input and saved statistics.
    auto recompute_layernorm = [&](float* mean, float* rstd, const float* in, const float* gain,
                                   const float* bias) {
        StepProfile::Scope phase(profile, "backward recompute (gelu, layernorm)");
        traffic(int64_t(N) * (C + 2), int64_t(N) * C);
        layernorm_forward(D.rms, ln_out, mean, rstd, in, gain, bias, N, C, cfg.layernorm_eps, pool);
    };

    // resid[l+1] = res2 + dropout(fcproj(act(fch)))
    const float* dfcproj = branch_gradient(kDropMlpProj);
    if (fcproj && gelu_layer != l) {
        StepProfile::Scope phase(profile, "backward recompute (gelu, layernorm)");
        traffic(int64_t(N) * D.F, int64_t(N) * D.H);
        if (D.swiglu)
            swiglu_rows(big_a, a.fch, N, D.H, pool);
        else
            gelu_rows(big_a, a.fch, N, D.H, pool);  // recompute the GELU output
    }
    const bool have_ln2 = ln2_layer == l;
    gelu_layer = ln2_layer = -1;  // big_a and ln_out are overwritten from here on
    // GELU: dfch = gelu'(fch) * d(GELU output), into big_a (the GELU output is no longer
    // needed). SwiGLU: d(silu(gate) * up) into big_a, then d(gate), d(up) over fch in place.
    float* dfch = D.swiglu ? a.fch : big_a;
    linear_backward(l, LinearKind::mlp_proj, fch_grad ? big_a : nullptr, grad(&G::fcprojw, int64_t(C) * D.H),
                    grad(&G::fcprojb, C, lb), dfcproj, big_a, v.matrix(kFcprojw).at(int64_t(l) * C * D.H), N,
                    D.H, C, d, pool, D.swiglu ? nullptr : a.fch);
    if (!fch_grad) return;
    if (D.swiglu) {
        StepProfile::Scope phase(profile, "backward swiglu");
        traffic(int64_t(N) * (D.F + D.H), int64_t(N) * D.F);
        const int H = D.H;
        for_rows(pool, N, [&](int, int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
                float* row = a.fch + r * 2 * H;
                k::swiglu_backward(row, row + H, row, row + H, big_a + r * H, H);
            }
        });
    }
    if (fc && !have_ln2)
        recompute_layernorm(a.ln2_mean, a.ln2_rstd, a.res2, w.ln2w + l * C, nb ? w.ln2b + l * C : nullptr);
    linear_backward(l, LinearKind::mlp_fc, res2_grad ? dln : nullptr, grad(&G::fcw, int64_t(D.F) * C),
                    grad(&G::fcb, D.F, lb), dfch, ln_out, v.matrix(kFcw).at(int64_t(l) * D.F * C), N, C,
                    D.F, d, pool);
    if (!res2_grad) return;
    layernorm_backward(D.rms, dresid, grad(&G::ln2w, C), grad(&G::ln2b, C, nb), dln, a.res2,
                       w.ln2w + l * C, a.ln2_mean, a.ln2_rstd, N, C, pool, profile);

    // res2 = x + dropout(attproj(attention(qkv(ln_1(x)))))
    const float* dattproj = branch_gradient(kDropAttnProj);
    linear_backward(l, LinearKind::attn_proj, attn_grad ? datty : nullptr, grad(&G::attprojw, int64_t(C) * D.Q),
                    grad(&G::attprojb, C, lb), dattproj, a.atty, v.matrix(kAttprojw).at(int64_t(l) * C * D.Q), N,
                    D.Q, C, d, pool);
    if (!attn_grad) return;
    float* dqkv = big_a;
    attention_backward(dqkv, datty, a, l, B, T, d, pool);
    if (cfg.qk_norm || D.rotary)
        qk_backward(dqkv, a, cfg.qk_norm ? w.qnorm + l * D.hd : nullptr, cfg.qk_norm ? w.knorm + l * D.hd : nullptr,
                    grad(&G::qnorm, D.hd, cfg.qk_norm), grad(&G::knorm, D.hd, cfg.qk_norm), B, T, pool);
    if (qkv) recompute_layernorm(a.ln1_mean, a.ln1_rstd, x, w.ln1w + l * C, nb ? w.ln1b + l * C : nullptr);
    linear_backward(l, LinearKind::attn_qkv, below ? dln : nullptr, grad(&G::qkvw, int64_t(D.QKV) * C),
                    grad(&G::qkvb, D.QKV, cfg.qkv_bias), dqkv, ln_out, v.matrix(kQkvw).at(int64_t(l) * D.QKV * C), N,
                    C, D.QKV, d, pool);
    if (!below) return;
    layernorm_backward(D.rms, dresid, grad(&G::ln1w, C), grad(&G::ln1b, C, nb), dln, x,
                       w.ln1w + l * C, a.ln1_mean, a.ln1_rstd, N, C, pool, profile);
}

}  // namespace pg
