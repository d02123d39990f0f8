#include "train/memory_plan.hpp"

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "model/engine.hpp"
#include "model/model.hpp"
#include "model/params.hpp"
#include "model/weights_view.hpp"
#include "train/step_driver.hpp"

namespace pg {

namespace {

// A process linking libphonegpt before it allocates anything (code, C++ runtime, the allocator's
// arenas): about 4 MiB measured with bench_memory_plan on x86-64 Linux, plus each extra thread's
// touched stack.
constexpr int64_t kRuntimeBytes = int64_t(4) << 20;
constexpr int64_t kThreadStackBytes = int64_t(64) << 10;

int64_t weight_bytes_in(const ModelConfig& model, WeightStorage storage) {
    const ParamLayout layout(model);
    int64_t n = 0;
    for (int k = 0; k < kNumParamKinds; ++k) {
        const int64_t size = layout.size[std::size_t(k)];
        if (storage == WeightStorage::fp32 || !held_in_16_bits(ParamKind(k)))
            n += size * 4;
        else if (is_quantized(storage))
            n += size / kernels::kQuantBlock * int64_t(kernels::quant_block_bytes(quant_format_of(storage, ParamKind(k))));
        else
            n += size * 2;
    }
    return n;
}

}  // namespace

std::string mib_text(int64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / 1048576.0);
    return buf;
}

std::string describe_memory_plan(const TrainingMemoryPlan& p) {
    auto mib = [](int64_t b) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f", double(b) / 1048576.0);
        return std::string(buf);
    };
    return mib_text(p.peak_bytes) + " (weights " + mib(p.weights_bytes) + ", adapter " + mib(p.trained_bytes) +
           ", gradients " + mib(p.gradient_bytes) + ", optimizer " + mib(p.optimizer_bytes) + ", activations " +
           mib(p.activation_bytes) + ", checkpoint " + mib(p.checkpoint_bytes) + ", data " + mib(p.data_bytes) +
           ", runtime " + mib(p.runtime_bytes) + " MiB at batch_size " + std::to_string(p.batch_size) + ")";
}

TrainingMemoryPlan plan_training_memory(const ModelConfig& model, WeightStorage storage, const AdapterShape* adapter,
                                        const TrainConfig& config, int64_t n_data_tokens) {
    validate_model_config(model);
    require(n_data_tokens >= 0, PG_ERR_INVALID_ARGUMENT,
            "n_data_tokens = " + std::to_string(n_data_tokens) + " is negative");
    require(adapter || storage == WeightStorage::fp32, PG_ERR_INVALID_ARGUMENT,
            std::string("full training needs fp32 weights, not ") + weight_storage_name(storage) +
                " (a 16-bit storage is for a frozen base: plan an adapter)");
    const TrainConfig cfg = resolve_train_config(model, config);
    const int nt = cfg.n_threads > 0 ? cfg.n_threads : ThreadPool::hardware_threads();
    const int64_t N = int64_t(cfg.batch_size) * cfg.seq_len;
    const int64_t trained = adapter ? adapter->params : ParamLayout(model).total;
    TrainingMemoryPlan p;
    p.batch_size = cfg.batch_size;
    p.weights_bytes = weight_bytes_in(model, storage);
    p.trained_bytes = adapter ? 4 * trained : 0;
    p.gradient_bytes = 4 * trained;
    p.optimizer_bytes = 8 * trained;
    if (!adapter && cfg.optimizer == PG_OPTIMIZER_MUON) {
        // MuonScratch::reserve for the largest matrix Muon updates (GPT-2's c_fc, a Llama
        // block's gate/up or q), per thread: four full copies and two squares of the short side.
        int64_t most = 0;
        for (const TensorEntry& e : build_tensor_table(model)) {
            if (!e.is_linear_weight) continue;
            const int64_t small = std::min(e.shape[0], e.shape[1]);
            most = std::max(most, 4 * e.shape[0] * e.shape[1] + 2 * small * small);
        }
        p.optimizer_bytes += 4 * int64_t(nt) * most;
    }
    EngineOptions eo;
    eo.recompute = cfg.recompute_activations;
    p.activation_bytes = int64_t(Engine::planned_training_bytes(model, cfg.batch_size, cfg.seq_len, eo, nt, !adapter));
    p.activation_bytes += 2 * 4 * N;  // the sampled batch's inputs and targets
    if (adapter) {
        p.activation_bytes += 4 * 2 * N * adapter->rank;  // LoraHook's t and u
        // With dropout, its x and dx: as wide as the widest adapted input (GPT-2's 4C into
        // mlp.c_proj; a Llama block's mlp_hidden into down_proj, or n_head x head_dim into o_proj).
        const int64_t widest_in = std::max({int64_t(model.n_embd), int64_t(model.q_width()), int64_t(model.mlp_width())});
        if (adapter->dropout) p.activation_bytes += 4 * 2 * N * widest_in;
    }
    p.checkpoint_bytes = 8 * trained;  // TrainerState's adam_m and adam_v
    p.data_bytes = 4 * n_data_tokens;
    p.runtime_bytes = kRuntimeBytes + int64_t(nt) * kThreadStackBytes;
    p.peak_bytes = p.weights_bytes + p.trained_bytes + p.gradient_bytes + p.optimizer_bytes + p.activation_bytes +
                   p.checkpoint_bytes + p.data_bytes + p.runtime_bytes;
    return p;
}

TrainingMemoryPlan largest_batch_within(const ModelConfig& model, WeightStorage storage, const AdapterShape* adapter,
                                        TrainConfig cfg, int64_t n_data_tokens, int64_t budget_bytes) {
    require(budget_bytes > 0, PG_ERR_INVALID_ARGUMENT,
            "budget_bytes = " + std::to_string(budget_bytes) + " is not positive");
    const int T = cfg.seq_len > 0 ? cfg.seq_len : model.n_ctx;
    cfg.batch_size = 1;
    const TrainingMemoryPlan smallest = plan_training_memory(model, storage, adapter, cfg, n_data_tokens);
    if (smallest.peak_bytes > budget_bytes)
        throw Error(PG_ERR_OUT_OF_MEMORY, "no batch fits: the predicted peak at batch_size 1 is " +
                                              describe_memory_plan(smallest) + ", above the budget of " +
                                              mib_text(budget_bytes) + " (" + std::to_string(budget_bytes) + " bytes)");
    // The plan grows with the batch: bisect between 1 (fits) and the token limit's batch.
    int lo = 1, hi = int(std::min<int64_t>(kMaxBatchTokens / T, 65536));
    TrainingMemoryPlan best = smallest;
    while (lo < hi) {
        const int mid = lo + (hi - lo + 1) / 2;
        cfg.batch_size = mid;
        const TrainingMemoryPlan p = plan_training_memory(model, storage, adapter, cfg, n_data_tokens);
        if (p.peak_bytes <= budget_bytes) {
            lo = mid;
            best = p;
        } else {
            hi = mid - 1;
        }
    }
    return best;
}

}  // namespace pg
