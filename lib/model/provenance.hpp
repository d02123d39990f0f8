// Where a model's weights come from: initialised from a seed and never trained, trained for so
// many steps and tokens (by this library), or unknown (a file written before checkpoints
// recorded it, or weights imported from another format). It travels with the weights in
// checkpoints (docs/formats.md §1, section PROV) so that a base that silently holds random
// weights is recognised: adapter training and adapter validation refuse a never-trained base
// unless the caller says so (lib/lora/adapter.hpp, check_base_trained).
#pragma once

#include <cstdint>
#include <string>

namespace pg {

struct Provenance {
    enum class Kind : uint32_t {
        unknown = 0,      // not recorded
        initialised = 1,  // init_seed's GPT-2 initialisation, never trained (steps = tokens = 0)
        trained = 2,      // trained here for `steps` optimizer steps over `tokens` input tokens
    };
    Kind kind = Kind::unknown;
    bool has_init_seed = false;  // the initialisation's seed is known (a trained model keeps it)
    uint64_t init_seed = 0;
    int64_t steps = 0;
    int64_t tokens = 0;

    static Provenance initialised_from(uint64_t seed) {
        Provenance p;
        p.kind = Kind::initialised;
        p.has_init_seed = true;
        p.init_seed = seed;
        return p;
    }
    bool never_trained() const { return kind == Kind::initialised; }
    // One optimizer step over `step_tokens` tokens changed the weights.
    void record_step(int64_t step_tokens) {
        kind = Kind::trained;
        steps += 1;
        tokens += step_tokens;
    }
    // "initialised from seed 11, never trained", "trained for 40 steps (2560 tokens) from seed
    // 11", "unknown (not recorded)".
    std::string describe() const {
        const std::string seed = has_init_seed ? "seed " + std::to_string(init_seed) : "an unrecorded seed";
        switch (kind) {
            case Kind::initialised: return "initialised from " + seed + ", never trained";
            case Kind::trained:
                return "trained for " + std::to_string(steps) + " steps (" + std::to_string(tokens) +
                       " tokens) from " + seed;
            case Kind::unknown: break;
        }
        return "unknown (not recorded)";
    }
};

}  // namespace pg
