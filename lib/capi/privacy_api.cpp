// C API: the data filter (lib/privacy). The handle keeps the configuration and the last
// apply's output, so the filtered text and spans are read with the usual sizing protocol
// without filtering twice.
#include <cstring>
#include <memory>
#include <string>

#include "capi/boundary.hpp"
#include "capi/text_out.hpp"
#include "privacy/data_filter.hpp"

struct pg_data_filter {
    pg::privacy::FilterOptions options;
    pg::privacy::FilterResult last;
    pg::HandleId id;
    pg::HandleMessage last_error;  // written by pg_data_filter_apply
};

namespace {

pg::ErrorTarget err(const pg_data_filter* f) { return pg::shared_errors(f); }
pg::ErrorTarget err(pg_data_filter* f) { return pg::owned_errors(f); }

pg_data_filter_config default_config() {
    auto c = pg::blank_c_struct<pg_data_filter_config>();
    c.kinds = PG_PII_ALL_BUILTIN;
    return c;
}

// What the caller's rule calls for each span: `sink` is the filter's span collector.
pg_status add_span(void* sink, size_t begin, size_t end) {
    const auto* add = static_cast<pg::privacy::SpanSink*>(sink);
    if (!add) return PG_ERR_INVALID_ARGUMENT;
    return (*add)(begin, end) ? PG_OK : PG_ERR_INVALID_ARGUMENT;
}

}  // namespace

extern "C" {

const char* pg_pii_kind_name(pg_pii_kind kind) { return pg::privacy::kind_name(kind); }

void pg_data_filter_config_default(pg_data_filter_config* config) {
    if (config) *config = default_config();
}

pg_status pg_data_filter_create(const pg_data_filter_config* config, pg_data_filter** out) {
    return pg::guarded(nullptr, [&] {
        const char* fn = "pg_data_filter_create";
        PG_REQUIRE_NOT_NULL(fn, out);
        *out = nullptr;
        pg_data_filter_config c = default_config();
        pg::read_options(config, &c, fn);
        pg::require_arg((c.kinds & ~PG_PII_ALL_BUILTIN) == 0, fn,
                        ("kinds has bits beyond PG_PII_ALL_BUILTIN (" + std::to_string(c.kinds) + ")").c_str());
        auto f = std::make_unique<pg_data_filter>();
        f->options.kinds = c.kinds;
        f->options.placeholder_kinds = c.placeholder_kinds;
        if (c.replacement) f->options.replacement = c.replacement;
        if (c.regions) f->options.regions = c.regions;
        if (c.custom_rule) {
            const pg_pii_rule_fn rule = c.custom_rule;
            void* user = c.custom_user;
            f->options.custom = [rule, user](std::string_view text, const pg::privacy::SpanSink& add) {
                pg::privacy::SpanSink sink = add;  // the C callback gets a mutable void*
                return rule(user, text.data(), text.size(), add_span, &sink) == 0;
            };
        }
        pg::privacy::check_options(f->options);
        *out = f.release();
    });
}

void pg_data_filter_free(pg_data_filter* filter) { delete filter; }

pg_status pg_data_filter_apply(pg_data_filter* filter, const char* text, size_t len,
                               pg_data_filter_report* report) {
    return pg::guarded(err(filter), [&] {
        const char* fn = "pg_data_filter_apply";
        PG_REQUIRE_NOT_NULL(fn, filter);
        pg::require_arg(text != nullptr || len == 0, fn, "text is NULL");
        filter->last = {};
        filter->last = pg::privacy::filter_text(std::string_view(text ? text : "", len), filter->options);
        if (report) {
            auto r = pg::blank_c_struct<pg_data_filter_report>();
            r.bytes_in = len;
            r.bytes_out = filter->last.text.size();
            r.n_spans = filter->last.spans.size();
            uint64_t* by_kind[PG_PII_KIND_COUNT] = {&r.n_email, &r.n_phone, &r.n_payment_card, &r.n_iban,
                                                    &r.n_ipv4,  &r.n_ipv6,  &r.n_custom};
            for (const auto& s : filter->last.spans) {
                r.bytes_removed += s.end - s.begin;
                ++*by_kind[s.kind];
            }
            pg::write_result(r, report, fn);
        }
    });
}

pg_status pg_data_filter_output(const pg_data_filter* filter, char* text, size_t capacity, size_t* len) {
    return pg::guarded(err(filter), [&] {
        const char* fn = "pg_data_filter_output";
        PG_REQUIRE_NOT_NULL(fn, filter);
        PG_REQUIRE_NOT_NULL(fn, len);
        pg::require_arg(text != nullptr || capacity == 0, fn, "text is NULL");
        pg::capi::copy_text_out(filter->last.text, text, capacity, len, fn);
    });
}

pg_status pg_data_filter_spans(const pg_data_filter* filter, pg_pii_span* spans, size_t capacity,
                               size_t* n_spans) {
    return pg::guarded(err(filter), [&] {
        const char* fn = "pg_data_filter_spans";
        PG_REQUIRE_NOT_NULL(fn, filter);
        PG_REQUIRE_NOT_NULL(fn, n_spans);
        pg::require_arg(spans != nullptr || capacity == 0, fn, "spans is NULL");
        const auto& v = filter->last.spans;
        *n_spans = v.size();
        if (capacity < v.size())
            throw pg::Error(PG_ERR_BUFFER_TOO_SMALL, std::string(fn) + ": capacity " + std::to_string(capacity) +
                                                         " is smaller than the " + std::to_string(v.size()) +
                                                         " spans needed");
        for (std::size_t i = 0; i < v.size(); ++i) spans[i] = {v[i].begin, v[i].end, int32_t(v[i].kind)};
    });
}

const char* pg_data_filter_last_error(const pg_data_filter* filter) {
    return filter ? pg::handle_last_error(filter->id, &filter->last_error) : "";
}

}  // extern "C"
