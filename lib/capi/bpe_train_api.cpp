// C API: training a byte-level BPE tokenizer (tokenizer/bpe_trainer.hpp).
#include <string>
#include <string_view>
#include <vector>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "tokenizer/bpe_trainer.hpp"

extern "C" {

void pg_bpe_train_options_default(pg_bpe_train_options* opts) {
    if (!opts) return;
    *opts = pg::blank_c_struct<pg_bpe_train_options>();
    opts->min_frequency = 2;
    opts->pattern = PG_BPE_PATTERN_GPT2;
}

pg_status pg_bpe_train(const char* const* texts, const size_t* lens, size_t n_texts, int32_t vocab_size,
                       const pg_bpe_train_options* opts, pg_tokenizer** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_bpe_train";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        pg::require_arg((texts != nullptr && lens != nullptr) || n_texts == 0, fn,
                        "texts or lens is NULL but n_texts is not 0");
        pg_bpe_train_options o;
        pg_bpe_train_options_default(&o);
        pg::read_options(opts, &o, fn);
        pg::require_arg(o.pattern >= PG_BPE_PATTERN_GPT2 && o.pattern <= PG_BPE_PATTERN_O200K, fn,
                        "pattern is not one of PG_BPE_PATTERN_GPT2, _CL100K, _O200K");
        pg::require_arg(o.n_special_tokens >= 0, fn, "n_special_tokens is negative");
        pg::require_arg(o.special_tokens != nullptr || o.n_special_tokens == 0, fn,
                        "special_tokens is NULL but n_special_tokens is not 0");
        pg::bpe::TrainOptions train;
        train.vocab_size = vocab_size;
        train.min_frequency = o.min_frequency;
        train.pattern = pg::bpe::Pattern(o.pattern);
        train.n_threads = o.n_threads;
        for (int32_t i = 0; i < o.n_special_tokens; ++i) {
            if (!o.special_tokens[i])
                throw pg::Error(PG_ERR_INVALID_ARGUMENT,
                                std::string(fn) + ": special_tokens[" + std::to_string(i) + "] is NULL");
            train.special_tokens.emplace_back(o.special_tokens[i]);
        }
        if (o.progress) {
            const pg_progress_fn progress = o.progress;
            void* user = o.progress_user;
            train.progress = [progress, user](int64_t done, int64_t total) { return progress(user, done, total) == 0; };
        }
        std::vector<std::string_view> views;
        views.reserve(n_texts);
        for (size_t i = 0; i < n_texts; ++i) {
            if (!texts[i] && lens[i] != 0)
                throw pg::Error(PG_ERR_INVALID_ARGUMENT, std::string(fn) + ": texts[" + std::to_string(i) +
                                                             "] is NULL but lens[" + std::to_string(i) + "] is not 0");
            views.emplace_back(texts[i] ? texts[i] : "", lens[i]);
        }
        auto handle = std::make_unique<pg_tokenizer>();
        handle->impl = pg::bpe::train_bpe(views, train);
        *out = handle.release();
    });
}

}  // extern "C"
