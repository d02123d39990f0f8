// The scalar reference of the Llama-family decoder (RMSNorm, rotary positions, grouped-query
// attention, optional q/k norms and q/k/v biases, SwiGLU, tied or separate head): the truth the
// engine's Llama path is to be tested against, its gradient checked against finite differences
// (tests/unit/test_reference_decoder.cpp). The GPT-2 block's reference is reference_model.hpp.
//
// Plain loops, single-threaded, every activation kept, templated on the number type. The
// formulas are Hugging Face's LlamaForCausalLM / Qwen2ForCausalLM / Qwen3ForCausalLM:
//   x0 = embed_tokens[tokens]                                              [B, T, C]
//   per layer:
//     h = rmsnorm(x, input_layernorm)
//     q = q_proj(h), k = k_proj(h), v = v_proj(h)       (heads n_head, n_kv_head, of head_dim)
//     q, k = rmsnorm per head (q_norm, k_norm; Qwen3), then RoPE, rotate-half pairing
//     a = causal softmax(q k^T / sqrt(head_dim)) v, query head j reading KV head j / (n_head / n_kv_head)
//     x = x + o_proj(a)
//     x = x + down_proj(silu(gate_proj(h2)) * up_proj(h2)),  h2 = rmsnorm(x, post_attention_layernorm)
//   logits = rmsnorm(x, norm) . (lm_head or embed_tokens)^T; loss = cross-entropy over vocab_size
//
// Parameters are named as Hugging Face names them without the "model." prefix
// ("layers.0.self_attn.q_proj.weight", "embed_tokens.weight", "lm_head.weight", ...).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "model/rope.hpp"

namespace pg {
namespace ref {

template <class Real>
using NamedTensors = std::map<std::string, std::vector<Real>>;

// The tensors of a configuration and their sizes, in Hugging Face's order.
inline std::vector<std::pair<std::string, int64_t>> decoder_tensor_sizes(const ModelConfig& m) {
    const int64_t C = m.n_embd, Q = m.q_width(), KV = m.kv_width(), H = m.mlp_width(), V = m.padded_vocab_size;
    std::vector<std::pair<std::string, int64_t>> out{{"embed_tokens.weight", V * C}};
    for (int l = 0; l < m.n_layer; ++l) {
        const std::string p = "layers." + std::to_string(l) + ".";
        out.push_back({p + "input_layernorm.weight", C});
        out.push_back({p + "self_attn.q_proj.weight", Q * C});
        if (m.qkv_bias) out.push_back({p + "self_attn.q_proj.bias", Q});
        out.push_back({p + "self_attn.k_proj.weight", KV * C});
        if (m.qkv_bias) out.push_back({p + "self_attn.k_proj.bias", KV});
        out.push_back({p + "self_attn.v_proj.weight", KV * C});
        if (m.qkv_bias) out.push_back({p + "self_attn.v_proj.bias", KV});
        if (m.qk_norm) {
            out.push_back({p + "self_attn.q_norm.weight", m.head_dim()});
            out.push_back({p + "self_attn.k_norm.weight", m.head_dim()});
        }
        out.push_back({p + "self_attn.o_proj.weight", C * Q});
        out.push_back({p + "post_attention_layernorm.weight", C});
        out.push_back({p + "mlp.gate_proj.weight", H * C});
        out.push_back({p + "mlp.up_proj.weight", H * C});
        out.push_back({p + "mlp.down_proj.weight", C * H});
    }
    out.push_back({"norm.weight", C});
    if (!m.tied_head) out.push_back({"lm_head.weight", V * C});
    return out;
}

template <class Real>
class ReferenceDecoder {
public:
    ReferenceDecoder(const ModelConfig& cfg, int B, int T) : m_(cfg), B_(B), T_(T) {
        const auto inv = rope_inverse_frequencies(cfg);
        const int half = int(inv.size());
        cos_.resize(std::size_t(T) * half);
        sin_.resize(cos_.size());
        for (int t = 0; t < T; ++t)
            for (int i = 0; i < half; ++i) {
                cos_[std::size_t(t) * half + i] = Real(std::cos(double(t) * inv[i]));
                sin_[std::size_t(t) * half + i] = Real(std::sin(double(t) * inv[i]));
            }
    }

    // Mean cross-entropy over targets >= 0; logits [B, T, vocab_size] if not null.
    Real forward(const NamedTensors<Real>& w, const int32_t* tokens, const int32_t* targets, Real* logits) {
        w_ = &w;
        const int C = m_.n_embd, N = B_ * T_;
        x_.assign(m_.n_layer + 1, std::vector<Real>());
        x_[0].assign(std::size_t(N) * C, Real(0));
        tokens_.assign(tokens, tokens + N);
        const auto& emb = at("embed_tokens.weight");
        for (int n = 0; n < N; ++n)
            for (int i = 0; i < C; ++i) x_[0][std::size_t(n) * C + i] = emb[std::size_t(tokens[n]) * C + i];
        acts_.assign(m_.n_layer, Acts{});
        for (int l = 0; l < m_.n_layer; ++l) layer_forward(l);
        // head
        rms_forward(xf_, rf_, x_.back(), at("norm.weight"), N, C);
        const auto& head = at(m_.tied_head ? "embed_tokens.weight" : "lm_head.weight");
        const int V = m_.vocab_size;
        probs_.assign(std::size_t(N) * V, Real(0));
        targets_.assign(targets, targets + N);
        Real loss = 0;
        count_ = 0;
        for (int n = 0; n < N; ++n) {
            Real* p = &probs_[std::size_t(n) * V];
            Real mx = -1e30;
            for (int v = 0; v < V; ++v) {
                Real s = 0;
                for (int i = 0; i < C; ++i) s += xf_[std::size_t(n) * C + i] * head[std::size_t(v) * C + i];
                p[v] = s;
                if (logits) logits[std::size_t(n) * V + v] = s;
                mx = std::max(mx, s);
            }
            Real z = 0;
            for (int v = 0; v < V; ++v) z += (p[v] = std::exp(p[v] - mx));
            for (int v = 0; v < V; ++v) p[v] /= z;
            if (targets[n] >= 0) {
                loss -= std::log(p[targets[n]]);
                ++count_;
            }
        }
        return count_ ? loss / Real(count_) : Real(0);
    }

    // Gradients of the last forward's mean loss, every tensor (zero-initialised here).
    NamedTensors<Real> backward() {
        const int C = m_.n_embd, N = B_ * T_, V = m_.vocab_size;
        NamedTensors<Real> g;
        for (const auto& e : decoder_tensor_sizes(m_)) g[e.first].assign(std::size_t(e.second), Real(0));
        const auto& head = at(m_.tied_head ? "embed_tokens.weight" : "lm_head.weight");
        auto& dhead = g[m_.tied_head ? "embed_tokens.weight" : "lm_head.weight"];
        std::vector<Real> dxf(std::size_t(N) * C, Real(0));
        for (int n = 0; n < N; ++n) {
            if (targets_[n] < 0) continue;
            for (int v = 0; v < V; ++v) {
                const Real d = (probs_[std::size_t(n) * V + v] - Real(v == targets_[n])) / Real(count_);
                for (int i = 0; i < C; ++i) {
                    dxf[std::size_t(n) * C + i] += d * head[std::size_t(v) * C + i];
                    dhead[std::size_t(v) * C + i] += d * xf_[std::size_t(n) * C + i];
                }
            }
        }
        std::vector<Real> dx(std::size_t(N) * C, Real(0));
        rms_backward(dx, g["norm.weight"], dxf, x_.back(), at("norm.weight"), rf_, N, C);
        for (int l = m_.n_layer - 1; l >= 0; --l) layer_backward(l, dx, g);
        auto& demb = g["embed_tokens.weight"];
        for (int n = 0; n < N; ++n)
            for (int i = 0; i < C; ++i) demb[std::size_t(tokens_[n]) * C + i] += dx[std::size_t(n) * C + i];
        return g;
    }

private:
    struct Acts {
        std::vector<Real> h, r1, q0, k0, qn, kn, rq, rk, q, k, v, p, a, x1, h2, r2, gate, up, s;
    };

    const std::vector<Real>& at(const std::string& name) const { return w_->at(name); }
    std::string name(int l, const char* what) const { return "layers." + std::to_string(l) + "." + what; }
    bool has(const std::string& n) const { return w_->count(n) != 0; }

    static void rms_forward(std::vector<Real>& out, std::vector<Real>& r, const std::vector<Real>& x,
                            const std::vector<Real>& w, int rows, int C, Real eps) {
        out.assign(std::size_t(rows) * C, Real(0));
        r.assign(std::size_t(rows), Real(0));
        for (int n = 0; n < rows; ++n) {
            Real ss = 0;
            for (int i = 0; i < C; ++i) ss += x[std::size_t(n) * C + i] * x[std::size_t(n) * C + i];
            r[n] = Real(1) / std::sqrt(ss / Real(C) + eps);
            for (int i = 0; i < C; ++i) out[std::size_t(n) * C + i] = x[std::size_t(n) * C + i] * r[n] * w[i];
        }
    }
    void rms_forward(std::vector<Real>& out, std::vector<Real>& r, const std::vector<Real>& x,
                     const std::vector<Real>& w, int rows, int C) const {
        rms_forward(out, r, x, w, rows, C, Real(m_.layernorm_eps));
    }
    static void rms_backward(std::vector<Real>& dx, std::vector<Real>& dw, const std::vector<Real>& dout,
                             const std::vector<Real>& x, const std::vector<Real>& w, const std::vector<Real>& r,
                             int rows, int C) {
        for (int n = 0; n < rows; ++n) {
            Real dot = 0;
            for (int i = 0; i < C; ++i)
                dot += dout[std::size_t(n) * C + i] * w[i] * x[std::size_t(n) * C + i];
            for (int i = 0; i < C; ++i) {
                const Real xi = x[std::size_t(n) * C + i], d = dout[std::size_t(n) * C + i];
                dw[i] += d * xi * r[n];
                dx[std::size_t(n) * C + i] += r[n] * d * w[i] - xi * r[n] * r[n] * r[n] * dot / Real(C);
            }
        }
    }
    // out [rows, OC] = x [rows, IC] W^T (+ b)
    static void linear(std::vector<Real>& out, const std::vector<Real>& x, const std::vector<Real>& W,
                       const std::vector<Real>* b, int rows, int IC, int OC) {
        out.assign(std::size_t(rows) * OC, Real(0));
        for (int n = 0; n < rows; ++n)
            for (int o = 0; o < OC; ++o) {
                Real s = b ? (*b)[o] : Real(0);
                for (int i = 0; i < IC; ++i) s += x[std::size_t(n) * IC + i] * W[std::size_t(o) * IC + i];
                out[std::size_t(n) * OC + o] = s;
            }
    }
    static void linear_backward(std::vector<Real>& dx, std::vector<Real>& dW, std::vector<Real>* db,
                                const std::vector<Real>& dout, const std::vector<Real>& x,
                                const std::vector<Real>& W, int rows, int IC, int OC) {
        for (int n = 0; n < rows; ++n)
            for (int o = 0; o < OC; ++o) {
                const Real d = dout[std::size_t(n) * OC + o];
                if (db) (*db)[o] += d;
                for (int i = 0; i < IC; ++i) {
                    dx[std::size_t(n) * IC + i] += d * W[std::size_t(o) * IC + i];
                    dW[std::size_t(o) * IC + i] += d * x[std::size_t(n) * IC + i];
                }
            }
    }
    // In place on [N, heads * hd]; sign -1 applies the transpose.
    void rope(std::vector<Real>& x, int heads, Real sign) const {
        const int hd = m_.head_dim(), half = hd / 2;
        for (int n = 0; n < B_ * T_; ++n) {
            const int t = n % T_;
            for (int h = 0; h < heads; ++h) {
                Real* v = &x[(std::size_t(n) * heads + h) * hd];
                for (int i = 0; i < half; ++i) {
                    const Real c = cos_[std::size_t(t) * half + i], s = sign * sin_[std::size_t(t) * half + i];
                    const Real x1 = v[i], x2 = v[i + half];
                    v[i] = x1 * c - x2 * s;
                    v[i + half] = x2 * c + x1 * s;
                }
            }
        }
    }
    const std::vector<Real>* bias(int l, const char* what) const {
        const std::string n = name(l, what);
        return has(n) ? &at(n) : nullptr;
    }

    void layer_forward(int l) {
        Acts& a = acts_[l];
        const int C = m_.n_embd, N = B_ * T_, hd = m_.head_dim(), NH = m_.n_head, KH = m_.kv_heads();
        const int Q = m_.q_width(), KV = m_.kv_width(), H = m_.mlp_width(), group = NH / KH;
        const std::vector<Real>& x = x_[l];
        rms_forward(a.h, a.r1, x, at(name(l, "input_layernorm.weight")), N, C);
        linear(a.q0, a.h, at(name(l, "self_attn.q_proj.weight")), bias(l, "self_attn.q_proj.bias"), N, C, Q);
        linear(a.k0, a.h, at(name(l, "self_attn.k_proj.weight")), bias(l, "self_attn.k_proj.bias"), N, C, KV);
        linear(a.v, a.h, at(name(l, "self_attn.v_proj.weight")), bias(l, "self_attn.v_proj.bias"), N, C, KV);
        if (m_.qk_norm) {
            rms_forward(a.qn, a.rq, a.q0, at(name(l, "self_attn.q_norm.weight")), N * NH, hd);
            rms_forward(a.kn, a.rk, a.k0, at(name(l, "self_attn.k_norm.weight")), N * KH, hd);
        } else {
            a.qn = a.q0;
            a.kn = a.k0;
        }
        a.q = a.qn;
        a.k = a.kn;
        rope(a.q, NH, Real(1));
        rope(a.k, KH, Real(1));
        // attention: p [B, NH, T, T], a [N, Q]
        const Real scale = Real(1) / std::sqrt(Real(hd));
        a.p.assign(std::size_t(B_) * NH * T_ * T_, Real(0));
        a.a.assign(std::size_t(N) * Q, Real(0));
        for (int b = 0; b < B_; ++b)
            for (int h = 0; h < NH; ++h) {
                const int kh = h / group;
                for (int t = 0; t < T_; ++t) {
                    Real* p = &a.p[((std::size_t(b) * NH + h) * T_ + t) * T_];
                    const Real* qv = &a.q[(std::size_t(b) * T_ + t) * Q + h * hd];
                    Real mx = -1e30;
                    for (int u = 0; u <= t; ++u) {
                        const Real* kv = &a.k[(std::size_t(b) * T_ + u) * KV + kh * hd];
                        Real s = 0;
                        for (int i = 0; i < hd; ++i) s += qv[i] * kv[i];
                        p[u] = s * scale;
                        mx = std::max(mx, p[u]);
                    }
                    Real z = 0;
                    for (int u = 0; u <= t; ++u) z += (p[u] = std::exp(p[u] - mx));
                    Real* out = &a.a[(std::size_t(b) * T_ + t) * Q + h * hd];
                    for (int u = 0; u <= t; ++u) {
                        p[u] /= z;
                        const Real* vv = &a.v[(std::size_t(b) * T_ + u) * KV + kh * hd];
                        for (int i = 0; i < hd; ++i) out[i] += p[u] * vv[i];
                    }
                }
            }
        std::vector<Real> o;
        linear(o, a.a, at(name(l, "self_attn.o_proj.weight")), nullptr, N, Q, C);
        a.x1 = x;
        for (std::size_t i = 0; i < o.size(); ++i) a.x1[i] += o[i];
        rms_forward(a.h2, a.r2, a.x1, at(name(l, "post_attention_layernorm.weight")), N, C);
        linear(a.gate, a.h2, at(name(l, "mlp.gate_proj.weight")), nullptr, N, C, H);
        linear(a.up, a.h2, at(name(l, "mlp.up_proj.weight")), nullptr, N, C, H);
        a.s.assign(a.gate.size(), Real(0));
        for (std::size_t i = 0; i < a.s.size(); ++i)
            a.s[i] = a.gate[i] / (Real(1) + std::exp(-a.gate[i])) * a.up[i];
        std::vector<Real> d;
        linear(d, a.s, at(name(l, "mlp.down_proj.weight")), nullptr, N, H, C);
        x_[l + 1] = a.x1;
        for (std::size_t i = 0; i < d.size(); ++i) x_[l + 1][i] += d[i];
    }

    // dx: in, d(loss)/d(layer output); out, d(loss)/d(layer input).
    void layer_backward(int l, std::vector<Real>& dx, NamedTensors<Real>& g) {
        Acts& a = acts_[l];
        const int C = m_.n_embd, N = B_ * T_, hd = m_.head_dim(), NH = m_.n_head, KH = m_.kv_heads();
        const int Q = m_.q_width(), KV = m_.kv_width(), H = m_.mlp_width(), group = NH / KH;
        auto gb = [&](const char* what) { return has(name(l, what)) ? &g[name(l, what)] : nullptr; };
        // MLP
        std::vector<Real> ds(a.s.size(), Real(0)), dgate(a.s.size()), dup(a.s.size());
        linear_backward(ds, g[name(l, "mlp.down_proj.weight")], nullptr, dx, a.s, at(name(l, "mlp.down_proj.weight")),
                        N, H, C);
        for (std::size_t i = 0; i < ds.size(); ++i) {
            const Real gt = a.gate[i], sig = Real(1) / (Real(1) + std::exp(-gt));
            dgate[i] = ds[i] * a.up[i] * sig * (Real(1) + gt * (Real(1) - sig));
            dup[i] = ds[i] * gt * sig;
        }
        std::vector<Real> dh2(std::size_t(N) * C, Real(0));
        linear_backward(dh2, g[name(l, "mlp.gate_proj.weight")], nullptr, dgate, a.h2,
                        at(name(l, "mlp.gate_proj.weight")), N, C, H);
        linear_backward(dh2, g[name(l, "mlp.up_proj.weight")], nullptr, dup, a.h2, at(name(l, "mlp.up_proj.weight")),
                        N, C, H);
        std::vector<Real> dx1 = dx;  // the residual
        rms_backward(dx1, g[name(l, "post_attention_layernorm.weight")], dh2, a.x1,
                     at(name(l, "post_attention_layernorm.weight")), a.r2, N, C);
        // attention output projection
        std::vector<Real> da(std::size_t(N) * Q, Real(0));
        linear_backward(da, g[name(l, "self_attn.o_proj.weight")], nullptr, dx1, a.a,
                        at(name(l, "self_attn.o_proj.weight")), N, Q, C);
        std::vector<Real> dq(std::size_t(N) * Q, Real(0)), dk(std::size_t(N) * KV, Real(0)),
            dv(std::size_t(N) * KV, Real(0));
        const Real scale = Real(1) / std::sqrt(Real(hd));
        for (int b = 0; b < B_; ++b)
            for (int h = 0; h < NH; ++h) {
                const int kh = h / group;
                for (int t = 0; t < T_; ++t) {
                    const Real* p = &a.p[((std::size_t(b) * NH + h) * T_ + t) * T_];
                    const Real* dout = &da[(std::size_t(b) * T_ + t) * Q + h * hd];
                    std::vector<Real> dp(std::size_t(t) + 1, Real(0));
                    Real dot = 0;
                    for (int u = 0; u <= t; ++u) {
                        const Real* vv = &a.v[(std::size_t(b) * T_ + u) * KV + kh * hd];
                        Real* dvv = &dv[(std::size_t(b) * T_ + u) * KV + kh * hd];
                        for (int i = 0; i < hd; ++i) {
                            dp[u] += dout[i] * vv[i];
                            dvv[i] += p[u] * dout[i];
                        }
                        dot += dp[u] * p[u];
                    }
                    const Real* qv = &a.q[(std::size_t(b) * T_ + t) * Q + h * hd];
                    Real* dqv = &dq[(std::size_t(b) * T_ + t) * Q + h * hd];
                    for (int u = 0; u <= t; ++u) {
                        const Real dsc = p[u] * (dp[u] - dot) * scale;
                        const Real* kv = &a.k[(std::size_t(b) * T_ + u) * KV + kh * hd];
                        Real* dkv = &dk[(std::size_t(b) * T_ + u) * KV + kh * hd];
                        for (int i = 0; i < hd; ++i) {
                            dqv[i] += dsc * kv[i];
                            dkv[i] += dsc * qv[i];
                        }
                    }
                }
            }
        rope(dq, NH, Real(-1));
        rope(dk, KH, Real(-1));
        if (m_.qk_norm) {
            std::vector<Real> dq0(dq.size(), Real(0)), dk0(dk.size(), Real(0));
            rms_backward(dq0, g[name(l, "self_attn.q_norm.weight")], dq, a.q0, at(name(l, "self_attn.q_norm.weight")),
                         a.rq, N * NH, hd);
            rms_backward(dk0, g[name(l, "self_attn.k_norm.weight")], dk, a.k0, at(name(l, "self_attn.k_norm.weight")),
                         a.rk, N * KH, hd);
            dq.swap(dq0);
            dk.swap(dk0);
        }
        std::vector<Real> dh(std::size_t(N) * C, Real(0));
        linear_backward(dh, g[name(l, "self_attn.q_proj.weight")], gb("self_attn.q_proj.bias"), dq, a.h,
                        at(name(l, "self_attn.q_proj.weight")), N, C, Q);
        linear_backward(dh, g[name(l, "self_attn.k_proj.weight")], gb("self_attn.k_proj.bias"), dk, a.h,
                        at(name(l, "self_attn.k_proj.weight")), N, C, KV);
        linear_backward(dh, g[name(l, "self_attn.v_proj.weight")], gb("self_attn.v_proj.bias"), dv, a.h,
                        at(name(l, "self_attn.v_proj.weight")), N, C, KV);
        dx = dx1;
        rms_backward(dx, g[name(l, "input_layernorm.weight")], dh, x_[l], at(name(l, "input_layernorm.weight")), a.r1,
                     N, C);
    }

    ModelConfig m_;
    int B_, T_;
    std::vector<Real> cos_, sin_;
    const NamedTensors<Real>* w_ = nullptr;
    std::vector<std::vector<Real>> x_;
    std::vector<Acts> acts_;
    std::vector<Real> xf_, rf_, probs_;
    std::vector<int32_t> tokens_, targets_;
    int64_t count_ = 0;
};

}  // namespace ref
}  // namespace pg
