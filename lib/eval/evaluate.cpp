#include "eval/evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/thread_pool.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pg {

std::vector<EvalWindow> plan_windows(int64_t n_tokens, int window, int stride) {
    require(n_tokens >= 2 && window >= 1 && stride >= 1 && stride <= window, PG_ERR_INTERNAL,
            "plan_windows: arguments were not validated");
    const int64_t predictions = n_tokens - 1;
    std::vector<EvalWindow> plan;
    if (predictions <= window) {  // one window holds the whole split
        plan.push_back({0, int(predictions), 0});
        return plan;
    }
    if (stride == window) {  // non-overlapping; the last window is shorter
        plan.reserve(std::size_t((predictions + window - 1) / window));
        for (int64_t start = 0; start < predictions; start += window)
            plan.push_back({start, int(std::min<int64_t>(window, predictions - start)), 0});
        return plan;
    }
    // Sliding: window 0 scores all W positions; window k covers [k*S, k*S + W) and scores its
    // last S positions while it fits; a final window ending at the split's end scores the rest.
    plan.reserve(std::size_t((predictions - window) / stride + 2));
    plan.push_back({0, window, 0});
    int64_t scored_end = window;  // predictions 1..scored_end are scored
    for (int64_t start = stride; start + window <= predictions; start += stride) {
        plan.push_back({start, window, window - stride});
        scored_end = start + window;
    }
    if (scored_end < predictions)
        plan.push_back({predictions - window, window, int(window - (predictions - scored_end))});
    return plan;
}

namespace {

// The bytes of the scored target tokens[index] with the model's tokenizer (tok not NULL).
int64_t target_bytes(const Tokenizer& tok, const int32_t* tokens, int64_t index) {
    const int64_t len = tok.token_length(tokens[index]);
    if (len < 0)
        throw Error(PG_ERR_INVALID_ARGUMENT, "token " + std::to_string(index) + " is " +
                                                 std::to_string(tokens[index]) +
                                                 ", which the model's tokenizer has no bytes for (a gap in its id "
                                                 "range), so bits per byte are undefined");
    return len;
}

// A NaN or infinite mean is never returned as a score: PG_ERR_NOT_FINITE instead.
EvalResult make_result(double sum, int64_t count, int64_t bytes, int64_t n_windows) {
    require(std::isfinite(sum), PG_ERR_NOT_FINITE,
            "the loss over " + std::to_string(count) + " scored positions is not finite (" +
                std::to_string(sum) + "): the model's weights diverged (NaN or infinite); no score is reported");
    EvalResult r;
    r.n_scored = count;
    r.n_windows = n_windows;
    r.mean_loss = count ? sum / double(count) : 0.0;
    r.bits_per_token = r.mean_loss / std::log(2.0);
    // The same operations as bits_per_token: one byte a token gives the same double exactly.
    r.n_bytes = bytes;
    r.bits_per_byte = bytes ? sum / double(bytes) / std::log(2.0) : 0.0;
    return r;
}

}  // namespace

EvalResult evaluate(Session& session, const int32_t* tokens, std::size_t n, const EvalOptions& opt) {
    const Model& model = session.model();
    const ModelConfig& cfg = model.config();
    require(opt.window >= 0 && opt.window <= cfg.n_ctx, PG_ERR_INVALID_ARGUMENT,
            "window " + std::to_string(opt.window) + " is outside [0, n_ctx = " +
                std::to_string(cfg.n_ctx) + "] (0 = n_ctx)");
    const int window = opt.window ? opt.window : cfg.n_ctx;
    require(opt.stride >= 0 && opt.stride <= window, PG_ERR_INVALID_ARGUMENT,
            "stride " + std::to_string(opt.stride) + " is outside [0, window = " +
                std::to_string(window) + "] (0 = window)");
    const int stride = opt.stride ? opt.stride : window;
    require(opt.batch_size >= 1, PG_ERR_INVALID_ARGUMENT,
            "batch_size " + std::to_string(opt.batch_size) + " must be at least 1");
    require(n >= 2, PG_ERR_INVALID_ARGUMENT,
            "the split has " + std::to_string(n) + " tokens; at least 2 are needed");

    const std::vector<EvalWindow> plan = plan_windows(int64_t(n), window, stride);
    // The bytes of exactly the targets scored below (tokens 1..n-1, each once), counted before
    // any forward pass so that a target without bytes costs no evaluation.
    int64_t bytes = 0;
    if (const Tokenizer* tok = model.tokenizer())
        for (const EvalWindow& w : plan)
            for (int t = w.first_scored; t < w.length; ++t) bytes += target_bytes(*tok, tokens, w.start + t + 1);
    const int max_len = plan.front().length;  // every window is at most as long as the first
    const int max_batch = int(std::min<std::size_t>(std::size_t(opt.batch_size), plan.size()));
    ThreadPool& pool = session.pool();
    Engine& engine = session.engine(max_batch, max_len);
    std::vector<int32_t> inputs(std::size_t(max_batch) * max_len), targets(inputs.size());
    std::vector<float> losses(inputs.size());

    const int64_t total = int64_t(n) - 1;
    double sum = 0.0;  // in window order, position order: independent of batching and threads
    int64_t count = 0;
    for (std::size_t first = 0; first < plan.size();) {
        // A batch: up to batch_size consecutive windows of the same length.
        const int T = plan[first].length;
        std::size_t last = first;
        while (last < plan.size() && plan[last].length == T && int(last - first) < max_batch) ++last;
        const int B = int(last - first);
        for (int b = 0; b < B; ++b) {
            const EvalWindow& w = plan[first + std::size_t(b)];
            for (int t = 0; t < T; ++t) {
                inputs[std::size_t(b) * T + t] = tokens[w.start + t];
                targets[std::size_t(b) * T + t] = t >= w.first_scored ? tokens[w.start + t + 1] : -1;
            }
        }
        engine.forward(session.weights(), inputs.data(), targets.data(), B, T, losses.data(), nullptr, pool);
        for (int b = 0; b < B; ++b) {
            const EvalWindow& w = plan[first + std::size_t(b)];
            for (int t = w.first_scored; t < T; ++t) sum += double(losses[std::size_t(b) * T + t]);
            count += w.scored();
        }
        first = last;
        if (opt.progress && opt.progress(opt.progress_user, count, total) != 0)
            throw Error(PG_ERR_CANCELLED, "cancelled by the progress callback after " +
                                              std::to_string(count) + " of " + std::to_string(total) +
                                              " positions");
    }
    require(count == total, PG_ERR_INTERNAL,
            "scored " + std::to_string(count) + " positions, expected " + std::to_string(total));
    return make_result(sum, count, bytes, int64_t(plan.size()));
}

EvalResult evaluate_sampled(Session& session, const int32_t* tokens, std::size_t n, const SampledEvalOptions& opt) {
    const Model& model = session.model();
    const ModelConfig& cfg = model.config();
    const int n_batches = opt.n_batches, batch_size = opt.batch_size;
    const int T = cfg.n_ctx;
    require(n_batches >= 1, PG_ERR_INVALID_ARGUMENT,
            "n_batches " + std::to_string(n_batches) + " must be at least 1");
    require(batch_size >= 1, PG_ERR_INVALID_ARGUMENT,
            "batch_size " + std::to_string(batch_size) + " must be at least 1");
    require(n >= std::size_t(T) + 1, PG_ERR_INVALID_ARGUMENT,
            "the split has " + std::to_string(n) + " tokens; a window needs n_ctx + 1 = " +
                std::to_string(T + 1));

    ThreadPool& pool = session.pool();
    Engine& engine = session.engine(batch_size, T);
    std::vector<int32_t> inputs(std::size_t(batch_size) * T), targets(inputs.size());
    const Tokenizer* tok = model.tokenizer();
    Rng rng(opt.seed);
    double sum = 0.0;
    int64_t count = 0, bytes = 0;
    for (int k = 0; k < n_batches; ++k) {
        for (int b = 0; b < batch_size; ++b) {
            const std::size_t offset = std::size_t(rng.below(uint64_t(n) - uint64_t(T)));
            for (int t = 0; t < T; ++t) {
                inputs[std::size_t(b) * T + t] = tokens[offset + t];
                targets[std::size_t(b) * T + t] = tokens[offset + t + 1];
                if (tok) bytes += target_bytes(*tok, tokens, int64_t(offset) + t + 1);
            }
        }
        const LossSum s = engine.forward(session.weights(), inputs.data(), targets.data(), batch_size, T,
                                         nullptr, nullptr, pool);
        sum += s.sum;
        count += s.count;
    }
    return make_result(sum, count, bytes, int64_t(n_batches) * batch_size);
}

LossSum forward(Session& session, const int32_t* tokens, int B, int T, const int32_t* targets, float* logits) {
    constexpr int kSequencesPerPass = 16;
    const int chunk = std::min<int>(B, kSequencesPerPass);
    const int V = session.model().config().vocab_size;
    Engine& engine = session.engine(chunk, T);
    LossSum total;
    for (int b0 = 0; b0 < B; b0 += chunk) {
        const int nb = std::min(chunk, B - b0);
        const int64_t offset = int64_t(b0) * T;
        const LossSum part = engine.forward(session.weights(), tokens + offset, targets ? targets + offset : nullptr,
                                            nb, T, nullptr, logits ? logits + offset * V : nullptr, session.pool());
        total.sum += part.sum;
        total.count += part.count;
    }
    return total;
}

}  // namespace pg
