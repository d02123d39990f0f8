/* The C ABI test: plain C99, only the public header, linked to the shared library. It proves
 * the API is usable from C and prints "N passed, N failed". */
#include <phonegpt/phonegpt.h>

#include <stdio.h>
#include <string.h>

static int passed = 0, failed = 0;
#define CHECK(cond)                                                              \
    do {                                                                         \
        if (cond) {                                                              \
            ++passed;                                                            \
        } else {                                                                 \
            ++failed;                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

static void test_versions(void) {
    CHECK(pg_version_number() == PG_VERSION_NUMBER);
    CHECK(strcmp(pg_version_string(), "0.1.0") == 0);
    CHECK(pg_simd_arch() != NULL && pg_simd_arch()[0] != '\0');
    CHECK(strcmp(pg_status_name(PG_OK), "PG_OK") == 0);
    CHECK(strcmp(pg_status_name(PG_ERR_CHECKSUM), "PG_ERR_CHECKSUM") == 0);
    CHECK(strcmp(pg_status_name((pg_status)999), "PG_ERR_UNKNOWN") == 0);
}

static void test_model(void) {
    pg_model_config c;
    pg_model* m = NULL;
    int64_t n = 0;
    pg_model_config_default(&c);
    CHECK(c.struct_size == sizeof c);
    CHECK(pg_model_create(&c, 7, &m) == PG_OK);
    CHECK(pg_model_num_params(m, &n) == PG_OK && n == 1214976);
    CHECK(pg_model_create(NULL, 7, &m) == PG_ERR_INVALID_ARGUMENT);
    CHECK(m == NULL);
    CHECK(strlen(pg_last_error()) > 0);
    pg_model_free(m);
    pg_model_free(NULL);
}

int main(void) {
    test_versions();
    test_model();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
