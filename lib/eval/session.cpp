#include "eval/session.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>


namespace pg {

Session::Session(const Model& model, const SessionOptions& options)
    : model_(model),
      pool_(options.n_threads),
      slide_keep_(options.slide_keep ? options.slide_keep : model.config().n_ctx),
      arithmetic_(options.arithmetic) {
    assert(options.slide_keep >= 0 && options.slide_keep <= model.config().n_ctx);
}

Engine& Session::engine(int B, int T) {
    if (!engine_ || B > engine_->max_B() || T > engine_->max_T()) {
        const int max_B = engine_ ? std::max(B, engine_->max_B()) : B;
        const int max_T = engine_ ? std::max(T, engine_->max_T()) : T;
        engine_.reset();  // free the old scratch before allocating the new
        engine_ = std::make_unique<Engine>(model_.config(), max_B, max_T);
        engine_->set_linear_hook(hook_);
    }
    return *engine_;
}

void Session::set_linear_hook(LinearHook* hook) {
    hook_ = hook;
    if (engine_) engine_->set_linear_hook(hook);
    // The cached keys and values were computed with the old hook: recompute the window.
    if (length_ > 0) {
        pending_.insert(pending_.begin(), window_.begin(), window_.begin() + length_);
        length_ = 0;
    }
}

void Session::reset() {
    pending_.clear();
    length_ = 0;
    position_ = 0;
    slides_ = 0;
}

void Session::append(const int32_t* tokens, std::size_t n) {
    pending_.insert(pending_.end(), tokens, tokens + n);
    position_ += int64_t(n);
}

const float* Session::logits() {
    compute_pending();
    return logits_.data();
}

void Session::compute_pending() {
    if (pending_.empty()) return;
    const ModelConfig& cfg = model_.config();
    const std::size_t n_ctx = std::size_t(cfg.n_ctx), k = pending_.size();
    if (!cache_) {
        cache_ = std::make_unique<KvCache>(cfg);
        window_.assign(n_ctx, 0);
        logits_.assign(std::size_t(cfg.vocab_size), 0.0f);
    }
    int first = length_;
    if (std::size_t(length_) + k <= n_ctx) {
        std::copy(pending_.begin(), pending_.end(), window_.begin() + length_);
        length_ += int(k);
    } else {
        // The window becomes the last `keep` tokens of window + pending, recomputed from 0.
        const std::size_t keep = std::min(n_ctx, std::max(std::size_t(slide_keep_), k));
        if (keep <= k) {
            std::copy(pending_.end() - std::ptrdiff_t(keep), pending_.end(), window_.begin());
        } else {
            const std::size_t old = keep - k;  // < length_: see keep's bounds
            std::memmove(window_.data(), window_.data() + (std::size_t(length_) - old), old * sizeof(int32_t));
            std::copy(pending_.begin(), pending_.end(), window_.begin() + std::ptrdiff_t(old));
        }
        if (length_ > 0) ++slides_;  // (a first prompt longer than n_ctx is cropped, not slid)
        length_ = int(keep);
        first = 0;
    }
    pending_.clear();
    const int rows = length_ - first;
    Engine* e = engine_.get();
    if (!e || int64_t(e->max_B()) * e->max_T() < rows) e = &engine(1, cfg.n_ctx);
    e->forward_cached(weights(), window_.data() + first, first, rows, *cache_, logits_.data(), pool_);
    computed_ += rows;
}

}  // namespace pg
