// A forward pass, an evaluation or a generation on a session made for the one call, over the
// public C API only: the C API's one entry for each job is the session's, and the bindings'
// model-level methods (Python Model.forward / evaluate / evaluate_sampled / generate and
// Adapter.evaluate, Kotlin's Model natives) and the tests that check the work itself run on
// such a session. Header-only C++, shared by bindings/python, bindings/kotlin/jni and tests.
#pragma once

#include <phonegpt/phonegpt.h>

#include <cstdint>

namespace pg_bindings {

// Creates a session over `model` with `n_threads`, runs body(session), frees it; the first
// failure's status is returned and its message is the calling thread's pg_last_error().
template <class Body>
pg_status on_call_session(const pg_model* model, int32_t n_threads, Body&& body) {
    pg_session_config sc;
    pg_session_config_default(&sc);
    sc.n_threads = n_threads;
    pg_session* session = nullptr;
    pg_status s = pg_session_create(model, &sc, &session);
    if (s == PG_OK) s = body(session);
    pg_session_free(session);
    return s;
}

}  // namespace pg_bindings
