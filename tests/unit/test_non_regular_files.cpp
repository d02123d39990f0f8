// Files that are not regular files (a FIFO, /dev/zero, a directory) are refused by every reader
// before anything is read: PG_ERR_IO naming what the path is, at once. Before, a FIFO blocked the
// open and /dev/zero was read until memory ran out; alarm() turns such a hang into a failure.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "phonegpt/phonegpt.h"
#include "test_support.hpp"

#if defined(__linux__)
#include <sys/stat.h>
#include <unistd.h>

namespace {

bool says(const char* message, const std::string& what) { return std::strstr(message, what.c_str()) != nullptr; }

}  // namespace

TEST_CASE("a FIFO, /dev/zero and a directory are refused by every file reader, at once", "[io][capi]") {
    const std::string folder = pg_test::tmp_dir() + "/non_regular";
    ::mkdir(folder.c_str(), 0700);
    const std::string fifo = folder + "/fifo";
    std::remove(fifo.c_str());
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    pg_model_config mc;
    REQUIRE(pg_model_config_preset("tiny", &mc) == PG_OK);
    pg_model* base = nullptr;
    REQUIRE(pg_model_create(&mc, 1, &base) == PG_OK);
    pg_load_options mapped;
    pg_load_options_default(&mapped);
    mapped.map_weights = 1;

    const std::vector<std::pair<const char*, std::function<pg_status(const char*)>>> readers = {
        {"pg_read_file", [](const char* p) {
             char* data = nullptr;
             size_t len = 0;
             const pg_status s = pg_read_file(p, &data, &len);
             pg_buffer_free(data);
             return s;
         }},
        {"pg_model_load", [](const char* p) {
             pg_model* m = nullptr;
             const pg_status s = pg_model_load(p, &m);
             pg_model_free(m);
             return s;
         }},
        {"pg_model_load_with (mapped)", [&](const char* p) {
             pg_model* m = nullptr;
             const pg_status s = pg_model_load_with(p, &mapped, &m);
             pg_model_free(m);
             return s;
         }},
        {"pg_trainer_resume", [](const char* p) {
             pg_model* m = nullptr;
             pg_trainer* t = nullptr;
             const pg_status s = pg_trainer_resume(p, &m, &t);
             pg_trainer_free(t);
             pg_model_free(m);
             return s;
         }},
        {"pg_model_import llm.c", [](const char* p) {
             pg_model* m = nullptr;
             const pg_status s = pg_model_import(PG_FORMAT_LLMC, p, &m);
             pg_model_free(m);
             return s;
         }},
        {"pg_model_import safetensors", [](const char* p) {
             pg_model* m = nullptr;
             const pg_status s = pg_model_import(PG_FORMAT_SAFETENSORS, p, &m);
             pg_model_free(m);
             return s;
         }},
        {"pg_lora_adapter_load", [&](const char* p) {
             pg_lora_adapter* a = nullptr;
             const pg_status s = pg_lora_adapter_load(p, base, &a);
             pg_lora_adapter_free(a);
             return s;
         }},
        {"pg_signing_key_load", [](const char* p) {
             pg_signing_key* k = nullptr;
             const pg_status s = pg_signing_key_load(p, &k);
             pg_signing_key_free(k);
             return s;
         }},
    };
    const std::vector<std::pair<std::string, std::string>> paths = {
        {fifo, "is a FIFO"}, {"/dev/zero", "is a character device"}, {folder, "is a directory"}};
    alarm(60);  // a blocked open or an endless read ends the run instead of hanging it
    for (const auto& [path, what] : paths) {
        for (const auto& [name, read] : readers) {
            INFO(name << " on " << path);
            CHECK(read(path.c_str()) == PG_ERR_IO);
            CHECK(says(pg_last_error(), what));
            CHECK(says(pg_last_error(), "not a regular file"));
        }
    }
    alarm(0);
    pg_model_free(base);
    std::remove(fifo.c_str());
    ::rmdir(folder.c_str());
}
#endif
