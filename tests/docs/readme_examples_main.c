/* Runs the C blocks of README.md, which check_readme_c.sh pastes above this file: train() makes
 * a PhoneGPT model of a small text (a few steps), fine_tune() trains an adapter over it, and the
 * adapter file must then load against that base with its training record. Usage: PROGRAM DIR */
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    static const char line[] = "First Citizen:\nBefore we proceed any further, hear me speak.\n\n";
    enum { kRepeats = 120, kSteps = 2 };
    size_t len = 0;
    char* text = malloc(kRepeats * (sizeof line - 1) + 1);
    int32_t* tokens = malloc(kRepeats * (sizeof line - 1) * sizeof *tokens);
    char base_path[4096], adapter_path[4096];
    if (!text || !tokens) return 1;
    for (int i = 0; i < kRepeats; ++i, len += sizeof line - 1) memcpy(text + len, line, sizeof line - 1);
    text[len] = '\0';
    snprintf(base_path, sizeof base_path, "%s/readme_base.bin", argv[1]);
    snprintf(adapter_path, sizeof adapter_path, "%s/readme_adapter.safetensors", argv[1]);

    if (train(text, len, tokens, kSteps, base_path) != 0) { fprintf(stderr, "train failed: %s\n", pg_last_error()); return 1; }
    /* the text is ASCII: one id per byte, so `tokens` holds len ids */
    if (fine_tune(base_path, tokens, len, kSteps, adapter_path) != 0) {
        fprintf(stderr, "fine_tune failed: %s\n", pg_last_error());
        return 1;
    }
    pg_model* base = NULL;
    pg_lora_adapter* adapter = NULL;
    int64_t steps = 0;
    if (pg_model_load(base_path, &base) != PG_OK || pg_lora_adapter_load(adapter_path, base, &adapter) != PG_OK ||
        pg_lora_adapter_training_record(adapter, &steps, NULL, NULL, NULL) != PG_OK || steps != kSteps) {
        fprintf(stderr, "the adapter does not load against its base with %d steps: %s\n", kSteps, pg_last_error());
        return 1;
    }
    pg_lora_adapter_free(adapter);
    pg_model_free(base);
    free(tokens);
    free(text);
    printf("README C examples: trained a base and an adapter over it (%d steps each)\n", kSteps);
    return 0;
}
