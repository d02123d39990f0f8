// Token sampling (temperature, top-k, top-p) and the generation loop (stop strings, streaming
// callback) on a session, continuing from the session's sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "eval/session.hpp"
#include "phonegpt/phonegpt.h"
#include "tokenizer/tokenizer.hpp"

namespace pg {

struct SampleOptions {
    float temperature = 1.0f;  // 0 = greedy
    int top_k = 0;             // 0 = off
    float top_p = 1.0f;        // 1 = off
};

// Throws PG_ERR_INVALID_ARGUMENT, naming the option, unless temperature is finite and >= 0,
// top_k >= 0 and top_p in (0, 1].
void validate_sample_options(const SampleOptions& options);

// Picks the next token from logits. Draws at most one number from the Rng per call (none when
// greedy). Candidates are ranked by logit, ties by lower id, so top_k = 1 is greedy.
class TokenSampler {
public:
    TokenSampler(int vocab_size, const SampleOptions& options);
    int32_t pick(const float* logits, Rng& rng);

private:
    int vocab_;
    SampleOptions opt_;
    std::vector<int32_t> order_;
    std::vector<double> probs_;
};

// Finds stop strings in generated text as the streaming decoder (pg_token_stream) emits it:
// complete UTF-8 only, invalid bytes as U+FFFD. So a stop string split across tokens, or whose
// character is split across tokens, matches once the character is complete, and what is matched
// is exactly the text a caller printing the stream sees.
class StopStringMatcher {
public:
    // Throws PG_ERR_INVALID_ARGUMENT for an empty stop string or one that is not valid UTF-8 (it
    // could never match the decoded text).
    StopStringMatcher(const Tokenizer& tokenizer, std::vector<std::string> stops);
    // Adds one token; true once a stop string occurs in the text completed so far (it ends in
    // the text this token completed: an earlier match would have returned true before).
    bool push(int32_t token);

private:
    const Tokenizer& tokenizer_;
    std::vector<std::string> stops_;
    std::size_t longest_ = 0;
    std::string pending_;  // bytes of a character not yet complete
    std::string tail_;     // the last complete text, enough to hold a match ending in new text
};

// Everything pg_generate takes besides the session's own options, validated.
struct GenerateOptions {
    SampleOptions sampling;
    uint64_t seed = 1337;
    int max_tokens = 256;
    pg_token_fn on_token = nullptr;
    void* on_token_user = nullptr;
    std::vector<std::string> stop_strings;
};

// Generates up to max_tokens tokens after the session's sequence (which must not be empty),
// passing each to on_token and writing the first `capacity` of them to `out`; every generated
// token is appended to the session's sequence (the last one pending, computed by whatever
// comes next). Returns the number generated. Throws pg::Error for bad options.
std::size_t generate(Session& session, const GenerateOptions& options, int32_t* out, std::size_t capacity);

}  // namespace pg
