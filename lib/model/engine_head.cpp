// The engine's output head (see engine.cpp for the engine as a whole): the final LayerNorm, the
// tied output projection and the cross-entropy, forward and backward, in chunks of rows.
#include <algorithm>
#include <cassert>
#include <cstring>

#include "model/engine_impl.hpp"

namespace pg {

using namespace engine_detail;

namespace {

// Rows of the output projection + cross-entropy handled at once: big enough for efficient
// GEMMs, small enough that the logits chunk stays in cache.
constexpr int kLossChunkRows = 512;
// ... and at most this many bytes of logits per thread (a GPT-2 vocabulary's 50,257 columns
// make 512 rows 103 MB per thread: 206 MB of a LoRA step's memory on two threads; their gradient
// overwrites them in place), but never fewer than kMinLossChunkRows rows, so every chunk's
// product still reuses each packed panel of wte over many rows. Each chunk reads all of wte
// twice (logits, then the input gradient); wte outgrows the caches at that vocabulary (51 MB in
// fp16), so fewer, taller chunks stream it less often: 166 rows here (one 32 MB buffer) instead
// of 83 (16 MB of logits and 16 MB of their gradient, the same memory) took the B packing of
// an fp16 LoRA step at the Ailoos shape, where those reads stall, from 0.25 to 0.13 CPU s
// (perf samples; docs/performance.md).
constexpr int64_t kLossChunkBytes = int64_t(32) << 20;
constexpr int kMinLossChunkRows = 64;

int loss_chunk_rows(int V) {
    const int64_t fit = kLossChunkBytes / (int64_t(V) * int64_t(sizeof(float)));
    return int(std::max<int64_t>(kMinLossChunkRows, std::min<int64_t>(kLossChunkRows, fit)));
}
// The chunks a thread's `rows` are taken in, for chunks of about `chunk` rows: as few as fit
// chunks up to an eighth taller, of equal height in whole 8-row tiles (the last one shorter). At
// the Ailoos shape a thread's 512 rows in 166-row chunks left a 14-row one that repacked all of
// wte for 14 rows (35 ms per thread, as long as 33 rows of a tall chunk); now they are 176, 176
// and 160.
int balanced_chunk_rows(int64_t rows, int chunk) {
    if (rows <= chunk) return int(rows);
    const int64_t tallest = chunk + chunk / 8;
    const int64_t n = (rows + tallest - 1) / tallest;
    const int64_t even = ((rows + n - 1) / n + 7) / 8 * 8;
    return int(std::min<int64_t>(even, rows));
}

}  // namespace

int64_t Engine::Impl::head_scratch_floats(const ModelConfig& cfg, int64_t N, int nt, bool base_gradients) {
    // As head() sizes each thread's buffers (the logits chunk for the tallest thread's rows).
    const int V = cfg.vocab_size, C = cfg.n_embd;
    const int nominal_chunk = int(std::min<int64_t>(loss_chunk_rows(V), N));
    int chunk = 1;
    for (int t = 0; t < nt; ++t) {
        int64_t r0 = 0, r1 = 0;
        ThreadPool::chunk(N, nt, t, &r0, &r1);
        chunk = std::max(chunk, balanced_chunk_rows(r1 - r0, nominal_chunk));
    }
    const int64_t per_thread = int64_t(chunk) * V + 2 * int64_t(C) + (base_gradients ? int64_t(V) * C : 0);
    return int64_t(nt) * per_thread;
}

// ----------------------------------------------------------------------------------------
// final LayerNorm, tied output projection and cross-entropy: one parallel region in which
// each thread takes its rows in chunks of loss_chunk_rows(V), so [N, V] logits are never
// resident unless the caller asks for them. With grads: also d(loss) into the LayerNorm
// input (dresid, overwritten), ln_f and wte, the last two summed per thread and then added
// in thread order.
// x: the last layer's output [N, C].
// backward: also d(loss) into dresid; g: also into ln_f and wte (null: a frozen base).
LossSum Engine::Impl::head(const WeightsView& v, bool backward, const GptTensors<float>* g, const float* x,
                           const int32_t* targets, int N, float* losses, float* user_logits, float grad_scale,
                           ThreadPool& pool) {
    const int C = cfg.n_embd, V = cfg.vocab_size, nt = pool.size();
    const GptTensors<const float> w = v.fp32_tensors();
    // The output projection: the tied embedding, or the separate head.
    const WeightMatrix wte = v.matrix(cfg.tied_head ? kWte : kLmHead);
    const bool rms = dims.rms;
    assert(!(backward && user_logits));  // the gradient overwrites the logits in place
    if (!targets && !user_logits) {  // nothing asked for
        if (losses) std::memset(losses, 0, sizeof(float) * size_t(N));
        return LossSum{};
    }
    // Every thread's rows (ThreadPool::chunk) in balanced chunks; the logits buffer holds the tallest.
    const int nominal_chunk = std::min(loss_chunk_rows(V), N);
    auto chunk_of = [&](int64_t rows) { return balanced_chunk_rows(rows, nominal_chunk); };
    int chunk = 1;
    for (int t = 0; t < nt; ++t) {
        int64_t r0 = 0, r1 = 0;
        ThreadPool::chunk(N, nt, t, &r0, &r1);
        chunk = std::max(chunk, chunk_of(r1 - r0));
    }
    StepProfile::Scope phase(profile, backward ? "head (ln_f, logits, loss and their backward)" : "forward head");
    if (profile) {
        // x read and ln_f's output written and read; per row V logits written and read (and
        // their gradient written and read twice); wte read per chunk (twice backward) and a
        // thread's dwte read and written per chunk.
        const int64_t chunks = (N + chunk - 1) / chunk + nt - 1, VC = int64_t(V) * C, n = N;
        traffic(2 * n * C + n * V * (backward ? 3 : 1) + chunks * VC * (backward ? (g ? 3 : 2) : 1),
                n * C * (backward ? 3 : 1) + n * V * (backward ? 2 : 1) + (g ? chunks * VC : 0));
    }
    if (head_scratch.size() < size_t(nt)) head_scratch.resize(size_t(nt));
    for (int t = 0; t < nt; ++t) {  // sized and zeroed here: a thread without rows adds nothing
        HeadScratch& h = head_scratch[size_t(t)];
        if (h.logits.size() < size_t(chunk) * V) h.logits.resize(size_t(chunk) * V);
        if (!backward) continue;
        if (g) {
            if (h.dwte.size() != size_t(V) * C) h.dwte.resize(size_t(V) * C); else h.dwte.zero();
        }
        if (h.dlnf.size() != size_t(2) * C) h.dlnf.resize(size_t(2) * C); else h.dlnf.zero();
    }
    float* dlnf = branch;  // [N, C] d(loss)/d(ln_f output)
    ln2_layer = -1;        // ln_out is ln_f's output from here on
    for_rows(pool, N, [&](int t, int64_t r0, int64_t r1) {
        HeadScratch& h = head_scratch[size_t(t)];
        if (rms)
            k::rmsnorm_forward(ln_out + r0 * C, lnf_rstd + r0, x + r0 * C, w.lnfw, r1 - r0, C, cfg.layernorm_eps);
        else
            k::layernorm_forward(ln_out + r0 * C, lnf_mean + r0, lnf_rstd + r0, x + r0 * C, w.lnfw, w.lnfb,
                                 r1 - r0, C, cfg.layernorm_eps);
        const int my_chunk = chunk_of(r1 - r0);
        for (int64_t c0 = r0; c0 < r1; c0 += my_chunk) {
            const int n = int(std::min<int64_t>(my_chunk, r1 - c0));
            const float* lnf = ln_out + c0 * C;
            float* lg = user_logits ? user_logits + c0 * V : h.logits.data();
            // logits[n, V] = lnf . wte[:V]^T   (the padding rows of wte are never used); a
            // single row (the cached step) as V dot products
            if (N == 1) {
                float* widened = row_scratch(C);
                for (int token = 0; token < V; ++token) lg[token] = k::dot(lnf, wte.row(token, C, widened), C);
            } else {
                k::GemmArgs logits = gemm_args(false, true, n, V, C, lnf, C, nullptr, C, lg, V);
                wte.set_gemm_b(logits);
                k::sgemm(logits);
            }
            if (!targets) continue;
            for (int i = 0; i < n; ++i) {
                const int target = targets[c0 + i];
                // in a backward pass the gradient overwrites the row's logits
                float* dl = backward ? lg + int64_t(i) * V : nullptr;
                if (target < 0) {
                    row_loss[c0 + i] = 0.0f;
                    if (backward) std::memset(dl, 0, sizeof(float) * size_t(V));
                    continue;
                }
                row_loss[c0 + i] = k::softmax_cross_entropy(lg + int64_t(i) * V, V, target, backward ? dl : nullptr,
                                                            grad_scale);
            }
            if (!backward) continue;
            // dlnf[n, C] = dlogits . wte[:V];  dwte[:V] += dlogits^T . lnf
            k::GemmArgs dlnf_args = gemm_args(false, false, n, C, V, lg, V, nullptr, C, dlnf + c0 * C, C);
            wte.set_gemm_b(dlnf_args);
            k::sgemm(dlnf_args);
            if (g) k::sgemm(gemm_args(true, false, V, C, n, lg, V, lnf, C, h.dwte.data(), C, 1.0f, 1.0f));
        }
        if (!backward) return;
        std::memset(dresid + r0 * C, 0, sizeof(float) * size_t((r1 - r0) * C));
        if (rms)
            k::rmsnorm_backward(dresid + r0 * C, h.dlnf.data(), dlnf + r0 * C, x + r0 * C, w.lnfw, lnf_rstd + r0,
                                r1 - r0, C);
        else
            k::layernorm_backward(dresid + r0 * C, h.dlnf.data(), h.dlnf.data() + C, dlnf + r0 * C, x + r0 * C,
                                  w.lnfw, lnf_mean + r0, lnf_rstd + r0, r1 - r0, C);
    });
    if (g) {
        ++weight_gradient_gemms;  // the dwte products above, one per chunk of rows
        StepProfile::Scope reduction(profile, kReductionPhase);
        traffic(int64_t(nt + 1) * V * C, int64_t(V) * C, int64_t(nt - 1) * V * C);
        float* dhead = cfg.tied_head ? g->wte : g->lmhead;
        for (int t = 0; t < nt; ++t) {
            const HeadScratch& h = head_scratch[size_t(t)];
            k::axpy(dhead, 1.0f, h.dwte.data(), int64_t(V) * C);
            k::axpy(g->lnfw, 1.0f, h.dlnf.data(), C);
            if (!rms) k::axpy(g->lnfb, 1.0f, h.dlnf.data() + C, C);
        }
    }
    LossSum result;
    if (targets) {
        for (int i = 0; i < N; ++i)
            if (targets[i] >= 0) {
                result.sum += double(row_loss[i]);
                result.count += 1;
            }
    }
    if (losses)
        for (int i = 0; i < N; ++i) losses[i] = targets ? row_loss[i] : 0.0f;
    return result;
}

}  // namespace pg
