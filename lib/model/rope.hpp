// Rotary positions' angles (pg_model_config.positions = PG_POSITIONS_ROTARY), as Hugging Face
// computes them: inverse frequencies theta^(-2i/d) for i < d/2, with Llama 3's frequency scaling
// when rope_scaling_factor is set, and the cos/sin of position * frequency that the RoPE kernels
// (kernels/dispatch.hpp rope_forward) rotate by. In double, rounded once to float.
#pragma once

#include <vector>

#include "model/config.hpp"

namespace pg {

// The head_dim / 2 inverse frequencies of a configuration with rotary positions.
std::vector<double> rope_inverse_frequencies(const ModelConfig& cfg);

// cos and sin [n, head_dim / 2] of positions [first, first + n).
void rope_angles(const ModelConfig& cfg, int first, int n, float* cos, float* sin);

}  // namespace pg
