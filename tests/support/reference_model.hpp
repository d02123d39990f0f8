// The scalar reference GPT-2: the truth the engine is tested against, and the model whose
// analytic gradient is checked against finite differences (tests/unit/test_model_gradcheck.cpp).
//
// Written like llm.c's train_gpt2.c: every layer is a forward/backward pair of plain loops with
// shape comments, single-threaded, every activation kept. Templated on the number type so the
// gradient check can run in double while the engine comparison runs in float.
//
//   x0   = dropout(wte[tokens] + wpe[positions])                         [B, T, C]
//   per layer:
//     x  = x + dropout(attn_proj(attention(qkv(layernorm_1(x)))))       causal, dropout on probs
//     x  = x + dropout(mlp_proj(gelu(mlp_fc(layernorm_2(x)))))
//   logits = layernorm_f(x) . wte^T                                      [B, T, Vp]
//   loss   = cross-entropy over the first V columns (padding rows are never predicted)
//
// Usage: ReferenceGpt<double> m(cfg, B, T); m.forward(params, inputs, targets, ...);
// m.backward(grads, scale) adds scale * d(sum of scored losses)/d(params) into grads.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "model/config.hpp"
#include "model/dropout_mask.hpp"
#include "model/engine.hpp"
#include "model/params.hpp"

namespace pg {
namespace ref {

// ---------------------------------------------------------------------------------------------
// encoder: out[b,t,:] = wte[inp[b,t],:] + wpe[t,:]

template <class Real>
void encoder_forward(Real* out,                 // [B, T, C]
                     const int32_t* inp,        // [B, T]
                     const Real* wte,           // [Vp, C]
                     const Real* wpe,           // [maxT, C]
                     int B, int T, int C) {
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
            Real* o = out + (int64_t(b) * T + t) * C;
            const Real* we = wte + int64_t(inp[b * T + t]) * C;
            const Real* pe = wpe + int64_t(t) * C;
            for (int i = 0; i < C; ++i) o[i] = we[i] + pe[i];
        }
}

template <class Real>
void encoder_backward(Real* dwte, Real* dwpe,  // [Vp, C], [maxT, C]
                      const Real* dout,        // [B, T, C]
                      const int32_t* inp, int B, int T, int C) {
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
            const Real* d = dout + (int64_t(b) * T + t) * C;
            Real* dwe = dwte + int64_t(inp[b * T + t]) * C;
            Real* dpe = dwpe + int64_t(t) * C;
            for (int i = 0; i < C; ++i) {
                dwe[i] += d[i];
                dpe[i] += d[i];
            }
        }
}

// ---------------------------------------------------------------------------------------------
// layernorm over the last dimension: out = (x - mean) / sqrt(var + eps) * w + b

template <class Real>
void layernorm_forward(Real* out, Real* mean, Real* rstd,  // [N, C], [N], [N]
                       const Real* inp,                    // [N, C]
                       const Real* w, const Real* b,       // [C], [C]
                       int64_t N, int C, Real eps) {
    for (int64_t n = 0; n < N; ++n) {
        const Real* x = inp + n * C;
        Real m = 0;
        for (int i = 0; i < C; ++i) m += x[i];
        m /= C;
        Real v = 0;
        for (int i = 0; i < C; ++i) v += (x[i] - m) * (x[i] - m);
        v /= C;
        const Real s = Real(1) / std::sqrt(v + eps);
        Real* o = out + n * C;
        for (int i = 0; i < C; ++i) o[i] = (x[i] - m) * s * w[i] + b[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

template <class Real>
void layernorm_backward(Real* dinp, Real* dw, Real* db,  // [N, C], [C], [C] (accumulated)
                        const Real* dout, const Real* inp, const Real* w,
                        const Real* mean, const Real* rstd, int64_t N, int C) {
    for (int64_t n = 0; n < N; ++n) {
        const Real* d = dout + n * C;
        const Real* x = inp + n * C;
        const Real m = mean[n], s = rstd[n];
        Real dnorm_mean = 0, dnorm_norm_mean = 0;
        for (int i = 0; i < C; ++i) {
            const Real norm = (x[i] - m) * s;
            dnorm_mean += w[i] * d[i];
            dnorm_norm_mean += w[i] * d[i] * norm;
        }
        dnorm_mean /= C;
        dnorm_norm_mean /= C;
        Real* dx = dinp + n * C;
        for (int i = 0; i < C; ++i) {
            const Real norm = (x[i] - m) * s;
            const Real dnorm = w[i] * d[i];
            db[i] += d[i];
            dw[i] += norm * d[i];
            dx[i] += s * (dnorm - dnorm_mean - norm * dnorm_norm_mean);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// linear layer: out = inp . w^T + bias, w is [OC, C] (llm.c / PyTorch layout)

template <class Real>
void matmul_forward(Real* out,                   // [N, OC]
                    const Real* inp,             // [N, C]
                    const Real* w,               // [OC, C]
                    const Real* bias,            // [OC] or null
                    int64_t N, int C, int OC) {
    for (int64_t n = 0; n < N; ++n)
        for (int o = 0; o < OC; ++o) {
            Real acc = bias ? bias[o] : Real(0);
            const Real* x = inp + n * C;
            const Real* wr = w + int64_t(o) * C;
            for (int i = 0; i < C; ++i) acc += x[i] * wr[i];
            out[n * OC + o] = acc;
        }
}

template <class Real>
void matmul_backward(Real* dinp, Real* dw, Real* dbias,  // [N, C], [OC, C], [OC] (accumulated)
                     const Real* dout, const Real* inp, const Real* w,  // [N, OC], [N, C], [OC, C]
                     int64_t N, int C, int OC) {
    for (int64_t n = 0; n < N; ++n) {
        const Real* d = dout + n * OC;
        const Real* x = inp + n * C;
        Real* dx = dinp + n * C;
        for (int o = 0; o < OC; ++o) {
            const Real* wr = w + int64_t(o) * C;
            Real* dwr = dw + int64_t(o) * C;
            for (int i = 0; i < C; ++i) {
                dx[i] += d[o] * wr[i];
                dwr[i] += d[o] * x[i];
            }
            if (dbias) dbias[o] += d[o];
        }
    }
}

// ---------------------------------------------------------------------------------------------
// causal multi-head attention with dropout on the probabilities.
// qkv holds [q | k | v] per position, each C = NH * hs wide, head h at columns h*hs.
// preatt = q.k / sqrt(hs) (masked to t2 <= t), att = softmax(preatt),
// att_drop = att * mask (mask = 0 or 1/(1-p); null = no dropout), out = att_drop . v

template <class Real>
void attention_forward(Real* out,                     // [B, T, C]
                       Real* preatt, Real* att,       // [B, NH, T, T]
                       Real* att_drop,                // [B, NH, T, T]
                       const Real* qkv,               // [B, T, 3C]
                       const Real* mask,              // [B, NH, T, T] or null
                       int B, int T, int C, int NH) {
    const int hs = C / NH;
    const Real scale = Real(1) / std::sqrt(Real(hs));
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int t = 0; t < T; ++t) {
                const int64_t row = ((int64_t(b) * NH + h) * T + t) * T;
                const Real* q = qkv + (int64_t(b) * T + t) * 3 * C + h * hs;
                Real maxv = -INFINITY;
                for (int t2 = 0; t2 <= t; ++t2) {
                    const Real* k = qkv + (int64_t(b) * T + t2) * 3 * C + C + h * hs;
                    Real s = 0;
                    for (int i = 0; i < hs; ++i) s += q[i] * k[i];
                    s *= scale;
                    preatt[row + t2] = s;
                    if (s > maxv) maxv = s;
                }
                Real sum = 0;
                for (int t2 = 0; t2 <= t; ++t2) {
                    att[row + t2] = std::exp(preatt[row + t2] - maxv);
                    sum += att[row + t2];
                }
                for (int t2 = 0; t2 < T; ++t2) {
                    // positions after t are masked out: probability 0 (the causal mask)
                    att[row + t2] = t2 <= t ? att[row + t2] / sum : Real(0);
                    att_drop[row + t2] = mask ? att[row + t2] * mask[row + t2] : att[row + t2];
                }
                Real* o = out + (int64_t(b) * T + t) * C + h * hs;
                for (int i = 0; i < hs; ++i) o[i] = 0;
                for (int t2 = 0; t2 <= t; ++t2) {
                    const Real* v = qkv + (int64_t(b) * T + t2) * 3 * C + 2 * C + h * hs;
                    for (int i = 0; i < hs; ++i) o[i] += att_drop[row + t2] * v[i];
                }
            }
}

template <class Real>
void attention_backward(Real* dqkv,                   // [B, T, 3C] (accumulated)
                        const Real* dout,             // [B, T, C]
                        const Real* qkv,              // [B, T, 3C]
                        const Real* att,              // [B, NH, T, T]
                        const Real* att_drop,         // [B, NH, T, T]
                        const Real* mask,             // [B, NH, T, T] or null
                        int B, int T, int C, int NH) {
    const int hs = C / NH;
    const Real scale = Real(1) / std::sqrt(Real(hs));
    std::vector<Real> datt(T);
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h)
            for (int t = 0; t < T; ++t) {
                const int64_t row = ((int64_t(b) * NH + h) * T + t) * T;
                const Real* d = dout + (int64_t(b) * T + t) * C + h * hs;
                // out = att_drop . v
                for (int t2 = 0; t2 <= t; ++t2) {
                    const Real* v = qkv + (int64_t(b) * T + t2) * 3 * C + 2 * C + h * hs;
                    Real* dv = dqkv + (int64_t(b) * T + t2) * 3 * C + 2 * C + h * hs;
                    Real datt_drop = 0;
                    for (int i = 0; i < hs; ++i) {
                        datt_drop += d[i] * v[i];
                        dv[i] += att_drop[row + t2] * d[i];
                    }
                    datt[t2] = mask ? datt_drop * mask[row + t2] : datt_drop;
                }
                // softmax: dpreatt_j = att_j * (datt_j - sum_k att_k datt_k)
                Real dot_att = 0;
                for (int t2 = 0; t2 <= t; ++t2) dot_att += att[row + t2] * datt[t2];
                const Real* q = qkv + (int64_t(b) * T + t) * 3 * C + h * hs;
                Real* dq = dqkv + (int64_t(b) * T + t) * 3 * C + h * hs;
                for (int t2 = 0; t2 <= t; ++t2) {
                    const Real dpre = att[row + t2] * (datt[t2] - dot_att) * scale;
                    const Real* k = qkv + (int64_t(b) * T + t2) * 3 * C + C + h * hs;
                    Real* dk = dqkv + (int64_t(b) * T + t2) * 3 * C + C + h * hs;
                    for (int i = 0; i < hs; ++i) {
                        dq[i] += dpre * k[i];
                        dk[i] += dpre * q[i];
                    }
                }
            }
}

// ---------------------------------------------------------------------------------------------
// GELU, tanh approximation (GPT-2's "gelu_new")

template <class Real>
void gelu_forward(Real* out, const Real* inp, int64_t n) {
    const Real k = std::sqrt(Real(2) / Real(M_PI));
    for (int64_t i = 0; i < n; ++i) {
        const Real x = inp[i];
        out[i] = Real(0.5) * x * (Real(1) + std::tanh(k * (x + Real(0.044715) * x * x * x)));
    }
}

template <class Real>
void gelu_backward(Real* dinp, const Real* inp, const Real* dout, int64_t n) {
    const Real k = std::sqrt(Real(2) / Real(M_PI));
    for (int64_t i = 0; i < n; ++i) {
        const Real x = inp[i];
        const Real th = std::tanh(k * (x + Real(0.044715) * x * x * x));
        const Real sech2 = Real(1) - th * th;
        const Real grad = Real(0.5) * (Real(1) + th) +
                          Real(0.5) * x * sech2 * k * (Real(1) + Real(3) * Real(0.044715) * x * x);
        dinp[i] += grad * dout[i];
    }
}

// ---------------------------------------------------------------------------------------------
// residual add and dropout (mask holds 0 for dropped elements, 1/(1-p) for kept ones)

template <class Real>
void residual_forward(Real* out, const Real* a, const Real* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <class Real>
void residual_backward(Real* da, Real* db, const Real* dout, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

// Fills mask[0..n) for one site: 1/(1-p) where dropout_keep, else 0.
template <class Real>
void dropout_make_mask(Real* mask, int64_t n, const Dropout& d, DropoutPlace place, int layer) {
    const Real keep_scale = Real(1) / (Real(1) - Real(d.p));
    for (int64_t i = 0; i < n; ++i)
        mask[i] = dropout_keep(d, place, layer, uint64_t(i)) ? keep_scale : Real(0);
}

template <class Real>
void dropout_forward(Real* out, const Real* inp, const Real* mask, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = inp[i] * mask[i];
}

template <class Real>
void dropout_backward(Real* dinp, const Real* dout, const Real* mask, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dinp[i] += dout[i] * mask[i];
}

// ---------------------------------------------------------------------------------------------
// softmax cross-entropy over the first V of Vp logit columns; target < 0 is not scored.

template <class Real>
void crossentropy_forward(Real* losses,        // [N]
                          Real* probs,         // [N, V]
                          const Real* logits,  // [N, Vp]
                          const int32_t* targets, int64_t N, int V, int Vp) {
    for (int64_t n = 0; n < N; ++n) {
        const Real* l = logits + n * Vp;
        Real* p = probs + n * V;
        Real maxv = l[0];
        for (int i = 1; i < V; ++i) maxv = l[i] > maxv ? l[i] : maxv;
        Real sum = 0;
        for (int i = 0; i < V; ++i) {
            p[i] = std::exp(l[i] - maxv);
            sum += p[i];
        }
        for (int i = 0; i < V; ++i) p[i] /= sum;
        losses[n] = targets[n] >= 0 ? -(l[targets[n]] - maxv - std::log(sum)) : Real(0);
    }
}

// dlogits[n, i] += scale * (probs - onehot(target)) for scored rows; padding columns get 0.
template <class Real>
void crossentropy_softmax_backward(Real* dlogits,       // [N, Vp]
                                   const Real* probs,   // [N, V]
                                   const int32_t* targets, Real scale, int64_t N, int V, int Vp) {
    for (int64_t n = 0; n < N; ++n) {
        if (targets[n] < 0) continue;
        for (int i = 0; i < V; ++i)
            dlogits[n * Vp + i] += scale * (probs[n * V + i] - (i == targets[n] ? Real(1) : Real(0)));
    }
}

}  // namespace ref

// ---------------------------------------------------------------------------------------------
// The whole model, for a fixed batch geometry B x T (T <= n_ctx).

template <class Real>
class ReferenceGpt {
public:
    ReferenceGpt(const ModelConfig& cfg, int B, int T) : cfg_(cfg), layout_(cfg), B_(B), T_(T) {
        validate_model_config(cfg);
        require(B >= 1 && T >= 1 && T <= cfg.n_ctx, PG_ERR_INVALID_ARGUMENT,
                "ReferenceGpt: need B >= 1 and 1 <= T <= n_ctx");
        const int64_t N = int64_t(B) * T, C = cfg.n_embd, L = cfg.n_layer;
        const int64_t att = int64_t(B) * cfg.n_head * T * T;
        auto alloc = [](std::vector<Real>& v, int64_t n) { v.assign(size_t(n), Real(0)); };
        alloc(a_.encoded, N * C);
        alloc(a_.emb_mask, N * C);
        alloc(a_.x0, N * C);
        alloc(a_.ln1, L * N * C);
        alloc(a_.ln1_mean, L * N);
        alloc(a_.ln1_rstd, L * N);
        alloc(a_.qkv, L * N * 3 * C);
        alloc(a_.preatt, L * att);
        alloc(a_.att, L * att);
        alloc(a_.att_drop, L * att);
        alloc(a_.att_mask, L * att);
        alloc(a_.atty, L * N * C);
        alloc(a_.attproj, L * N * C);
        alloc(a_.attproj_mask, L * N * C);
        alloc(a_.attproj_drop, L * N * C);
        alloc(a_.residual2, L * N * C);
        alloc(a_.ln2, L * N * C);
        alloc(a_.ln2_mean, L * N);
        alloc(a_.ln2_rstd, L * N);
        alloc(a_.fch, L * N * 4 * C);
        alloc(a_.fch_gelu, L * N * 4 * C);
        alloc(a_.fcproj, L * N * C);
        alloc(a_.fcproj_mask, L * N * C);
        alloc(a_.fcproj_drop, L * N * C);
        alloc(a_.residual3, L * N * C);
        alloc(a_.lnf, N * C);
        alloc(a_.lnf_mean, N);
        alloc(a_.lnf_rstd, N);
        alloc(a_.logits, N * cfg.padded_vocab_size);
        alloc(a_.probs, N * cfg.vocab_size);
        alloc(a_.losses, N);
    }

    // inputs, targets: [B, T] (targets may be null: no loss; target < 0: not scored).
    // losses (optional, [B, T]) and logits (optional, [B, T, vocab_size]) are outputs.
    // Remembers params, inputs and targets (not copied: they must outlive backward()).
    LossSum forward(const Real* params, const int32_t* inputs, const int32_t* targets,
                    Real* losses, Real* logits, const Dropout& dropout) {
        check_dropout(dropout);
        const int B = B_, T = T_, C = cfg_.n_embd, NH = cfg_.n_head, V = cfg_.vocab_size,
                  Vp = cfg_.padded_vocab_size;
        const int64_t N = int64_t(B) * T, att_n = int64_t(B) * NH * T * T;
        for (int64_t i = 0; i < N; ++i) {
            if (inputs[i] < 0 || inputs[i] >= V || (targets && targets[i] >= V))
                throw Error(PG_ERR_INVALID_ARGUMENT, "ReferenceGpt: token or target at position " +
                                                         std::to_string(i) + " is outside the vocabulary");
        }
        params_ = params;
        inputs_ = inputs;
        targets_ = targets;
        dropout_ = dropout;
        const bool drop = dropout_active(dropout);
        const GptTensors<const Real> w = bind_tensors(layout_, params);

        ref::encoder_forward(a_.encoded.data(), inputs, w.wte, w.wpe, B, T, C);
        const Real* x = a_.encoded.data();
        if (drop) {
            ref::dropout_make_mask(a_.emb_mask.data(), N * C, dropout, kDropEmbedding, 0);
            ref::dropout_forward(a_.x0.data(), x, a_.emb_mask.data(), N * C);
            x = a_.x0.data();
        }
        for (int l = 0; l < cfg_.n_layer; ++l) {
            LayerView v = layer(l);
            ref::layernorm_forward(v.ln1, v.ln1_mean, v.ln1_rstd, x, w.ln1w + l * C, w.ln1b + l * C,
                                   N, C, Real(cfg_.layernorm_eps));
            ref::matmul_forward(v.qkv, v.ln1, w.qkvw + int64_t(l) * 3 * C * C, w.qkvb + l * 3 * C, N, C, 3 * C);
            if (drop) ref::dropout_make_mask(v.att_mask, att_n, dropout, kDropAttnProbs, l);
            ref::attention_forward(v.atty, v.preatt, v.att, v.att_drop, v.qkv, drop ? v.att_mask : nullptr,
                                   B, T, C, NH);
            ref::matmul_forward(v.attproj, v.atty, w.attprojw + int64_t(l) * C * C, w.attprojb + l * C, N, C, C);
            const Real* attproj = v.attproj;
            if (drop) {
                ref::dropout_make_mask(v.attproj_mask, N * C, dropout, kDropAttnProj, l);
                ref::dropout_forward(v.attproj_drop, v.attproj, v.attproj_mask, N * C);
                attproj = v.attproj_drop;
            }
            ref::residual_forward(v.residual2, x, attproj, N * C);
            ref::layernorm_forward(v.ln2, v.ln2_mean, v.ln2_rstd, v.residual2, w.ln2w + l * C,
                                   w.ln2b + l * C, N, C, Real(cfg_.layernorm_eps));
            ref::matmul_forward(v.fch, v.ln2, w.fcw + int64_t(l) * 4 * C * C, w.fcb + l * 4 * C, N, C, 4 * C);
            ref::gelu_forward(v.fch_gelu, v.fch, N * 4 * C);
            ref::matmul_forward(v.fcproj, v.fch_gelu, w.fcprojw + int64_t(l) * C * 4 * C, w.fcprojb + l * C,
                                N, 4 * C, C);
            const Real* fcproj = v.fcproj;
            if (drop) {
                ref::dropout_make_mask(v.fcproj_mask, N * C, dropout, kDropMlpProj, l);
                ref::dropout_forward(v.fcproj_drop, v.fcproj, v.fcproj_mask, N * C);
                fcproj = v.fcproj_drop;
            }
            ref::residual_forward(v.residual3, v.residual2, fcproj, N * C);
            x = v.residual3;
        }
        ref::layernorm_forward(a_.lnf.data(), a_.lnf_mean.data(), a_.lnf_rstd.data(), x, w.lnfw, w.lnfb,
                               N, C, Real(cfg_.layernorm_eps));
        ref::matmul_forward(a_.logits.data(), a_.lnf.data(), w.wte, static_cast<const Real*>(nullptr),
                            N, C, Vp);
        if (logits)
            for (int64_t n = 0; n < N; ++n)
                for (int i = 0; i < V; ++i) logits[n * V + i] = a_.logits[n * Vp + i];
        LossSum result;
        if (targets) {
            ref::crossentropy_forward(a_.losses.data(), a_.probs.data(), a_.logits.data(), targets, N, V, Vp);
            for (int64_t n = 0; n < N; ++n)
                if (targets[n] >= 0) {
                    result.sum += double(a_.losses[n]);
                    result.count += 1;
                }
        }
        if (losses)
            for (int64_t n = 0; n < N; ++n) losses[n] = targets ? a_.losses[n] : Real(0);
        return result;
    }

    // Adds grad_scale * d(sum of scored losses)/d(params) into grads (a parameter-shaped
    // buffer; not zeroed here). Needs the preceding forward() with targets.
    void backward(Real* grads, Real grad_scale) {
        require(params_ && targets_, PG_ERR_STATE, "ReferenceGpt::backward needs forward() with targets first");
        const int B = B_, T = T_, C = cfg_.n_embd, NH = cfg_.n_head, V = cfg_.vocab_size,
                  Vp = cfg_.padded_vocab_size, L = cfg_.n_layer;
        const int64_t N = int64_t(B) * T;
        const bool drop = dropout_active(dropout_);
        const GptTensors<const Real> w = bind_tensors(layout_, params_);
        const GptTensors<Real> g = bind_tensors(layout_, grads);

        // Gradients of the activations, all zeroed (every backward below accumulates).
        std::vector<Real> dlogits(size_t(N * Vp)), dlnf(size_t(N * C)), dx(size_t(N * C)),
            dres2(size_t(N * C)), dbranch(size_t(N * C)), dfch_gelu(size_t(N * 4 * C)),
            dfch(size_t(N * 4 * C)), dln(size_t(N * C)), datty(size_t(N * C)), dqkv(size_t(N * 3 * C)),
            dencoded(size_t(N * C));

        ref::crossentropy_softmax_backward(dlogits.data(), a_.probs.data(), targets_, grad_scale, N, V, Vp);
        ref::matmul_backward(dlnf.data(), g.wte, static_cast<Real*>(nullptr), dlogits.data(), a_.lnf.data(),
                             w.wte, N, C, Vp);
        const Real* x_last = L > 0 ? layer(L - 1).residual3 : embedded();
        ref::layernorm_backward(dx.data(), g.lnfw, g.lnfb, dlnf.data(), x_last, w.lnfw, a_.lnf_mean.data(),
                                a_.lnf_rstd.data(), N, C);
        // dx holds d(loss)/d(residual3 of the last layer); walk the layers backwards.
        for (int l = L - 1; l >= 0; --l) {
            LayerView v = layer(l);
            const Real* x_in = l == 0 ? embedded() : layer(l - 1).residual3;
            auto zero = [](std::vector<Real>& a) { std::fill(a.begin(), a.end(), Real(0)); };
            zero(dres2); zero(dbranch); zero(dfch_gelu); zero(dfch); zero(dln); zero(datty); zero(dqkv);

            // residual3 = residual2 + dropout(fcproj)
            std::vector<Real> dfcproj(size_t(N * C), Real(0));
            ref::residual_backward(dres2.data(), drop ? dbranch.data() : dfcproj.data(), dx.data(), N * C);
            if (drop) ref::dropout_backward(dfcproj.data(), dbranch.data(), v.fcproj_mask, N * C);
            ref::matmul_backward(dfch_gelu.data(), g.fcprojw + int64_t(l) * C * 4 * C, g.fcprojb + l * C,
                                 dfcproj.data(), v.fch_gelu, w.fcprojw + int64_t(l) * C * 4 * C, N, 4 * C, C);
            ref::gelu_backward(dfch.data(), v.fch, dfch_gelu.data(), N * 4 * C);
            ref::matmul_backward(dln.data(), g.fcw + int64_t(l) * 4 * C * C, g.fcb + l * 4 * C, dfch.data(),
                                 v.ln2, w.fcw + int64_t(l) * 4 * C * C, N, C, 4 * C);
            ref::layernorm_backward(dres2.data(), g.ln2w + l * C, g.ln2b + l * C, dln.data(), v.residual2,
                                    w.ln2w + l * C, v.ln2_mean, v.ln2_rstd, N, C);

            // residual2 = x_in + dropout(attproj)
            zero(dx); zero(dbranch); zero(dln);
            std::vector<Real> dattproj(size_t(N * C), Real(0));
            ref::residual_backward(dx.data(), drop ? dbranch.data() : dattproj.data(), dres2.data(), N * C);
            if (drop) ref::dropout_backward(dattproj.data(), dbranch.data(), v.attproj_mask, N * C);
            ref::matmul_backward(datty.data(), g.attprojw + int64_t(l) * C * C, g.attprojb + l * C,
                                 dattproj.data(), v.atty, w.attprojw + int64_t(l) * C * C, N, C, C);
            ref::attention_backward(dqkv.data(), datty.data(), v.qkv, v.att, v.att_drop,
                                    drop ? v.att_mask : nullptr, B, T, C, NH);
            ref::matmul_backward(dln.data(), g.qkvw + int64_t(l) * 3 * C * C, g.qkvb + l * 3 * C, dqkv.data(),
                                 v.ln1, w.qkvw + int64_t(l) * 3 * C * C, N, C, 3 * C);
            ref::layernorm_backward(dx.data(), g.ln1w + l * C, g.ln1b + l * C, dln.data(), x_in,
                                    w.ln1w + l * C, v.ln1_mean, v.ln1_rstd, N, C);
        }
        // x0 = dropout(encoded)
        if (drop)
            ref::dropout_backward(dencoded.data(), dx.data(), a_.emb_mask.data(), N * C);
        else
            dencoded = dx;
        ref::encoder_backward(g.wte, g.wpe, dencoded.data(), inputs_, B, T, C);
    }

private:
    // Every activation of the forward pass (llm.c's ActivationTensors), per-layer ones stacked.
    struct Activations {
        std::vector<Real> encoded, emb_mask, x0;  // [B, T, C]
        std::vector<Real> ln1, ln1_mean, ln1_rstd, qkv, preatt, att, att_drop, att_mask, atty, attproj,
            attproj_mask, attproj_drop, residual2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu, fcproj,
            fcproj_mask, fcproj_drop, residual3;  // [L, ...]
        std::vector<Real> lnf, lnf_mean, lnf_rstd, logits, probs, losses;
    };
    // Pointers to layer l's slice of each stacked activation.
    struct LayerView {
        Real *ln1, *ln1_mean, *ln1_rstd, *qkv, *preatt, *att, *att_drop, *att_mask, *atty, *attproj,
            *attproj_mask, *attproj_drop, *residual2, *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu, *fcproj,
            *fcproj_mask, *fcproj_drop, *residual3;
    };
    LayerView layer(int l) {
        const int64_t N = int64_t(B_) * T_, C = cfg_.n_embd, att = int64_t(B_) * cfg_.n_head * T_ * T_;
        Activations& a = a_;
        return LayerView{a.ln1.data() + l * N * C,       a.ln1_mean.data() + l * N,
                         a.ln1_rstd.data() + l * N,      a.qkv.data() + l * N * 3 * C,
                         a.preatt.data() + l * att,      a.att.data() + l * att,
                         a.att_drop.data() + l * att,    a.att_mask.data() + l * att,
                         a.atty.data() + l * N * C,      a.attproj.data() + l * N * C,
                         a.attproj_mask.data() + l * N * C, a.attproj_drop.data() + l * N * C,
                         a.residual2.data() + l * N * C, a.ln2.data() + l * N * C,
                         a.ln2_mean.data() + l * N,      a.ln2_rstd.data() + l * N,
                         a.fch.data() + l * N * 4 * C,   a.fch_gelu.data() + l * N * 4 * C,
                         a.fcproj.data() + l * N * C,    a.fcproj_mask.data() + l * N * C,
                         a.fcproj_drop.data() + l * N * C, a.residual3.data() + l * N * C};
    }
    // The input of layer 0: the embedding sum after dropout.
    const Real* embedded() const { return dropout_active(dropout_) ? a_.x0.data() : a_.encoded.data(); }

    ModelConfig cfg_;
    ParamLayout layout_;
    int B_, T_;
    Activations a_;
    const Real* params_ = nullptr;
    const int32_t* inputs_ = nullptr;
    const int32_t* targets_ = nullptr;
    Dropout dropout_;
};

}  // namespace pg
