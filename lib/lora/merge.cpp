#include "lora/merge.hpp"

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "model/low_rank.hpp"
#include "model/params.hpp"

namespace pg::lora {

namespace {

// The stacked base tensor of each linear kind.
ParamKind weight_of(LinearKind kind) {
    switch (kind) {
        case LinearKind::attn_qkv: return kQkvw;
        case LinearKind::attn_proj: return kAttprojw;
        case LinearKind::mlp_fc: return kFcw;
        case LinearKind::mlp_proj: return kFcprojw;
    }
    return kQkvw;
}

// W += sign * scale * B A for every adapted linear.
void add_update(Model& model, const Adapter& adapter, float sign, int n_threads) {
    ThreadPool pool(n_threads);
    for (const AdaptedLinear& m : adapter.linears()) {
        float* W = model.params() + base_weight_offset(model, m);
        add_low_rank(W, low_rank_factors(adapter, m), sign, pool);
    }
}

}  // namespace

int64_t base_weight_offset(const Model& model, const AdaptedLinear& m) {
    // The layer's stacked [rows, in] matrix, then the target's rows of it.
    const int64_t rows = linear_rows(m.kind, model.config());
    return model.layout().offset[weight_of(m.kind)] + (m.layer * rows + m.row_offset) * m.in;
}

void merge_into_copy(const Model& base, const Adapter& adapter, Model& out, int n_threads) {
    check_adapter_matches_base(adapter, base);
    require(out.num_params() == base.num_params(), PG_ERR_INTERNAL, "merge: the copy has another geometry");
    base.read_fp32(out.params());  // a 16-bit or quantized base: the values it holds, in fp32
    out.set_tokenizer(base.tokenizer() ? base.tokenizer()->clone() : nullptr);
    out.set_provenance(base.provenance());  // the base's training; the adapter's is its own record
    add_update(out, adapter, 1.0f, n_threads);
}

void merge_in_place(Model& model, const Adapter& adapter, int n_threads) {
    check_adapter_matches_base(adapter, model);
    add_update(model, adapter, 1.0f, n_threads);
}

void unmerge_in_place(Model& model, const Adapter& adapter, int n_threads) {
    check_base_identity(adapter.base(), identify_base(model), false);
    add_update(model, adapter, -1.0f, n_threads);
}

}  // namespace pg::lora
