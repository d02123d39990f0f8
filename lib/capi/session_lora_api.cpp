// C API: adapters attached to a session (docs/lora.md). The adapter becomes the session's
// LinearHook, so every pass on that session computes base + adapter while the model stays as it
// is: one base serves several sessions, each with its own adapter or none.
#include <memory>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "capi/lora_handles.hpp"
#include "capi/train_boundary.hpp"
#include "lora/lora_hook.hpp"

extern "C" {

pg_status pg_session_attach_adapter(pg_session* session, const pg_lora_adapter* adapter) {
    return pg::guarded(pg::owned_errors(session), [&] {
        const char* fn = "pg_session_attach_adapter";
        PG_REQUIRE_NOT_NULL(fn, session);
        PG_REQUIRE_NOT_NULL(fn, adapter);
        pg::named(fn, [&] { pg::lora::check_adapter_matches_base(adapter->impl, session->model->impl); });
        // Forward only (no gradient buffer): a session never trains.
        auto hook = std::make_unique<pg::lora::LoraHook>(adapter->impl, nullptr);
        session->impl.set_linear_hook(hook.get());  // the window is recomputed with it
        session->hook = std::move(hook);
        session->adapter = adapter;
    });
}

pg_status pg_session_detach_adapter(pg_session* session) {
    return pg::guarded(pg::owned_errors(session), [&] {
        PG_REQUIRE_NOT_NULL("pg_session_detach_adapter", session);
        if (!session->hook) return;  // nothing attached: nothing changes, the cache stays
        session->impl.set_linear_hook(nullptr);
        session->hook.reset();
        session->adapter = nullptr;
    });
}

pg_status pg_session_adapter(const pg_session* session, const pg_lora_adapter** adapter) {
    return pg::guarded(pg::shared_errors(session), [&] {
        PG_REQUIRE_NOT_NULL("pg_session_adapter", session);
        PG_REQUIRE_NOT_NULL("pg_session_adapter", adapter);
        *adapter = session->adapter;
    });
}

}  // extern "C"
