// What every fuzz target checks when an input loads: writing the loaded model back out and
// reading that again gives the same model bit for bit, and writing it a second time gives the
// same bytes (a loader that accepts something its writer cannot reproduce, or that drops or
// changes a value on the way, fails here). A broken property aborts, which libFuzzer reports
// as a crash with the input saved.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "model/model.hpp"

namespace fuzz {

[[noreturn]] inline void property_failed(const char* what) {
    std::fprintf(stderr, "fuzz property broken: %s\n", what);
    std::abort();
}

inline void require_same_model(const pg::Model& a, const pg::Model& b, const char* what) {
    const pg::ModelConfig &x = a.config(), &y = b.config();
    const bool same_geometry = x.n_layer == y.n_layer && x.n_head == y.n_head && x.n_embd == y.n_embd &&
                               x.n_ctx == y.n_ctx && x.vocab_size == y.vocab_size &&
                               x.padded_vocab_size == y.padded_vocab_size &&
                               std::memcmp(&x.layernorm_eps, &y.layernorm_eps, sizeof x.layernorm_eps) == 0;
    if (!same_geometry || a.storage() != b.storage() || a.fp32_weights_hash() != b.fp32_weights_hash())
        property_failed(what);
    // Every tensor's stored bytes (fp32, or 16-bit or blocks for a frozen base's big matrices).
    for (std::size_t i = 0; i < a.tensors().size(); ++i) {
        const pg::TensorEntry& e = a.tensors()[i];
        if (std::memcmp(a.tensor_bytes(e), b.tensor_bytes(b.tensors()[i]), a.tensor_nbytes(e)) != 0) property_failed(what);
    }
}

inline void require_same_bytes(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, const char* what) {
    if (a != b) property_failed(what);
}

}  // namespace fuzz
