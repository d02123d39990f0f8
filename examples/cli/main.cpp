// phonegpt: the command-line tool. Trains a GPT on a text file (characters or BPE), evaluates a
// checkpoint (or a folder of them) on the whole validation split, samples text from it, and
// exports/imports llm.c and safetensors files (docs/cli.md is its manual).
//
//   phonegpt train  [--preset phonegpt|tiny|phonegpt-shakespeare] [--data PATH] [--steps N] ... [--out DIR] [--json]
//   phonegpt eval   --checkpoint PATH | --checkpoints DIR [--out scores.csv] [--data PATH] [--json]
//   phonegpt sample --checkpoint PATH [--prompt TEXT] [--tokens N] ... [--json]
//   phonegpt export --checkpoint PATH --format llmc|safetensors --out PATH [--json]
//   phonegpt import --format llmc|safetensors --in PATH --out PATH [--tokenizer-from PATH] [--json]
//   phonegpt tokenizer info|encode|decode|train ... [--json]
//   phonegpt lora train|merge|unmerge|info|export-peft|import-peft ... [--json]
//
// Exit codes: 0 success, 1 a runtime failure (a library call failed: the message names it; or
// the run diverged), 2 a usage error (unknown option, bad value, missing file argument).
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "core/error.hpp"

namespace {

const char* const kUsage =
    "usage: phonegpt <command> [options]\n"
    "\n"
    "commands:\n"
    "  train    train a GPT on a text file: its characters, or --tokenizer FILE's tokens (default: Tiny\n"
    "           Shakespeare)\n"
    "  eval     score a checkpoint on the whole validation split\n"
    "  sample   generate text from a checkpoint\n"
    "  export   write a checkpoint's weights as an llm.c or safetensors file\n"
    "  import   read an llm.c or safetensors file into a native checkpoint\n"
    "  tokenizer info|encode|decode|train   a tokenizer file (checkpoint, .tiktoken, GPT-2,\n"
    "           tokenizer.json), or train a byte-level BPE on text files\n"
    "  lora train|merge|unmerge|info|export-peft|import-peft   LoRA adapters over a frozen base\n"
    "\n"
    "phonegpt <command> --help shows a command's options; every command takes --json.\n"
    "Exit codes: 0 success, 1 runtime failure (or a diverged run), 2 usage error.\n";

// A failure: the message on stderr and, in --json mode, one JSON object on stdout.
int fail(const std::string& command, bool json, int code, const std::string& message, const std::string& status,
         const cli::Json* diverged = nullptr) {
    if (code == 2)
        std::fprintf(stderr, "phonegpt %s: %s (see phonegpt %s --help)\n", command.c_str(), message.c_str(),
                     command.c_str());
    else
        std::fprintf(stderr, "phonegpt %s: error: %s (%s)\n", command.c_str(), message.c_str(), status.c_str());
    if (json) {
        cli::Json j;
        j.boolean("ok", false).str("command", command).str("error", message).str("status", status);
        if (diverged) j.object("diverged", *diverged);
        cli::print_result(j);
    }
    return code;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "%s", kUsage);
        return 2;
    }
    const std::string command = argv[1];
    if (command == "--help" || command == "-h" || command == "help") {
        std::printf("%s", kUsage);
        return 0;
    }
    if (command == "--version") {
        std::printf("phonegpt %s (kernels: %s)\n", pg_version_string(), pg_simd_arch());
        return 0;
    }
    const std::map<std::string, int (*)(int, char**)> commands = {
        {"train", cli::cmd_train},   {"eval", cli::cmd_eval},     {"sample", cli::cmd_sample},
        {"export", cli::cmd_export}, {"import", cli::cmd_import}, {"tokenizer", cli::cmd_tokenizer},
        {"lora", cli::cmd_lora}};
    auto it = commands.find(command);
    if (it == commands.end()) {
        std::vector<std::string> names;
        for (const auto& c : commands) names.push_back(c.first);
        std::string hint = cli::did_you_mean(command, names, "");
        std::fprintf(stderr, "phonegpt: unknown command \"%s\"%s\n\n%s", command.c_str(), hint.c_str(), kUsage);
        return 2;
    }
    bool json = false;
    for (int i = 2; i < argc; ++i) json |= std::strcmp(argv[i], "--json") == 0;
    try {
        return it->second(argc - 2, argv + 2);
    } catch (const cli::UsageError& e) {
        return fail(command, json, 2, e.message, "usage");
    } catch (const cli::RuntimeError& e) {
        return fail(command, json, 1, e.message, e.status, e.diverged ? &*e.diverged : nullptr);
    } catch (const pg::Error& e) {  // from the library's own helpers (lib/io)
        return fail(command, json, 1, e.what(), pg_status_name(e.status()));
    } catch (const std::exception& e) {
        return fail(command, json, 1, e.what(), "internal");
    }
}
