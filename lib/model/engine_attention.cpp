// The engine's attention (see engine.cpp for the engine as a whole): causal flash-style
// attention forward and backward over a batch, and the KV-cached attention of generation.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "model/engine_impl.hpp"

namespace pg {

using namespace engine_detail;

namespace {

// Attention tiles (flash-attention style): blocks of kQueryBlock queries against key tiles of
// at most kKeyBlock keys, each tile ending at the block's last query (the causal limit), so a
// block's keys usually fit one tile and the online softmax rarely has to rescale.
constexpr int kQueryBlock = 64;
constexpr int kKeyBlock = 128;

}  // namespace

int64_t Engine::Impl::attention_scratch_floats(const ModelConfig& cfg, int T, int nt) {
    const int64_t tiles = 2 * int64_t(kQueryBlock) * kKeyBlock + 3 * kQueryBlock;
    return int64_t(nt) * (tiles + 2 * int64_t(cfg.head_dim()) * T);  // as for_each_head sizes them
}

void Engine::Impl::for_each_head(int B, int NH, ThreadPool& pool,
                                 const std::function<void(AttnScratch&, int64_t, int, int)>& fn) {
    if (attn_scratch.size() < size_t(pool.size())) attn_scratch.resize(size_t(pool.size()));
    pool.parallel_for(int64_t(B) * NH, [&](int thread, int64_t p0, int64_t p1) {
        AttnScratch& s = attn_scratch[size_t(thread)];
        if (s.s.size() == 0) {
            s.s.resize(size_t(kQueryBlock) * kKeyBlock);
            s.dp.resize(size_t(kQueryBlock) * kKeyBlock);
            s.m.resize(kQueryBlock);
            s.l.resize(kQueryBlock);
            s.d.resize(kQueryBlock);
            s.kt.resize(size_t(dims.hd) * size_t(max_T));
            s.vt.resize(size_t(dims.hd) * size_t(max_T));
        }  // sized on a thread's first use
        for (int64_t pair = p0; pair < p1; ++pair) fn(s, pair, int(pair / NH), int(pair % NH));
    });
}

// ----------------------------------------------------------------------------------------
// causal attention, flash style: per (batch, head), tiles of queries x keys with
// an online softmax; only the per-row log-sum-exp is kept for the backward pass.
// qkv [N, QKV] -> atty [N, Q], lse [B, NH, T]. A row of qkv is q (NH heads), then k and v
// (NKV heads each); query head h reads KV head h / (NH / NKV). GPT-2: QKV = 3C, Q = C, NKV = NH.

void Engine::Impl::attention_forward(LayerActs& a, int layer, int B, int T, const Dropout& d, ThreadPool& pool) {
    const int NH = dims.NH, hs = dims.hd, Q = dims.Q, S3 = dims.QKV, group = NH / dims.NKV;
    const float scale = 1.0f / std::sqrt(float(hs));
    const bool drop = dropout_active(d);
    StepProfile::Scope phase(profile, kForwardAttentionPhase[recomputing]);
    traffic(int64_t(B) * T * S3, int64_t(B) * T * (Q + NH));
    for_each_head(B, NH, pool, [&](AttnScratch& sc, int64_t pair, int b, int h) {
        const float* qkv_b = a.qkv + int64_t(b) * T * S3;
        const int k_at = Q + (h / group) * hs, v_at = Q + dims.KV + (h / group) * hs;
        float* y_b = a.atty + int64_t(b) * T * Q + h * hs;
        float* lse = a.lse + pair * T;
        float* kt = sc.kt.data();
        k::transpose(kt, T, qkv_b + k_at, S3, T, hs);
        for (int q0 = 0; q0 < T; q0 += kQueryBlock) {
            const int nq = std::min(kQueryBlock, T - q0);
            float* m = sc.m.data();
            float* l = sc.l.data();
            for (int r = 0; r < nq; ++r) {
                m[r] = -INFINITY;
                l[r] = 0.0f;
                std::memset(y_b + int64_t(q0 + r) * Q, 0, sizeof(float) * size_t(hs));
            }
            for (int k0 = 0; k0 < q0 + nq; k0 += kKeyBlock) {
                const int nk = std::min(kKeyBlock, q0 + nq - k0);
                // S[nq, nk] = scale * Q . K^T (the tile is contiguous: row stride nk),
                // for the causal keys (row r sees keys up to q0 + r; the rest of S is
                // left unspecified, and masked below).
                float* S = sc.s.data();
                const int diag = q0 - k0;
                k::attn_scores(S, nk, qkv_b + int64_t(q0) * S3 + h * hs, S3, kt + k0, T, nq, nk, hs, scale, diag);
                // Online softmax, row by row: raise the running max, P = exp(S - max)
                // over the causal keys (k0 <= q0, so every row has at least one), and 0
                // above the diagonal.
                for (int r = 0; r < nq; ++r) {
                    const int t = q0 + r;
                    const int valid = std::min(nk, t - k0 + 1);  // causal: keys <= t
                    float* srow = S + r * nk;
                    const float mx = std::max(m[r], k::row_max(srow, valid, nk));
                    const float sum = k::row_exp_shift(srow, valid, nk, mx);
                    const float corr = std::exp(m[r] - mx);  // 0 on the first tile
                    l[r] = l[r] * corr + sum;
                    m[r] = mx;
                    if (corr != 1.0f) {
                        float* y = y_b + int64_t(t) * Q;
                        for (int i = 0; i < hs; ++i) y[i] *= corr;
                    }
                    if (drop) {
                        const uint64_t base = (uint64_t(pair) * T + uint64_t(t)) * T + uint64_t(k0);
                        k::dropout_apply(srow, srow, valid, dropout_args(d, kDropAttnProbs, layer, base));
                    }
                }
                // Y[nq, hs] += P . V (P is 0 past the diagonal: skipped)
                k::attn_accumulate(y_b + int64_t(q0) * Q, Q, S, nk, false, qkv_b + int64_t(k0) * S3 + v_at, S3, nq, hs,
                                   nk, diag);
            }
            for (int r = 0; r < nq; ++r) {
                float* y = y_b + int64_t(q0 + r) * Q;
                const float inv = 1.0f / l[r];
                for (int i = 0; i < hs; ++i) y[i] *= inv;
                lse[q0 + r] = m[r] + std::log(l[r]);
            }
        }
    });
}

// datty [N, Q] -> dqkv [N, QKV] (overwritten). Recomputes the probabilities from lse. Split
// over (sequence, KV head): a KV head's gradient sums its query heads' in their order, on one
// thread.
void Engine::Impl::attention_backward(float* dqkv, const float* datty, const LayerActs& a, int layer, int B, int T,
                                      const Dropout& d, ThreadPool& pool) {
    const int NH = dims.NH, NKV = dims.NKV, hs = dims.hd, Q = dims.Q, S3 = dims.QKV, group = NH / NKV;
    const float scale = 1.0f / std::sqrt(float(hs));
    const bool drop = dropout_active(d);
    StepProfile::Scope phase(profile, "backward attention");
    // qkv, y, dy and lse read; dqkv written (zeroed first, then accumulated per tile)
    traffic(int64_t(B) * T * (S3 + 2 * Q + NH), int64_t(B) * T * S3);
    for_each_head(B, NKV, pool, [&](AttnScratch& sc, int64_t, int b, int kvh) {
        const float* qkv_b = a.qkv + int64_t(b) * T * S3;
        float* dqkv_b = dqkv + int64_t(b) * T * S3;
        const int k_at = Q + kvh * hs, v_at = Q + dims.KV + kvh * hs;
        float* kt = sc.kt.data();
        float* vt = sc.vt.data();
        k::transpose(kt, T, qkv_b + k_at, S3, T, hs);
        k::transpose(vt, T, qkv_b + v_at, S3, T, hs);
        for (int t = 0; t < T; ++t) {
            std::memset(dqkv_b + int64_t(t) * S3 + k_at, 0, sizeof(float) * size_t(hs));
            std::memset(dqkv_b + int64_t(t) * S3 + v_at, 0, sizeof(float) * size_t(hs));
        }
        for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
        const int64_t pair = int64_t(b) * NH + h;
        const float* y_b = a.atty + int64_t(b) * T * Q + h * hs;
        const float* dy_b = datty + int64_t(b) * T * Q + h * hs;
        const float* lse = a.lse + pair * T;
        for (int t = 0; t < T; ++t) std::memset(dqkv_b + int64_t(t) * S3 + h * hs, 0, sizeof(float) * size_t(hs));
        for (int q0 = 0; q0 < T; q0 += kQueryBlock) {
            const int nq = std::min(kQueryBlock, T - q0);
            // D_t = dy_t . y_t = sum_j P_tj dP_tj (holds with dropout too)
            float* D = sc.d.data();
            for (int r = 0; r < nq; ++r)
                D[r] = k::dot(dy_b + int64_t(q0 + r) * Q, y_b + int64_t(q0 + r) * Q, hs);
            for (int k0 = 0; k0 < q0 + nq; k0 += kKeyBlock) {
                const int nk = std::min(kKeyBlock, q0 + nq - k0);
                const float* Qt = qkv_b + int64_t(q0) * S3 + h * hs;
                const float* K = qkv_b + int64_t(k0) * S3 + k_at;
                const float* dY = dy_b + int64_t(q0) * Q;
                // S = scale * Q K^T, then P = exp(S - lse) (0 above the diagonal);
                // both tiles are contiguous with row stride nk, and computed only for
                // the causal keys (the rest is unspecified until masked below).
                float* S = sc.s.data();
                float* dP = sc.dp.data();
                const int diag = q0 - k0;
                k::attn_scores(S, nk, Qt, S3, kt + k0, T, nq, nk, hs, scale, diag);
                // dPdrop = dY V^T
                k::attn_scores(dP, nk, dY, Q, vt + k0, T, nq, nk, hs, 1.0f, diag);
                for (int r = 0; r < nq; ++r) {
                    const int t = q0 + r;
                    const int valid = std::min(nk, t - k0 + 1);
                    float* srow = S + r * nk;
                    float* dprow = dP + r * nk;
                    k::row_exp_shift(srow, valid, nk, lse[t]);  // P = exp(S - lse), 0 past t
                    const float Dr = D[r];
                    // dS = P * (dP - D) * scale, with dP = dPdrop * mask; S becomes
                    // Pdrop = P * mask, for dV.
                    if (drop) {
                        const uint64_t base = (uint64_t(pair) * T + uint64_t(t)) * T + uint64_t(k0);
                        alignas(64) float mask[kKeyBlock];
                        k::dropout_mask(mask, valid, dropout_args(d, kDropAttnProbs, layer, base));
                        for (int j = 0; j < valid; ++j) {
                            dprow[j] = srow[j] * (dprow[j] * mask[j] - Dr) * scale;
                            srow[j] *= mask[j];
                        }
                        std::fill(dprow + valid, dprow + nk, 0.0f);
                    } else {
                        for (int j = 0; j < valid; ++j) dprow[j] = srow[j] * (dprow[j] - Dr) * scale;
                        // Past the diagonal dS is 0 (dP is unspecified there).
                        std::fill(dprow + valid, dprow + nk, 0.0f);
                    }
                }
                // dV[nk, hs] += Pdrop^T dY; dQ[nq, hs] += dS K; dK[nk, hs] += dS^T Q
                // (Pdrop and dS are 0 past the diagonal: skipped)
                k::attn_accumulate(dqkv_b + int64_t(k0) * S3 + v_at, S3, S, nk, true, dY, Q, nk, hs, nq, diag);
                k::attn_accumulate(dqkv_b + int64_t(q0) * S3 + h * hs, S3, dP, nk, false, K, S3, nq, hs, nk, diag);
                k::attn_accumulate(dqkv_b + int64_t(k0) * S3 + k_at, S3, dP, nk, true, Qt, S3, nk, hs, nq, diag);
            }
        }
        }
    });
}

// ----------------------------------------------------------------------------------------
// the KV-cached attention of one sequence: cache [n_layer][n_kv_head][n_ctx][hs]

// The keys and values of rows [0, rows) of qkv [rows, QKV] into positions first.. of layer l.
void Engine::Impl::store_keys_values(KvCache& cache, int l, const float* qkv, int rows, int first) const {
    const int KV = dims.KV, H = dims.NKV, hs = dims.hd, n_ctx = cfg.n_ctx;
    float* keys = cache.keys.data() + int64_t(l) * n_ctx * KV;
    float* values = cache.values.data() + int64_t(l) * n_ctx * KV;
    for (int r = 0; r < rows; ++r) {
        const float* row = qkv + int64_t(r) * dims.QKV;
        for (int h = 0; h < H; ++h) {
            const int64_t at = (int64_t(h) * n_ctx + first + r) * hs;
            std::memcpy(keys + at, row + dims.Q + h * hs, sizeof(float) * size_t(hs));
            std::memcpy(values + at, row + dims.Q + KV + h * hs, sizeof(float) * size_t(hs));
        }
    }
}

// y [rows, Q] = causal attention of the query rows q [rows, QKV stride] at positions
// first..first+rows-1 over the cached positions 0..their own. One row: dot products and
// axpys on this thread; more: two GEMMs per head.
void Engine::Impl::attention_cached(float* y, const float* q, int rows, int first, const KvCache& cache, int l,
                                    ThreadPool& pool) {
    const int Q = dims.Q, S3 = dims.QKV, H = dims.NH, hs = dims.hd, n_ctx = cfg.n_ctx, group = H / dims.NKV;
    const float scale = 1.0f / std::sqrt(float(hs));
    const int len = first + rows;  // keys 0..len-1; row r sees keys 0..first+r
    // Grown geometrically up to what the pass needs: n_ctx^2 floats would be gigabytes at the
    // published Llama-family contexts (Qwen3's 40,960 positions: 6.7 GB).
    if (cached_scores.size() < size_t(rows) * len)
        cached_scores.resize(std::min(size_t(n_ctx) * n_ctx, std::max(size_t(rows) * len, 2 * cached_scores.size())));
    float* scores = cached_scores.data();
    const float* keys_l = cache.keys.data() + int64_t(l) * n_ctx * dims.KV;
    const float* values_l = cache.values.data() + int64_t(l) * n_ctx * dims.KV;
    for (int h = 0; h < H; ++h) {
        const float* keys = keys_l + int64_t(h / group) * n_ctx * hs;      // [n_ctx, hs]
        const float* values = values_l + int64_t(h / group) * n_ctx * hs;  // [n_ctx, hs]
        if (rows == 1) {
            const float* qh = q + h * hs;
            for (int s = 0; s < len; ++s) scores[s] = k::dot(qh, keys + int64_t(s) * hs, hs) * scale;
            k::softmax(scores, scores, len);
            float* yh = y + h * hs;
            std::fill(yh, yh + hs, 0.0f);
            for (int s = 0; s < len; ++s) k::axpy(yh, scores[s], values + int64_t(s) * hs, hs);
            continue;
        }
        // scores = scale * Q_h K_h^T                                     [rows, len]
        k::sgemm_parallel(gemm_args(false, true, rows, len, hs, q + h * hs, S3, keys, hs, scores, len, scale), pool);
        // Causal softmax: row r over its first first+r+1 keys; the later ones get weight 0.
        pool.parallel_for(rows, [&](int, int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
                float* row = scores + r * len;
                const int visible = first + int(r) + 1;
                k::softmax(row, row, visible);
                std::fill(row + visible, row + len, 0.0f);
            }
        });
        // y_h = P V_h                                                    [rows, hs]
        k::sgemm_parallel(gemm_args(false, false, rows, hs, len, scores, len, values, hs, y + h * hs, Q), pool);
    }
}

// ----------------------------------------------------------------------------------------
// the Llama family's q/k steps: per-head RMSNorm (Qwen3), then rotary positions

namespace {

// fn(row, position, count) over runs of rows [r0, r1) that stay within one sequence of T rows.
template <class Fn>
void for_position_runs(int64_t r0, int64_t r1, int T, Fn&& fn) {
    for (int64_t r = r0; r < r1;) {
        const int t = int(r % T);
        const int64_t count = std::min<int64_t>(r1 - r, T - t);
        fn(r, t, count);
        r += count;
    }
}

}  // namespace

void Engine::Impl::qk_forward(LayerActs& a, const float* w_qnorm, const float* w_knorm, int B, int T,
                              const float* cos, const float* sin, ThreadPool& pool) {
    const int S3 = dims.QKV, Q = dims.Q, KV = dims.KV, NH = dims.NH, NKV = dims.NKV, hd = dims.hd, half = hd / 2;
    const int64_t N = int64_t(B) * T;
    StepProfile::Scope phase(profile, kForwardAttentionPhase[recomputing]);
    traffic(N * (Q + KV), N * (Q + KV) * (cfg.qk_norm ? 2 : 1));
    for_rows(pool, N, [&](int, int64_t r0, int64_t r1) {
        if (cfg.qk_norm) {
            for (int64_t r = r0; r < r1; ++r) {
                float* row = a.qkv + r * S3;
                float* raw = a.qk_raw + r * (Q + KV);
                float* rstd = a.qk_rstd + r * (NH + NKV);
                std::memcpy(raw, row, sizeof(float) * size_t(Q + KV));
                k::rmsnorm_forward(row, rstd, raw, w_qnorm, NH, hd, cfg.layernorm_eps);
                k::rmsnorm_forward(row + Q, rstd + NH, raw + Q, w_knorm, NKV, hd, cfg.layernorm_eps);
            }
        }
        if (!dims.rotary) return;
        for_position_runs(r0, r1, T, [&](int64_t r, int t, int64_t count) {
            float* rows = a.qkv + r * S3;
            k::rope_forward(rows, S3, cos + int64_t(t) * half, sin + int64_t(t) * half, count, NH, hd);
            k::rope_forward(rows + Q, S3, cos + int64_t(t) * half, sin + int64_t(t) * half, count, NKV, hd);
        });
    });
}

void Engine::Impl::qk_backward(float* dqkv, const LayerActs& a, const float* w_qnorm, const float* w_knorm,
                               float* dqnorm, float* dknorm, int B, int T, ThreadPool& pool) {
    const int S3 = dims.QKV, Q = dims.Q, KV = dims.KV, NH = dims.NH, NKV = dims.NKV, hd = dims.hd, half = hd / 2;
    const int64_t N = int64_t(B) * T;
    const int nt = pool.size();
    StepProfile::Scope phase(profile, "backward q/k norm and rotary");
    traffic(N * (Q + KV) * (cfg.qk_norm ? 3 : 1), N * (Q + KV));
    std::vector<float> partial(cfg.qk_norm ? size_t(nt) * 2 * hd : 0, 0.0f);
    pool.parallel_for(N, [&](int thread, int64_t r0, int64_t r1) {
        if (dims.rotary)  // the transposed rotation, at the batch's positions 0..T-1
            for_position_runs(r0, r1, T, [&](int64_t r, int t, int64_t count) {
                float* rows = dqkv + r * S3;
                const float* c = rope_cos.data() + int64_t(t) * half;
                const float* s = rope_sin.data() + int64_t(t) * half;
                k::rope_backward(rows, S3, c, s, count, NH, hd);
                k::rope_backward(rows + Q, S3, c, s, count, NKV, hd);
            });
        if (!cfg.qk_norm) return;
        float* pw = partial.data() + size_t(thread) * 2 * hd;
        std::vector<float> dnormed(size_t(Q + KV));
        for (int64_t r = r0; r < r1; ++r) {
            float* row = dqkv + r * S3;
            const float* raw = a.qk_raw + r * (Q + KV);
            const float* rstd = a.qk_rstd + r * (NH + NKV);
            std::memcpy(dnormed.data(), row, sizeof(float) * size_t(Q + KV));
            std::memset(row, 0, sizeof(float) * size_t(Q + KV));
            k::rmsnorm_backward(row, pw, dnormed.data(), raw, w_qnorm, rstd, NH, hd);
            k::rmsnorm_backward(row + Q, pw + hd, dnormed.data() + Q, raw + Q, w_knorm, rstd + NH, NKV, hd);
        }
    });
    if (!dqnorm) return;
    for (int t = 0; t < nt; ++t) {  // in thread order
        const float* pw = partial.data() + size_t(t) * 2 * hd;
        for (int i = 0; i < hd; ++i) {
            dqnorm[i] += pw[i];
            dknorm[i] += pw[hd + i];
        }
    }
}

}  // namespace pg
