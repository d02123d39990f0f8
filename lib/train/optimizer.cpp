#include "train/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "kernels/dispatch.hpp"

namespace pg {

std::vector<ParamPiece> optimizer_pieces(const std::vector<TensorEntry>& tensors, int64_t total,
                                         bool decay_embeddings, bool skip_linear_weights) {
    // Decay flag per tensor, merged into maximal runs, then cut at block boundaries.
    struct Run {
        ParamPiece piece;
        bool skip;  // a 2-D linear weight (left to Muon when skip_linear_weights)
    };
    std::vector<Run> runs;
    int64_t expected = 0;
    std::vector<const TensorEntry*> by_offset;
    for (const auto& e : tensors) by_offset.push_back(&e);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorEntry* a, const TensorEntry* b) { return a->offset < b->offset; });
    for (const TensorEntry* e : by_offset) {
        require(e->offset == expected, PG_ERR_INTERNAL,
                "optimizer: tensor table does not tile the parameters at " + e->name);
        bool decay = e->is_linear_weight ||
                     (decay_embeddings && (e->kind == kWte || e->kind == kWpe || e->kind == kLmHead));
        const bool skip = e->is_linear_weight;
        if (!runs.empty() && runs.back().piece.decay == decay && runs.back().skip == skip)
            runs.back().piece.count += e->numel;
        else
            runs.push_back(Run{ParamPiece{e->offset, e->numel, decay}, skip});
        expected += e->numel;
    }
    require(expected == total, PG_ERR_INTERNAL, "optimizer: tensor table does not cover the parameters");

    std::vector<ParamPiece> pieces;
    for (const Run& run : runs) {
        if (skip_linear_weights && run.skip) continue;
        const ParamPiece& r = run.piece;
        int64_t pos = r.offset, end = r.offset + r.count;
        while (pos < end) {
            int64_t block_end = (pos / kOptimizerBlock + 1) * kOptimizerBlock;
            int64_t stop = std::min(end, block_end);
            pieces.push_back(ParamPiece{pos, stop - pos, r.decay});
            pos = stop;
        }
    }
    return pieces;
}

double global_grad_norm(const float* g, int64_t n, ThreadPool& pool) {
    const int64_t n_blocks = (n + kOptimizerBlock - 1) / kOptimizerBlock;
    std::vector<double> partial(std::size_t(n_blocks), 0.0);
    pool.parallel_for(n_blocks, [&](int, int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
            int64_t start = b * kOptimizerBlock;
            partial[std::size_t(b)] = kernels::sum_squares(g + start, std::min(kOptimizerBlock, n - start));
        }
    });
    double sum = 0.0;
    for (double p : partial) sum += p;  // block order: the same for any thread count
    return std::sqrt(sum);
}

void scale_gradients(float* g, int64_t n, float factor, ThreadPool& pool) {
    pool.parallel_for(n, [&](int, int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) g[i] *= factor;
    });
}

void adamw_update(float* params, const float* grads, float* m, float* v,
                  const std::vector<ParamPiece>& pieces, const AdamWStep& s, ThreadPool& pool) {
    const float bc1 = float(1.0 - std::pow(double(s.beta1), double(s.t)));
    const float bc2 = float(1.0 - std::pow(double(s.beta2), double(s.t)));
    pool.parallel_for(int64_t(pieces.size()), [&](int, int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const ParamPiece& p = pieces[std::size_t(i)];
            kernels::adamw(params + p.offset, grads + p.offset, m + p.offset, v + p.offset, p.count,
                           s.lr, s.beta1, s.beta2, s.eps, p.decay ? s.weight_decay : 0.0f, bc1, bc2);
        }
    });
}

}  // namespace pg
